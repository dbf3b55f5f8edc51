// Precisions and gradient accumulation through the trainer: K micro-batches give the gradient of
// one batch K times larger (and of unequal micro-batches, weighted by tokens), with the memory of
// one micro-batch; and on meta every precision's measured bytes per category equal
// `vramlab estimate`'s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/gradient_snapshot.h"
#include "common/train/micro_batches.h"
#include "common/train/trainer.h"
#include "tests/sanitized_build.h"

namespace vramlab::train {
namespace {

using memory::MemoryCategory;

struct OneStep {
  std::vector<float> grads;            // (numel) before the optimizer step
  double loss = 0;
  int64_t activation_peak_bytes = 0;
};

OneStep first_step(const TrainOptions& options) {
  nn::Runtime runtime(memory::parse_device("cpu"));
  Trainer trainer(runtime, options);
  GradientSnapshot snapshot;
  trainer.add_observer(snapshot);
  const StepResult r = trainer.step();
  return {snapshot.values(), r.loss, r.activation_peak_bytes};
}

// max |a - b| / max |b|: the difference relative to the gradient's scale (a relative error per
// element is meaningless for the many gradients that are nearly zero).
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b,
                               size_t* where) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (d > diff) {
      diff = d;
      *where = i;
    }
  }
  return diff / scale;
}

TrainOptions gpt2_options(int64_t batch) {
  TrainOptions o;
  o.model = gpt2_config("accumulate", 2, 48, 4, 64, 24);
  o.batch = batch;
  o.seq = 24;
  o.seed = 7;
  return o;
}

// Not bitwise: the micro-batches' parameter gradients are summed into the gradient buffer one
// micro-batch after another, while one batch sums all rows inside each GEMM; fp32 addition is not
// associative, so the two orders differ by a few ulps of the largest partial sums.
TEST(GradientAccumulation, KMicroBatchesGiveTheGradientOfOneBatchKTimesLarger) {
  const OneStep full = first_step(gpt2_options(8));
  for (const int64_t k : {2, 4, 8}) {
    TrainOptions o = gpt2_options(8 / k);
    o.plan.batch.grad_accum = k;
    const OneStep accumulated = first_step(o);
    ASSERT_EQ(accumulated.grads.size(), full.grads.size());
    size_t where = 0;
    const double diff = max_relative_difference(accumulated.grads, full.grads, &where);
    EXPECT_LT(diff, 1e-6) << "K=" << k << ": max |diff| / max |g| = " << diff << " at element "
                          << where << " (" << 100 * diff / 1e-6 << "% of tolerance)";
    EXPECT_NEAR(accumulated.loss, full.loss, 1e-6 * full.loss) << "K=" << k;
    EXPECT_LT(accumulated.activation_peak_bytes, full.activation_peak_bytes) << "K=" << k;
  }
}

TEST(GradientAccumulation, UnequalMicroBatchesAreWeightedByTheirTokens) {
  const OneStep full = first_step(gpt2_options(10));
  TrainOptions o = gpt2_options(1);
  o.plan.batch.micro_batch_sizes = micro_batch_sizes(10, 4);
  ASSERT_EQ(o.plan.batch.micro_batch_sizes, (std::vector<int64_t>{3, 3, 2, 2}));
  const OneStep accumulated = first_step(o);
  size_t where = 0;
  const double diff = max_relative_difference(accumulated.grads, full.grads, &where);
  EXPECT_LT(diff, 1e-6) << "max |diff| / max |g| = " << diff << " at element " << where << " ("
                        << 100 * diff / 1e-6 << "% of tolerance)";
  // Weighting each micro-batch's mean by 1/K instead would be off by far more than rounding:
  // the 3-sequence micro-batches would weigh 3/10 · 4/3 = 1.33 times too little or too much.
  EXPECT_NEAR(accumulated.loss, full.loss, 1e-6 * full.loss);
}

TEST(GradientAccumulation, ThePeakIsThatOfTheLargestMicroBatch) {
  TrainOptions one = gpt2_options(3);
  TrainOptions split = gpt2_options(1);
  split.plan.batch.micro_batch_sizes = {1, 3, 2};
  EXPECT_EQ(first_step(split).activation_peak_bytes, first_step(one).activation_peak_bytes);
}

TEST(MicroBatches, SplitEvenlyLargestFirstAndRefuseEmptyOnes) {
  EXPECT_EQ(micro_batch_sizes(8, 1), (std::vector<int64_t>{8}));
  EXPECT_EQ(micro_batch_sizes(8, 8), (std::vector<int64_t>(8, 1)));
  EXPECT_EQ(micro_batch_sizes(7, 3), (std::vector<int64_t>{3, 2, 2}));
  const std::vector<int64_t> big = micro_batch_sizes(int64_t{1} << 40, 3);
  EXPECT_EQ(big[0] + big[1] + big[2], int64_t{1} << 40);
  EXPECT_THROW((void)micro_batch_sizes(4, 5), UsageError);
  EXPECT_THROW((void)micro_batch_sizes(4, 0), UsageError);
  TrainOptions o = gpt2_options(2);
  o.plan.batch.grad_accum = 0;
  EXPECT_THROW(validate(o), UsageError);
  o.plan.batch.grad_accum = 1;
  o.plan.batch.micro_batch_sizes = {2, 0};
  EXPECT_THROW(validate(o), UsageError);
}

// Every precision on meta, with expandable segments so that the allocator's category peaks are
// the tensors' own (512-B rounded) bytes: parameters, gradients and optimizer states equal the
// estimator's model states, and the store's activation peak its runtime layout.
TEST(PrecisionBytes, MeasuredBytesPerCategoryEqualTheEstimatorsInEveryMode) {
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
  for (const ModelConfig& model : {gpt2_config("g", 3, 64, 4, 512, 64),
                                   llama_config("l", 2, 64, 4, 2, 160, 512, 64)}) {
    for (const amp::Precision p : amp::kAllPrecisions) {
      for (const bool fp32_grads : {false, true}) {
        if (fp32_grads && !amp::is_mixed(p)) continue;
        TrainOptions o;
        o.model = model;
        o.batch = 4;
        o.seq = 64;
        o.plan.amp.precision = p;
        o.plan.amp.fp32_grads = fp32_grads;
        nn::Runtime runtime(memory::parse_device("meta"));
        Trainer trainer(runtime, o);
        const StepResult r = trainer.step();
        (void)trainer.step();
        const MemoryReport m = trainer.memory_report();
        const estimate::Estimate e = estimate_step(o);
        const std::string what = model.name + " " + std::string(amp::precision_name(p)) +
                                 (fp32_grads ? " fp32-grads" : "");
        const auto at = [&m](MemoryCategory c) { return m.peak_bytes[static_cast<size_t>(c)]; };
        const auto rounded = [](int64_t bytes) { return (bytes + 511) / 512 * 512; };
        EXPECT_EQ(at(MemoryCategory::parameter), rounded(e.parameters.bytes)) << what;
        EXPECT_EQ(at(MemoryCategory::gradient), rounded(e.gradients.bytes)) << what;
        // The master and the two moments are three blocks of a third each (Adam, mixed) or the
        // moments two of a half each.
        const int64_t moments = e.optimizer_states.bytes - e.master_weight_bytes;
        EXPECT_EQ(at(MemoryCategory::optimizer_state),
                  rounded(e.master_weight_bytes) + 2 * rounded(moments / 2))
            << what;
        EXPECT_EQ(r.activation_peak_bytes, e.runtime_schedule_peak_bytes) << what;
      }
    }
  }
  unsetenv("PYTORCH_CUDA_ALLOC_CONF");
}

// Forward and backward of 11.5M parameters fit a 64 MiB device (23 MiB of fp16 parameters, 23 of
// gradients) but the first optimizer step's fp32 master and moments (12 B/param) do not: the out-of-memory error comes from the step, and the next step fails the
// same way (not with a loss scaler stuck between unscale and update), the allocator consistent.
TEST(PrecisionOutOfMemory, TheOptimizerStepFailsCleanlyTwiceUnderLossScaling) {
  TrainOptions o;
  o.model = gpt2_config("wide", 1, 512, 8, 16384, 16);
  o.batch = 1;
  o.seq = 8;
  o.plan.amp.precision = amp::Precision::mixed_fp16;  // dynamic loss scaling by default
  nn::Runtime runtime(memory::parse_device("sim:64MiB"));
  Trainer trainer(runtime, o);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)trainer.step();
      FAIL() << "the master and moments of " << o.model.parameter_count()
             << " parameters fitted in 64 MiB";
    } catch (const memory::OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("Tried to allocate"), std::string::npos) << e.what();
    }
    runtime.allocator().check_invariants();
    const MemoryReport m = trainer.memory_report();
    EXPECT_EQ(m.current_bytes[static_cast<size_t>(MemoryCategory::activation)], 0);
    EXPECT_EQ(m.current_bytes[static_cast<size_t>(MemoryCategory::temporary)], 0);
  }
}

// The bar for every precision: the final loss within 2% of fp32's on a small model trained
// 200 steps (the mean of the last 20 steps: one step's loss is noisy). Pure bf16 meets it only with
// stochastic rounding: rounded to nearest, Adam's steps below half a bf16 ulp are lost (a norm
// weight near 1 has an ulp of 2^-7 > 2·lr), which is what lesson 03 shows.
double final_loss(amp::Precision precision, bool stochastic_rounding) {
  TrainOptions o;
  o.model = gpt2_config("custom", 2, 64, 4, 128, 32);
  o.batch = 8;
  o.seq = 32;
  o.plan.optimizer.learning_rate = 3e-3f;
  o.plan.amp.precision = precision;
  o.plan.amp.stochastic_rounding = stochastic_rounding;
  nn::Runtime runtime(memory::parse_device("cpu"));
  Trainer trainer(runtime, o);
  double tail = 0;
  for (int s = 0; s < 200; ++s) {
    const double loss = trainer.step().loss;
    if (s >= 180) tail += loss / 20;
  }
  return tail;
}

TEST(Convergence, EveryPrecisionEndsWithinTwoPercentOfFp32) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's steps of every precision");
  const double fp32 = final_loss(amp::Precision::fp32, false);
  for (const auto& [precision, stochastic] :
       {std::pair{amp::Precision::mixed_bf16, false}, std::pair{amp::Precision::mixed_fp16, false},
        std::pair{amp::Precision::bf16, true}}) {
    const double loss = final_loss(precision, stochastic);
    EXPECT_LT(std::abs(loss - fp32) / fp32, 0.02)
        << amp::precision_name(precision) << (stochastic ? " stochastic" : "") << ": " << loss
        << " vs fp32 " << fp32 << " (" << 100 * std::abs(loss - fp32) / fp32 / 0.02
        << "% of the tolerance)";
  }
  const double nearest = final_loss(amp::Precision::bf16, false);
  const double stochastic = final_loss(amp::Precision::bf16, true);
  EXPECT_GT(nearest - fp32, stochastic - fp32)
      << "pure bf16 rounded to nearest should trail stochastic rounding: " << nearest << " vs "
      << stochastic << " (fp32 " << fp32 << ")";
}

}  // namespace
}  // namespace vramlab::train
