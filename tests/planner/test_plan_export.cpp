// A chosen plan as DeepSpeed's config and PyTorch's lines: each technique in the key or call the
// framework spells it with, and nothing a plan does not use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/planner/plan_export.h"

namespace vramlab::planner {
namespace {

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

TEST(PlanExportDeepSpeed, BatchPrecisionZeroAndOffload) {
  Candidate c;
  c.micro_batch = 2;
  c.plan.amp.precision = plan::Precision::mixed_fp16;
  c.plan.batch.grad_accum = 4;
  c.plan.parallel.data_parallel = 8;
  c.plan.parallel.zero = plan::ZeroStage::parameters;
  c.plan.offload.optimizer = c.plan.offload.parameters = true;
  c.plan.offload.optimizer_device = c.plan.offload.param_device = plan::OffloadDevice::nvme;
  c.plan.optimizer.learning_rate = 3e-4f;
  const nlohmann::json j = deepspeed_config(c);
  EXPECT_EQ(j["train_batch_size"], 64);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(j["gradient_accumulation_steps"], 4);
  EXPECT_EQ(j["fp16"]["enabled"], true);
  EXPECT_EQ(j["fp16"]["loss_scale"], 0);  // dynamic
  EXPECT_FALSE(j.contains("bf16"));
  EXPECT_EQ(j["zero_optimization"]["stage"], 3);
  EXPECT_EQ(j["zero_optimization"]["offload_optimizer"]["device"], "nvme");
  EXPECT_EQ(j["zero_optimization"]["offload_param"]["device"], "nvme");
  EXPECT_TRUE(j["zero_optimization"]["offload_param"].contains("nvme_path"));
  EXPECT_EQ(j["optimizer"]["type"], "AdamW");
  EXPECT_EQ(j["optimizer"]["params"]["lr"].get<double>(), 0.0003);  // as typed, not widened
  EXPECT_FALSE(j.contains("activation_checkpointing"));
  EXPECT_FALSE(j.contains("gradient_clipping"));
}

TEST(PlanExportDeepSpeed, NothingAPlanDoesNotUse) {
  Candidate c;
  c.plan.amp.precision = plan::Precision::fp32;
  c.plan.optimizer.name = plan::Optimizer::adamw_8bit;  // not DeepSpeed's: a client optimizer
  c.plan.recompute.kind = plan::RecomputeSpec::Kind::full;
  c.plan.activations.offload = true;
  c.plan.optimizer.max_grad_norm = 1.0f;
  const nlohmann::json j = deepspeed_config(c);
  EXPECT_FALSE(j.contains("fp16"));
  EXPECT_FALSE(j.contains("bf16"));
  EXPECT_FALSE(j.contains("optimizer"));
  EXPECT_EQ(j["zero_optimization"]["stage"], 0);
  EXPECT_FALSE(j["zero_optimization"].contains("offload_optimizer"));
  EXPECT_EQ(j["activation_checkpointing"]["cpu_checkpointing"], true);
  EXPECT_EQ(j["gradient_clipping"], 1.0);
}

TEST(PlanExportPyTorch, OneLinePerTechnique) {
  Candidate c;
  c.plan.parallel.zero = plan::ZeroStage::optimizer_states;
  c.plan.parallel.data_parallel = 4;
  EXPECT_TRUE(has_line(pytorch_lines(c), "ZeroRedundancyOptimizer"));
  EXPECT_FALSE(has_line(pytorch_lines(c), "FSDP("));
  EXPECT_FALSE(has_line(pytorch_lines(c), "autocast"));  // fp32
  c.plan.parallel.zero = plan::ZeroStage::gradients;
  c.plan.amp.precision = plan::Precision::mixed_bf16;
  EXPECT_TRUE(has_line(pytorch_lines(c), "ShardingStrategy.SHARD_GRAD_OP"));
  EXPECT_TRUE(has_line(pytorch_lines(c), "MixedPrecision(param_dtype=torch.bfloat16"));
  c.plan.parallel.zero = plan::ZeroStage::parameters;
  c.plan.offload.optimizer = c.plan.offload.parameters = true;
  EXPECT_TRUE(
      has_line(pytorch_lines(c), "FULL_SHARD, cpu_offload=CPUOffload(offload_params=True)"));
  c.plan.parallel.zero = plan::ZeroStage::ddp;
  c.plan.offload = {};
  c.plan.amp.precision = plan::Precision::mixed_fp16;
  c.plan.attention = plan::AttentionKind::flash;
  c.plan.activations.offload = true;
  c.plan.batch.grad_accum = 8;
  c.plan.optimizer.learning_rate = 1e-3f;
  const std::vector<std::string> lines = pytorch_lines(c);
  EXPECT_TRUE(has_line(lines, "torch.autocast(\"cuda\", dtype=torch.float16)"));
  EXPECT_TRUE(has_line(lines, "GradScaler"));
  EXPECT_TRUE(has_line(lines, "DistributedDataParallel"));
  EXPECT_TRUE(has_line(lines, "scaled_dot_product_attention(q, k, v, is_causal=True)"));
  EXPECT_TRUE(has_line(lines, "save_on_cpu(pin_memory=True)"));
  EXPECT_TRUE(has_line(lines, "8 micro-batches"));
  EXPECT_TRUE(has_line(lines, "torch.optim.AdamW(model.parameters(), lr=0.001, fused=True)"));
}

}  // namespace
}  // namespace vramlab::planner
