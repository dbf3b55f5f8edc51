// `--loss-chunks K` (Note [Chunked cross-entropy]): the loss over K slices of the tokens saves no
// (B, T, V) probabilities. It trains as the whole loss does (losses and gradients within the
// rounding of a sum in another order), the saved activations are the estimator's
// to the byte with and without offload and recompute, and the step's peak falls by at least the
// probabilities it no longer saves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/plan/plan.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/gradient_snapshot.h"
#include "common/train/trainer.h"
#include "tests/train/varied_train_cases.h"

namespace vramlab::train {
namespace {

using LossChunkCase = test_cases::NamedRun;

// The varied runs (tests/train/varied_train_cases.h), and one with its activations offloaded.
std::vector<LossChunkCase> loss_chunk_cases() {
  std::vector<LossChunkCase> cases = test_cases::varied_runs(41);
  TrainOptions o = cases[1].options;
  o.plan.activations.offload = true;
  o.plan.recompute = recompute::parse_recompute_spec("full");
  cases.push_back({"llama mixed-bf16, activations offloaded, full recompute", o});
  return cases;
}

// Each case's row counts: a slice of several rows, an uneven split, one row a slice, and more
// slices than rows (the last ones empty, so fewer slices).
std::vector<int64_t> chunk_counts(const TrainOptions& o) {
  int64_t rows = o.batch * o.seq;
  for (const int64_t b : o.plan.batch.micro_batch_sizes) rows = std::min(rows, b * o.seq);
  return {2, 5, rows, rows + 7};
}

// The first step's gradients (same parameters) and three steps' losses. A row's logits come from
// a matmul over a slice of rows, which the BLAS may block differently, so the losses agree within
// rounding; the head's weight gradient is summed slice by slice, in the gradients' dtype (as
// autograd accumulates a chunked loss's), so it differs by that sum's rounding: measured worst
// 1 in 10^6 of the largest gradient in fp32, and under 16-bit gradients a few of their ulps.
TEST(LossChunks, TrainsAsTheWholeLoss) {
  for (const LossChunkCase& c : loss_chunk_cases()) {
    for (const int64_t K : chunk_counts(c.options)) {
      TrainOptions whole = c.options, chunked = c.options;
      chunked.plan.activations.loss_chunks = K;
      const std::string name = c.name + ", K=" + std::to_string(K);
      nn::Runtime whole_runtime(memory::parse_device("sim:1GiB"));
      nn::Runtime chunked_runtime(memory::parse_device("sim:1GiB"));
      Trainer whole_trainer(whole_runtime, whole);
      Trainer chunked_trainer(chunked_runtime, chunked);
      GradientSnapshot whole_grads, chunked_grads;
      whole_trainer.add_observer(whole_grads);
      chunked_trainer.add_observer(chunked_grads);
      for (int step = 1; step <= 3; ++step) {
        const StepResult w = whole_trainer.step(), k = chunked_trainer.step();
        // Later steps start from parameters updated from those gradients: in 16-bit storage one
        // ulp apart here and there.
        const bool fp32 = c.options.plan.amp.precision == plan::Precision::fp32;
        EXPECT_NEAR(k.loss, w.loss, (fp32 ? 1e-6 : 1e-4) * std::abs(w.loss))
            << name << ", step " << step;
        if (step > 1) continue;
        const std::vector<float>& a = whole_grads.values();
        const std::vector<float>& b = chunked_grads.values();
        ASSERT_EQ(a.size(), b.size());
        double largest = 0.0, worst = 0.0;
        for (size_t i = 0; i < a.size(); ++i) {
          largest = std::max(largest, std::abs(static_cast<double>(a[i])));
          worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
        }
        ASSERT_GT(largest, 0.0) << name;
        const double tolerance = c.options.plan.amp.precision == plan::Precision::fp32 ? 1e-5
                                 : c.options.plan.amp.precision == plan::Precision::mixed_fp16
                                     ? 4e-3
                                     : 3e-2;
        EXPECT_LE(worst / largest, tolerance) << name;
      }
    }
  }
}

TEST(LossChunks, SavedActivationsAreTheEstimators) {
  for (const LossChunkCase& c : loss_chunk_cases()) {
    for (const int64_t K : chunk_counts(c.options)) {
      TrainOptions o = c.options;
      o.plan.activations.loss_chunks = K;
      const std::string name = c.name + ", K=" + std::to_string(K);
      const estimate::Estimate e = estimate_step(o);
      TrainOptions whole = c.options;
      const estimate::Estimate w = estimate_step(whole);
      nn::Runtime runtime(memory::parse_device("sim:1GiB"));
      Trainer trainer(runtime, o);
      for (int step = 1; step <= 2; ++step) {
        const StepResult r = trainer.step();
        EXPECT_EQ(r.activation_bytes_after_forward, e.runtime_bytes_after_forward) << name;
        EXPECT_EQ(r.activation_peak_bytes, e.runtime_schedule_peak_bytes) << name;
      }
      // What the estimator no longer counts is the largest micro-batch's probabilities.
      int64_t rows = o.batch * o.seq;
      if (!o.plan.batch.micro_batch_sizes.empty())
        rows = *std::max_element(o.plan.batch.micro_batch_sizes.begin(),
                                 o.plan.batch.micro_batch_sizes.end()) *
               o.seq;
      const int64_t element = o.plan.amp.precision == plan::Precision::fp32 ? 4 : 2;
      EXPECT_EQ(w.runtime_activation_bytes - e.runtime_activation_bytes,
                rows * o.model.vocab * element)
          << name;
    }
  }
}

// At a large vocabulary the loss's (B, T, V) tensors are the step's peak: in chunks it falls by
// at least the probabilities no longer saved, and more with more chunks.
TEST(LossChunks, ThePeakFallsByTheProbabilitiesAtALargeVocabulary) {
  TrainOptions o;
  o.model = llama_config("test-llama-bigvocab", 2, 64, 4, 4, 128, 32000, 64);
  o.batch = 4;
  o.seq = 64;
  o.seed = 45;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  const auto peak = [&](int64_t K) {
    TrainOptions chunked = o;
    chunked.plan.activations.loss_chunks = K;
    nn::Runtime runtime(memory::parse_device("meta:a100-80g"));
    Trainer trainer(runtime, chunked);
    (void)trainer.step();
    (void)trainer.step();
    return trainer.memory_report().peak_total_bytes;
  };
  const int64_t probs = o.batch * o.seq * o.model.vocab * 2;  // bf16
  const int64_t whole = peak(1), four = peak(4), sixteen = peak(16);
  EXPECT_LE(four, whole - probs);
  EXPECT_LT(sixteen, four);
}

TEST(LossChunks, RefusesZero) {
  TrainOptions o;
  o.model = gpt2_config("test-gpt2", 1, 32, 4, 48, 16);
  o.seq = 8;
  o.plan.activations.loss_chunks = 0;
  EXPECT_THROW(validate(o), UsageError);
}

}  // namespace
}  // namespace vramlab::train
