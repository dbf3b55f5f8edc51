// Lesson 03's measurements: each precision's steps on a fresh Runtime (see measure_precision.h).
#include "lessons/03-mixed-precision/measure_precision.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "common/dtype/convert.h"
#include "common/memory/expandable_segments_scope.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/gradient_snapshot.h"
#include "common/train/trainer.h"

namespace vramlab::lesson03 {

namespace {

using memory::MemoryCategory;

int64_t rounded(int64_t bytes) {
  return (bytes + 511) / 512 * 512;
}

train::TrainOptions train_options(const RunSettings& settings) {
  if (settings.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(settings.steps));
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.seed = settings.seed;
  options.plan.optimizer.learning_rate = settings.learning_rate;
  options.plan.attention = settings.attention;
  return options;
}

}  // namespace

ModeRun run_mode(const RunSettings& settings, const ModeSpec& spec) {
  train::TrainOptions options = train_options(settings);
  options.plan.amp.precision = spec.precision;
  options.plan.amp.loss_scale = spec.loss_scale;
  options.plan.amp.stochastic_rounding = spec.stochastic_rounding;
  ModeRun run;
  run.spec = spec;
  run.loss_scale_name = amp::loss_scale_name(train::effective_loss_scale(options));

  const memory::ExpandableSegmentsScope expandable(settings.device);
  nn::Runtime runtime(settings.device);
  train::Trainer trainer(runtime, options);
  train::GradientSnapshot snapshot;
  for (int64_t s = 0; s < settings.steps; ++s) {
    // Only the last step's gradients are kept: copying every step's would time the copy too.
    if (s == settings.steps - 1) trainer.add_observer(snapshot);
    const train::StepResult step = trainer.step();
    if (s == 0) run.activation_peak_bytes = step.activation_peak_bytes;
    run.losses.push_back(step.loss);
    run.step_seconds.push_back(step.seconds);
    run.loss_scale.push_back(step.loss_scale);
    run.found_inf.push_back(step.found_inf);
    run.skipped.push_back(step.skipped);
  }
  trainer.remove_observer(snapshot);
  run.last_gradients = snapshot.values();

  const train::MemoryReport m = trainer.memory_report();
  run.peak_bytes = m.peak_total_bytes;
  const estimate::Estimate e = train::estimate_step(options);
  const auto peak = [&m](MemoryCategory c) { return m.peak_bytes[static_cast<size_t>(c)]; };
  // The optimizer holds the master copy (mixed modes) and AdamW's two moments as one block each.
  const int64_t moments = e.optimizer_states.bytes - e.master_weight_bytes;
  const int64_t optimizer_estimate =
      (e.master_weight_bytes > 0 ? rounded(e.master_weight_bytes) : 0) + 2 * rounded(moments / 2);
  run.bytes = {
      {"parameter", peak(MemoryCategory::parameter), rounded(e.parameters.bytes)},
      {"gradient", peak(MemoryCategory::gradient), rounded(e.gradients.bytes)},
      {"optimizer_state", peak(MemoryCategory::optimizer_state), optimizer_estimate},
      // The store's requested bytes against the estimator's runtime layout (both unrounded).
      {"activation", run.activation_peak_bytes, e.runtime_schedule_peak_bytes},
      {"temporary", peak(MemoryCategory::temporary), -1},
      {"input", peak(MemoryCategory::input), -1},
  };
  return run;
}

double final_loss(const std::vector<double>& losses) {
  if (losses.empty()) return 0.0;
  const size_t n = std::max<size_t>(1, losses.size() / 10);
  double sum = 0.0;
  for (size_t i = losses.size() - n; i < losses.size(); ++i) sum += losses[i];
  return sum / static_cast<double>(n);
}

AccumulationRow run_accumulation(const RunSettings& settings, const std::vector<int64_t>& sizes,
                                 const std::vector<float>& reference_gradients,
                                 std::vector<float>* gradients_out) {
  train::TrainOptions options = train_options(settings);
  options.batch = sizes.empty() ? settings.batch : sizes.front();
  options.plan.batch.micro_batch_sizes = sizes;
  AccumulationRow row;
  row.micro_batches = sizes;

  const memory::ExpandableSegmentsScope expandable(settings.device);
  nn::Runtime runtime(settings.device);
  train::Trainer trainer(runtime, options);
  train::GradientSnapshot snapshot;
  trainer.add_observer(snapshot);
  const train::StepResult step = trainer.step();
  trainer.remove_observer(snapshot);
  row.activation_peak_bytes = step.activation_peak_bytes;
  row.loss = step.loss;
  const std::vector<float>& g = snapshot.values();
  if (!reference_gradients.empty() && g.size() == reference_gradients.size()) {
    // Relative to the gradient's largest value: an element-wise relative error means nothing for
    // the many gradients close to zero.
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < g.size(); ++i) {
      scale = std::max(scale, std::abs(static_cast<double>(reference_gradients[i])));
      diff = std::max(diff, std::abs(static_cast<double>(g[i]) - reference_gradients[i]));
    }
    row.max_rel_diff_grads = scale > 0.0 ? diff / scale : 0.0;
  }
  if (gradients_out) *gradients_out = g;
  return row;
}

ExponentHistogram exponent_histogram(const std::vector<float>& values, double scale) {
  ExponentHistogram h;
  constexpr int kMaxExponent = 20;
  h.counts.assign(static_cast<size_t>(kMaxExponent - h.min_exponent), 0);
  for (const float v : values) {
    ++h.total;
    const double x = std::abs(static_cast<double>(v) * scale);
    if (x == 0.0) {
      ++h.zeros;
      continue;
    }
    if (!std::isfinite(x)) {
      ++h.counts.back();
      continue;
    }
    const int e = std::clamp(std::ilogb(x), h.min_exponent, kMaxExponent - 1);
    ++h.counts[static_cast<size_t>(e - h.min_exponent)];
  }
  return h;
}

double fp16_flush_share(const std::vector<float>& values, double scale) {
  int64_t nonzero = 0, flushed = 0;
  for (const float v : values) {
    if (v == 0.0f) continue;
    ++nonzero;
    const float x = static_cast<float>(static_cast<double>(v) * scale);
    if ((f32_to_f16_bits(x) & 0x7FFF) == 0) ++flushed;
  }
  return nonzero ? static_cast<double>(flushed) / static_cast<double>(nonzero) : 0.0;
}

double fp16_subnormal_share(const std::vector<float>& values, double scale) {
  int64_t nonzero = 0, subnormal = 0;
  for (const float v : values) {
    if (v == 0.0f) continue;
    ++nonzero;
    const float x = static_cast<float>(static_cast<double>(v) * scale);
    const uint16_t bits = f32_to_f16_bits(x) & 0x7FFF;
    if (bits != 0 && bits < 0x0400) ++subnormal;  // exponent field 0: a subnormal
  }
  return nonzero ? static_cast<double>(subnormal) / static_cast<double>(nonzero) : 0.0;
}

double zero_share(const std::vector<float>& values) {
  if (values.empty()) return 0.0;
  const auto zeros = std::count(values.begin(), values.end(), 0.0f);
  return static_cast<double>(zeros) / static_cast<double>(values.size());
}

std::vector<RoundTripError> round_trip_errors(int64_t samples, uint64_t seed) {
  if (samples < 1)
    throw UsageError("round-trip samples must be >= 1, got " + std::to_string(samples));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  RoundTripError bf16{"bf16", 0.0, 0.0}, f16{"f16", 0.0, 0.0};
  // Only values fp16 holds as normals: below 2^-14 its spacing stays 2^-24 and the relative error
  // grows without bound, which is the range's limit, not the mantissa's.
  const float smallest_normal = static_cast<float>(std::ldexp(1.0, -14));
  int64_t counted = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const float x = normal(rng);
    if (std::abs(x) < smallest_normal) continue;
    ++counted;
    const double b = std::abs(bf16_bits_to_f32(f32_to_bf16_bits(x)) - x) / std::abs(x);
    const double h = std::abs(f16_bits_to_f32(f32_to_f16_bits(x)) - x) / std::abs(x);
    bf16.max = std::max(bf16.max, b);
    f16.max = std::max(f16.max, h);
    bf16.mean += b;
    f16.mean += h;
  }
  bf16.mean /= static_cast<double>(counted);
  f16.mean /= static_cast<double>(counted);
  return {bf16, f16};
}

}  // namespace vramlab::lesson03
