// A kernel's work and the meta device's roofline clock: the matmul FLOPs the kernels count from
// their sizes add up, over a training step, to the estimator's forward FLOPs (forward_flops.h,
// derived from the model's shape) times the backward's multiple; on a meta preset a kernel takes
// the larger of its two roofs on the clock, computed here from the datasheet figures.
//   build/tests/bin/test_nn --gtest_filter='KernelWork.*:Roofline.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/estimate/forward_flops.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/roofline.h"
#include "common/nn/runtime.h"
#include "common/train/trainer.h"

namespace vramlab::nn {
namespace {

// Sums the work of every kernel it hears, the FLOPs of forward ops apart from the rest.
struct WorkCounter : KernelObserver {
  double forward_flops = 0.0;
  double other_flops = 0.0;
  double bytes = 0.0;
  void kernel_started(std::string_view) noexcept override {}
  void kernel_finished(std::string_view op, const KernelWork& work) noexcept override {
    (op.ends_with("_forward") ? forward_flops : other_flops) += work.flops;
    bytes += work.bytes;
  }
};

struct StepFlops {
  double forward = 0.0;
  double other = 0.0;
};

StepFlops step_flops(const ModelConfig& model, int64_t B, int64_t T, plan::AttentionKind attention,
                     const std::string& recompute = "none") {
  Runtime runtime(memory::parse_device("meta"));
  train::TrainOptions options;
  options.model = model;
  options.batch = B;
  options.seq = T;
  options.plan.attention = attention;
  options.plan.recompute = plan::parse_recompute_spec(recompute);
  train::Trainer trainer(runtime, options);
  WorkCounter counter;
  runtime.kernels().set_observer(&counter);
  trainer.step();
  runtime.kernels().set_observer(nullptr);
  return {counter.forward_flops, counter.other_flops};
}

std::vector<ModelConfig> models() {
  return {gpt2_config("gpt2-odd", 3, 48, 4, 97, 64),
          llama_config("llama-gqa", 2, 64, 8, 2, 176, 131, 64),
          gpt2_config("gpt2-wide", 1, 1600, 25, 50257, 1024)};
}

TEST(KernelWork, AStepsForwardMatmulsAreTheEstimatorsForwardFlopsAndItsBackwardTwice) {
  for (const ModelConfig& model : models()) {
    for (const auto& [B, T] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {2, 64}}) {
      SCOPED_TRACE(model.name + " B=" + std::to_string(B) + " T=" + std::to_string(T));
      const double forward = estimate::model_forward_flops(model, B, T);
      const StepFlops naive = step_flops(model, B, T, plan::AttentionKind::naive);
      EXPECT_DOUBLE_EQ(naive.forward, forward);
      EXPECT_DOUBLE_EQ(naive.other, 2.0 * forward);
      // Flash attention's backward computes each layer's scores QKᵀ once more.
      const StepFlops flash = step_flops(model, B, T, plan::AttentionKind::flash);
      EXPECT_DOUBLE_EQ(flash.forward, forward);
      EXPECT_DOUBLE_EQ(flash.other,
                       2.0 * forward + static_cast<double>(model.layers) *
                                           estimate::attention_scores_flops(model, B, T));
    }
  }
}

TEST(KernelWork, FullRecomputeRunsEveryBlocksForwardTwice) {
  for (const ModelConfig& model : models()) {
    SCOPED_TRACE(model.name);
    const int64_t B = 2, T = 33;
    const StepFlops full = step_flops(model, B, T, plan::AttentionKind::naive, "full");
    EXPECT_DOUBLE_EQ(full.forward, estimate::model_forward_flops(model, B, T) +
                                       static_cast<double>(model.layers) *
                                           estimate::block_forward_flops(model, B, T));
  }
}

// One kernel on a fresh meta runtime: its time on the compute stream.
double compute_seconds(Runtime& runtime) {
  return runtime.clock().busy_seconds(stream::Clock::compute_stream());
}

TEST(Roofline, AMetaKernelTakesTheLargerOfItsTwoRoofs) {
  for (const char* preset : {"t4-16g", "a100-40g", "h100-80g"}) {
    SCOPED_TRACE(preset);
    const memory::DeviceSpec spec = memory::parse_device(std::string("meta:") + preset).spec;
    for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)));
      const double element = static_cast<double>(dtype_size_bytes(dtype));
      const double peak = dtype == DType::f32    ? spec.peak_flops.fp32
                          : dtype == DType::bf16 ? spec.peak_flops.bf16_tensor
                                                 : spec.peak_flops.fp16_tensor;
      const double bandwidth = spec.memory_bandwidth_bytes_per_s;
      // A GEMM large enough to be compute-bound, one so thin it is memory-bound, and an add.
      for (const auto& [N, C, OC] :
           {std::tuple<int64_t, int64_t, int64_t>{8192, 1600, 6400}, {8192, 1600, 1}, {7, 3, 5}}) {
        SCOPED_TRACE("N=" + std::to_string(N) + " C=" + std::to_string(C) +
                     " OC=" + std::to_string(OC));
        Runtime runtime(memory::parse_device(std::string("meta:") + preset));
        const Tensor out = runtime.allocate({N, OC}, dtype, memory::MemoryCategory::temporary,
                                            "out");  // (N, OC)
        const Tensor inp = runtime.allocate({N, C}, dtype, memory::MemoryCategory::temporary,
                                            "inp");  // (N, C)
        const Tensor weight = runtime.allocate({OC, C}, dtype, memory::MemoryCategory::temporary,
                                               "weight");  // (OC, C)
        const Tensor bias = runtime.allocate({OC}, dtype, memory::MemoryCategory::temporary,
                                             "bias");  // (OC)
        runtime.kernels().linear_forward(out.view(), inp.view(), weight.view(), bias.view(), N, C,
                                         OC);
        const double flops = 2.0 * double(N) * double(C) * double(OC);
        const double bytes = element * double(N * OC + N * C + OC * C + OC);
        EXPECT_DOUBLE_EQ(compute_seconds(runtime), std::max(flops / peak, bytes / bandwidth));

        // Elementwise: three operands of (N, OC), no FLOPs counted.
        const double before = compute_seconds(runtime);
        runtime.kernels().residual_forward(out.view(), out.view(), out.view());
        // The clock's busy time is a running sum: the difference is exact to its rounding.
        EXPECT_NEAR(compute_seconds(runtime) - before, 3.0 * element * double(N * OC) / bandwidth,
                    1e-12 * compute_seconds(runtime));
      }
    }
  }
}

TEST(Roofline, TheLargeGemmIsComputeBoundAndTheThinOneMemoryBound) {
  const std::optional<Roofline> a100 = Roofline::of(memory::parse_device("meta:a100-40g").spec);
  ASSERT_TRUE(a100.has_value());
  // bf16 (N, C, OC) = (8192, 1600, 6400): 168 GFLOP over 151.6 MB; (8192, 1600, 1): 26 MFLOP over
  // 26.2 MB.
  const KernelWork large{2.0 * 8192 * 1600 * 6400,
                         2.0 * (8192.0 * 1600 + 6400.0 * 1600 + 6400 + 8192.0 * 6400)};
  const KernelWork thin{2.0 * 8192 * 1600, 2.0 * (8192.0 * 1600 + 1600 + 1 + 8192)};
  EXPECT_DOUBLE_EQ(a100->seconds(large, DType::bf16), large.flops / 312e12);
  EXPECT_DOUBLE_EQ(a100->seconds(thin, DType::bf16), thin.bytes / 1555e9);
  // In f32 the same GEMM runs on the CUDA cores, 16x slower than bf16 on the tensor cores.
  EXPECT_DOUBLE_EQ(a100->seconds(large, DType::f32), large.flops / 19.5e12);
}

TEST(Roofline, OnlyAMetaPresetHasOne) {
  EXPECT_FALSE(Roofline::of(memory::parse_device("meta").spec).has_value());
  EXPECT_FALSE(Roofline::of(memory::parse_device("meta:80GiB").spec).has_value());
  EXPECT_FALSE(Runtime(memory::parse_device("meta")).kernels().roofline().has_value());
  EXPECT_FALSE(Runtime(memory::parse_device("sim:a100-40g")).kernels().roofline().has_value());
  EXPECT_TRUE(Runtime(memory::parse_device("meta:a100-40g")).kernels().roofline().has_value());
}

TEST(Roofline, AMetaStepsComputeTimeIsAtLeastItsFlopsAtThePeak) {
  // gpt2-1.5b's shape, one layer, bf16: the step's compute stream holds at least its FLOPs at the
  // bf16 peak, and at most that plus every kernel's bytes at the bandwidth.
  Runtime runtime(memory::parse_device("meta:a100-40g"));
  train::TrainOptions options;
  options.model = gpt2_config("gpt2-1.5b-one-layer", 1, 1600, 25, 50257, 1024);
  options.batch = 8;
  options.seq = 1024;
  options.plan.amp.precision = plan::Precision::mixed_bf16;
  train::Trainer trainer(runtime, options);
  WorkCounter totals;
  runtime.kernels().set_observer(&totals);
  const double before = compute_seconds(runtime);
  trainer.step();
  runtime.kernels().set_observer(nullptr);
  const double seconds = compute_seconds(runtime) - before;
  const double flops = totals.forward_flops + totals.other_flops;
  EXPECT_DOUBLE_EQ(flops,
                   3.0 * estimate::model_forward_flops(options.model, options.batch, options.seq));
  EXPECT_GE(seconds, flops / 312e12);
  EXPECT_LE(seconds, flops / 312e12 + totals.bytes / 1555e9);
}

}  // namespace
}  // namespace vramlab::nn
