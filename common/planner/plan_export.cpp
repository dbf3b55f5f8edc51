// A chosen plan as DeepSpeed and PyTorch spell it (see plan_export.h).
#include "common/planner/plan_export.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace vramlab::planner {

namespace {

using nlohmann::json;
using plan::Optimizer;
using plan::ZeroStage;
using Kind = plan::RecomputeSpec::Kind;

// The shortest text that reads back as the float the plan holds ("0.001", not the double
// 0.0010000000474974513 it widens to).
std::string number(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  for (int digits = 1; digits <= 9; ++digits) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", digits, static_cast<double>(v));
    if (std::strtof(shorter, nullptr) == v) return shorter;
  }
  return text;
}

}  // namespace

json deepspeed_config(const Candidate& c) {
  const plan::Plan& p = c.plan;
  const int64_t K = p.batch.grad_accum;
  json config = {{"train_batch_size", p.parallel.data_parallel * K * c.micro_batch},
                 {"train_micro_batch_size_per_gpu", c.micro_batch},
                 {"gradient_accumulation_steps", K}};
  if (p.amp.precision == plan::Precision::mixed_bf16) config["bf16"] = {{"enabled", true}};
  if (p.amp.precision == plan::Precision::mixed_fp16)
    config["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};
  json zero = {{"stage", static_cast<int64_t>(p.parallel.zero)}};
  const auto offload_block = [&](plan::OffloadDevice device) {
    json block = {{"device", plan::offload_device_name(device)},
                  {"pin_memory", p.offload.pin_memory}};
    if (device == plan::OffloadDevice::nvme) block["nvme_path"] = "/local_nvme";
    return block;
  };
  if (p.offload.optimizer) zero["offload_optimizer"] = offload_block(p.offload.optimizer_device);
  if (p.offload.parameters) zero["offload_param"] = offload_block(p.offload.param_device);
  config["zero_optimization"] = zero;
  if (p.recompute.kind != Kind::none)
    config["activation_checkpointing"] = {{"partition_activations", p.parallel.tensor_parallel > 1},
                                          {"cpu_checkpointing", p.activations.offload}};
  if (p.optimizer.name == Optimizer::adamw)
    config["optimizer"] = {
        {"type", "AdamW"},
        {"params",
         {{"lr", std::strtod(number(p.optimizer.learning_rate).c_str(), nullptr)},
          {"weight_decay", p.optimizer.weight_decay}}}};
  if (p.optimizer.max_grad_norm > 0.0f) config["gradient_clipping"] = p.optimizer.max_grad_norm;
  return config;
}

std::vector<std::string> pytorch_lines(const Candidate& c) {
  const plan::Plan& p = c.plan;
  std::vector<std::string> lines;
  lines.push_back(
      "# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  (the planner's runs use it: reserved "
      "memory follows allocated memory)");
  if (p.parallel.tensor_parallel > 1)
    lines.push_back(
        "parallelize_module(block, tp_mesh, {qkv/up: ColwiseParallel(), out/down: "
        "RowwiseParallel()})  # torch.distributed.tensor.parallel, t = " +
        std::to_string(p.parallel.tensor_parallel) + " inside a node");
  if (p.attention == plan::AttentionKind::flash)
    lines.push_back("y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # flash backend");
  switch (p.recompute.kind) {
    case Kind::none:
      break;
    case Kind::full:
      lines.push_back(
          "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, "
          "Block))  # every block");
      break;
    case Kind::every:
      lines.push_back(
          "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, "
          "Block) and m.index % " +
          std::to_string(p.recompute.every) +
          " == 0)  # a span from each checkpointed block to the next");
      break;
    case Kind::sqrt:
      lines.push_back(
          "torch.utils.checkpoint.checkpoint_sequential(blocks, segments=ceil(sqrt(L)), "
          "input=x, use_reentrant=False)");
      break;
    case Kind::selective:
      lines.push_back(
          "checkpoint(attention_core, q, k, v, use_reentrant=False)  # only the "
          "(B, H, T, T) scores are recomputed");
      break;
    case Kind::budget:
      lines.push_back("# recompute " + plan::to_string(p.recompute) +
                      ": checkpoint the blocks vramlab train --recompute prints");
      break;
  }
  if (p.activations.offload)
    lines.push_back("with torch.autograd.graph.save_on_cpu(pin_memory=True): loss = model(x)");
  if (p.activations.loss_chunks > 1)
    lines.push_back("# the loss in " + std::to_string(p.activations.loss_chunks) +
                    " chunks: torchtune's CEWithChunkedOutputLoss(num_output_chunks=" +
                    std::to_string(p.activations.loss_chunks) +
                    ") or Liger-Kernel's LigerFusedLinearCrossEntropyLoss");
  if (p.amp.precision == plan::Precision::mixed_bf16 ||
      p.amp.precision == plan::Precision::mixed_fp16) {
    const std::string dtype =
        p.amp.precision == plan::Precision::mixed_bf16 ? "torch.bfloat16" : "torch.float16";
    if (p.parallel.zero >= ZeroStage::gradients)
      lines.push_back("mixed_precision=MixedPrecision(param_dtype=" + dtype +
                      ", reduce_dtype=" + dtype + ")  # FSDP's argument");
    else
      lines.push_back("with torch.autocast(\"cuda\", dtype=" + dtype + "): loss = model(x)");
    if (p.amp.precision == plan::Precision::mixed_fp16)
      lines.push_back("scaler = torch.amp.GradScaler(\"cuda\")");
  }
  switch (p.parallel.zero) {
    case ZeroStage::ddp:
      if (p.parallel.data_parallel > 1) lines.push_back("model = DistributedDataParallel(model)");
      break;
    case ZeroStage::optimizer_states:
      lines.push_back(
          "optimizer = ZeroRedundancyOptimizer(model.parameters(), "
          "optimizer_class=torch.optim.AdamW)  # FSDP has no ZeRO-1");
      break;
    case ZeroStage::gradients:
      lines.push_back("model = FSDP(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)");
      break;
    case ZeroStage::parameters:
      lines.push_back(
          std::string("model = FSDP(model, sharding_strategy=ShardingStrategy."
                      "FULL_SHARD") +
          (p.offload.parameters ? ", cpu_offload=CPUOffload(offload_params=True))" : ")"));
      break;
  }
  if (p.offload.optimizer && !p.offload.parameters)
    lines.push_back(
        "# optimizer offload alone: FSDP's CPUOffload moves the parameters too; "
        "torchao's CPUOffloadOptimizer (one GPU) or DeepSpeed's offload_optimizer");
  if (p.offload.optimizer_device == plan::OffloadDevice::nvme ||
      p.offload.param_device == plan::OffloadDevice::nvme)
    lines.push_back(
        "# NVMe offload: DeepSpeed only (offload_optimizer/offload_param device "
        "\"nvme\"); PyTorch has none");
  const std::string lr = number(p.optimizer.learning_rate);
  switch (p.optimizer.name) {
    case Optimizer::adamw:
      lines.push_back("optimizer = torch.optim.AdamW(model.parameters(), lr=" + lr +
                      ", fused=True)");
      break;
    case Optimizer::adamw_8bit:
      lines.push_back("optimizer = bitsandbytes.optim.AdamW8bit(model.parameters(), lr=" + lr +
                      ")");
      break;
    case Optimizer::lion:
      lines.push_back("optimizer = bitsandbytes.optim.Lion(model.parameters(), lr=" + lr + ")");
      break;
    case Optimizer::adafactor:
      lines.push_back("optimizer = torch.optim.Adafactor(model.parameters(), lr=" + lr + ")");
      break;
    case Optimizer::adam_mini:
      lines.push_back("optimizer = adam_mini.Adam_mini(model.named_parameters(), lr=" + lr +
                      ")  # pip install adam-mini");
      break;
    case Optimizer::sgd:
    case Optimizer::sgd_momentum:
      lines.push_back(std::string("optimizer = torch.optim.SGD(model.parameters(), lr=") + lr +
                      (p.optimizer.name == Optimizer::sgd_momentum ? ", momentum=0.9)" : ")"));
      break;
  }
  if (p.batch.grad_accum > 1)
    lines.push_back("# " + std::to_string(p.batch.grad_accum) + " micro-batches of " +
                    std::to_string(c.micro_batch) +
                    " per optimizer.step(): (loss / K).backward() each, no_sync() on all but the "
                    "last");
  return lines;
}

}  // namespace vramlab::planner
