/// \file
/// \brief Lesson 03's measurements: one model trained under each precision (fp32, bf16, mixed
/// bf16, mixed fp16 with and without a loss scaler) on a fresh Runtime, with the loss, the loss
/// scale and the skipped steps per step and the allocator's peak bytes per category beside the
/// estimator's; gradient accumulation against one large batch; the exponents of the gradients
/// against the 16-bit formats' ranges.
///
/// The steps are train::Trainer's. The allocator runs with expandable segments
/// (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), so a category's peak is the sum of its
/// tensors' 512-byte-rounded sizes and can be compared with the estimate byte for byte.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/amp/loss_scale_spec.h"
#include "common/amp/precision_policy.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"

namespace vramlab::lesson03 {

/// The model and the run every mode shares.
struct RunSettings {
  ModelConfig model;            ///< the model (validated by the trainer).
  int64_t batch = 16;           ///< B (≥ 1).
  int64_t seq = 64;             ///< T (1 ≤ T ≤ model.max_seq).
  memory::Device device;        ///< where the steps run.
  uint64_t seed = 1;            ///< weights and tokens: the same for every mode.
  int64_t steps = 300;          ///< training steps (≥ 1).
  float learning_rate = 3e-3f;  ///< AdamW's step size.
  /// The attention kernel (`--attention`): flash saves lse (B, H, T) instead of att (B, H, T, T).
  AttentionKind attention = AttentionKind::naive;
};

/// One run of the mode table.
struct ModeSpec {
  std::string label;                                ///< e.g. "mixed-fp16 (no scaler)".
  amp::Precision precision = amp::Precision::fp32;  ///< the storage types.
  std::optional<amp::LossScaleSpec> loss_scale;     ///< unset: the precision's default.
  bool stochastic_rounding = false;                 ///< pure bf16's optimizer rounding.
};

/// Bytes per category: the allocator's peak beside the estimator's number for the same options.
struct CategoryBytes {
  std::string category;    ///< memory::category_name(), e.g. "optimizer_state".
  int64_t measured = 0;    ///< the allocator's peak of the category (expandable segments).
  int64_t estimated = -1;  ///< the estimate (rounded to 512 B per tensor); -1: none made.
};

/// How many gradient values fall into each binade, log2 |g| in [lo, lo + 1).
struct ExponentHistogram {
  int min_exponent = -64;       ///< the first bin's lo; smaller values count in it.
  std::vector<int64_t> counts;  ///< (bins) per binade, from min_exponent up.
  int64_t zeros = 0;            ///< values that are exactly 0.
  int64_t total = 0;            ///< all values.
};

/// One mode's run.
struct ModeRun {
  ModeSpec spec;                      ///< what ran.
  std::string loss_scale_name;        ///< amp::loss_scale_name() of the scaling that ran.
  std::vector<double> losses;         ///< per step (0 on meta).
  std::vector<double> step_seconds;   ///< wall time per step.
  std::vector<double> loss_scale;     ///< the scale each step's backward used.
  std::vector<bool> found_inf;        ///< an unscaled gradient was inf/NaN, per step.
  std::vector<bool> skipped;          ///< the optimizer step was skipped, per step.
  std::vector<CategoryBytes> bytes;   ///< parameter, gradient, optimizer_state, activation.
  int64_t peak_bytes = 0;             ///< the allocator's allocated peak over all steps.
  int64_t activation_peak_bytes = 0;  ///< StepResult::activation_peak_bytes of step 1.
  /// The parameter gradients before the last optimizer step, as stored (scaled by the loss
  /// scale, if any), widened to f32; empty on meta.
  std::vector<float> last_gradients;  // (numel)
};

/// Trains settings.steps steps of one mode on a fresh Runtime.
/// \param settings the model and the run. \param spec the mode.
/// \return the measurements. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when the device is too small.
ModeRun run_mode(const RunSettings& settings, const ModeSpec& spec);

/// \param losses per step. \return the mean of the last tenth of them (at least one): the
/// per-batch loss is noisy, its mean over the end of the run is what a mode reached.
double final_loss(const std::vector<double>& losses);

/// One row of the accumulation table: the same effective batch in K micro-batches.
struct AccumulationRow {
  std::vector<int64_t> micro_batches;  ///< (K) sequences per micro-batch.
  int64_t activation_peak_bytes = 0;   ///< step 1's store peak.
  /// max |g_K − g_1| / max |g_1| over the gradients before step 1's optimizer step.
  double max_rel_diff_grads = 0.0;
  double loss = 0.0;  ///< step 1's loss.
};

/// Runs one step with \p sizes as micro-batches (fp32) and compares its gradients with
/// \p reference (those of one batch of the same sequences; empty: this is the reference).
/// \param settings the model (its batch is replaced by the sizes). \param sizes the split.
/// \param reference_gradients the K = 1 gradients. \param gradients_out if not null, receives
/// this run's gradients. \return the row.
AccumulationRow run_accumulation(const RunSettings& settings, const std::vector<int64_t>& sizes,
                                 const std::vector<float>& reference_gradients,
                                 std::vector<float>* gradients_out = nullptr);

/// \param values gradients. \param scale what they are multiplied by first.
/// \return the histogram of log2 |scale · g| over [-64, 20).
ExponentHistogram exponent_histogram(const std::vector<float>& values, double scale = 1.0);

/// The share of the nonzero \p values whose product with \p scale rounds to 0 in fp16
/// (below half of 2^-24, f16's smallest subnormal, or at that half and tied to even 0).
/// \param values gradients. \param scale the loss scale. \return a fraction in [0, 1].
double fp16_flush_share(const std::vector<float>& values, double scale);

/// The same for the share that lands among fp16's subnormals (nonzero, below 2^-14): kept, but
/// with fewer than 11 significant bits.
/// \param values gradients. \param scale the loss scale. \return a fraction in [0, 1].
double fp16_subnormal_share(const std::vector<float>& values, double scale);

/// The share of \p values that are exactly 0. \param values gradients. \return in [0, 1].
double zero_share(const std::vector<float>& values);

/// Relative round-trip error of N(0, 1) samples through one 16-bit format.
struct RoundTripError {
  std::string format;  ///< "bf16" or "f16".
  double max = 0.0;    ///< max |x − rt(x)| / |x|.
  double mean = 0.0;   ///< mean of the same.
};

/// \param samples how many N(0, 1) values; those below 2^-14 in magnitude (f16's subnormals) are
/// left out. \param seed their seed.
/// \return bf16's and f16's round-trip errors (round to nearest even).
std::vector<RoundTripError> round_trip_errors(int64_t samples, uint64_t seed);

}  // namespace vramlab::lesson03
