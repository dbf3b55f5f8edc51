// DeepSpeed's ZeRO-2 (post-PR-5099) and ZeRO-3 model-state estimators, on values worked out by
// hand from the formulas in stage_1_and_2.py and stage3.py.
#include <gtest/gtest.h>

#include "common/estimate/deepspeed_estimators.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {
namespace {

TEST(DeepSpeedZero2, OffloadUsesTotalGpuCount) {
  // gpu = 2P; cpu = P·max(4N, 16)·1.5 with N = nodes × gpus per node.
  auto e = deepspeed_zero2_model_states_mem_needs(1'000'000'000, 1, 1, true);
  EXPECT_EQ(e.gpu_bytes, 2'000'000'000);
  EXPECT_EQ(e.cpu_bytes, 24'000'000'000);  // 1e9 · 16 · 1.5
  e = deepspeed_zero2_model_states_mem_needs(1'000'000'000, 4, 2, true);
  EXPECT_EQ(e.cpu_bytes, 48'000'000'000);  // 1e9 · max(32, 16) · 1.5
}

TEST(DeepSpeedZero2, NoOffloadIsThePostPr5099Formula) {
  // gpu = 2P + int(18P/N): 2e9 + 1.125e9 for N = 16; the pre-PR formula 4P + int(16P/N) would
  // give 5e9. cpu = P · 4 · gpus_per_node · 1.5 = 48e9.
  const auto e = deepspeed_zero2_model_states_mem_needs(1'000'000'000, 8, 2, false);
  EXPECT_EQ(e.gpu_bytes, 3'125'000'000);
  EXPECT_NE(e.gpu_bytes, 5'000'000'000);
  EXPECT_EQ(e.cpu_bytes, 48'000'000'000);
  // Python's int() truncates: 2 + int(18/7 = 2.57) = 4; cpu = 1 · 4 · 7 · 1.5 = 42.
  const auto tiny = deepspeed_zero2_model_states_mem_needs(1, 7, 1, false);
  EXPECT_EQ(tiny.gpu_bytes, 4);
  EXPECT_EQ(tiny.cpu_bytes, 42);
  // A factor of 1 removes the buffer: cpu = 5 · 4 · 3 = 60; int(18·5/3) = 30.
  const auto unbuffered = deepspeed_zero2_model_states_mem_needs(5, 3, 1, false, 1.0);
  EXPECT_EQ(unbuffered.cpu_bytes, 60);
  EXPECT_EQ(unbuffered.gpu_bytes, 10 + 30);
}

TEST(DeepSpeedZero3, AllThreeOffloadRowsBothZeroInitColumns) {
  const int64_t P = 1'000'000'000, largest = 100'000'000;  // 8 GPUs per node, 2 nodes: N = 16
  // offload params + optimizer: gpu = 4·largest; cpu = P·18·(1/2)·1.5 or P·max(32, 9)·1.5.
  auto e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, true, true, true);
  EXPECT_EQ(e.gpu_bytes, 400'000'000);
  EXPECT_EQ(e.cpu_bytes, 13'500'000'000);
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, true, true, false);
  EXPECT_EQ(e.cpu_bytes, 48'000'000'000);
  // offload optimizer only: gpu = 4e8 + int(2e9/16); cpu = P·16·(1/2)·1.5 or P·max(32, 8)·1.5.
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, true, false, true);
  EXPECT_EQ(e.gpu_bytes, 525'000'000);
  EXPECT_EQ(e.cpu_bytes, 12'000'000'000);
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, true, false, false);
  EXPECT_EQ(e.cpu_bytes, 48'000'000'000);
  // no offload: gpu = 4e8 + int(18e9/16); cpu = largest·4·8·1.5 or P·4·8·1.5.
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, false, false, true);
  EXPECT_EQ(e.gpu_bytes, 1'525'000'000);
  EXPECT_EQ(e.cpu_bytes, 4'800'000'000);
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, false, false, false);
  EXPECT_EQ(e.cpu_bytes, 48'000'000'000);
  // offload_params without offload of the optimizer is ignored, as in DeepSpeed.
  e = deepspeed_zero3_model_states_mem_needs(P, largest, 8, 2, false, true, true);
  EXPECT_EQ(e.gpu_bytes, 1'525'000'000);
}

TEST(DeepSpeed, BadInputsAreUsageErrors) {
  EXPECT_THROW((void)deepspeed_zero2_model_states_mem_needs(0), UsageError);
  EXPECT_THROW((void)deepspeed_zero2_model_states_mem_needs(10, 0), UsageError);
  EXPECT_THROW((void)deepspeed_zero2_model_states_mem_needs(10, 1, 1, true, -1.0), UsageError);
  EXPECT_THROW((void)deepspeed_zero3_model_states_mem_needs(10, 0), UsageError);
  EXPECT_THROW((void)deepspeed_zero2_model_states_mem_needs(INT64_MAX / 2, 1, 1, true), UsageError);
}

// DeepSpeed's largest layer is the largest module's own parameters, worked out here from the
// shapes: GPT-2's and Llama's embedding (V·C) for real vocabularies, a block's MLP for a toy one.
TEST(DeepSpeed, LargestLayerIsTheLargestModule) {
  EXPECT_EQ(deepspeed_largest_layer_params(model_config_by_name("gpt2-124m")), 50257 * 768);
  EXPECT_EQ(deepspeed_largest_layer_params(model_config_by_name("llama2-7b")), 32000 * 4096);
  // gpt2-mini: V=256, C=64, so wte has 16,384 and the MLP's fc 64·256 + 256 = 16,640 (its bias
  // counts with its weight: one module).
  EXPECT_EQ(deepspeed_largest_layer_params(model_config_by_name("gpt2-mini")), 64 * 256 + 256);
  // A wide GPT-2 with a tiny vocabulary: the fused qkv (3C·C + 3C) is smaller than fc (4C·C + 4C).
  ModelConfig wide = model_config_by_name("gpt2-mini");
  wide.hidden = 512;
  wide.heads = 8;
  wide.kv_heads = 8;
  wide.ffn_hidden = 4 * 512;
  EXPECT_EQ(deepspeed_largest_layer_params(wide), 512 * 2048 + 2048);
}

}  // namespace
}  // namespace vramlab::estimate
