/// \file
/// \brief Lesson 02's measurements: training steps of one model under a recompute schedule
/// (gradient checkpointing) and, optionally, int8 activation compression, each on a fresh
/// Runtime, with what the step's saved-activation store and the caching allocator saw.
///
/// This is the library behind the `lesson02_checkpointing` binary and tests/lesson02. The steps
/// are train::Trainer's; nn::StepObserver's read the gradients after the first backward and mark
/// the phases in the allocator's history, from which the bytes of saved activations over the step
/// are replayed (measured, not predicted).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/saved_activations.h"
#include "common/recompute/recompute_spec.h"

namespace vramlab::lesson02 {

/// What to run (one model, one shape) under every schedule.
struct RunSettings {
  ModelConfig model;            ///< the model (validated by the trainer).
  int64_t batch = 8;            ///< B (≥ 1).
  int64_t seq = 128;            ///< T (1 ≤ T ≤ model.max_seq).
  memory::Device device;        ///< where the steps run.
  float dropout = 0.1f;         ///< GPT-2's attn_pdrop = resid_pdrop, in [0, 1).
  uint64_t seed = 1;            ///< weights, tokens and dropout masks.
  int64_t steps = 3;            ///< training steps per schedule (≥ 1).
  bool record_timeline = true;  ///< replay the store's bytes phase by phase (step 1).
  /// The attention kernel (`--attention`): under flash nothing is left for selective recompute.
  AttentionKind attention = AttentionKind::naive;
};

/// The most bytes of saved activations during one phase of step 1, and at its end.
struct PhaseSample {
  std::string label;      ///< e.g. "forward 3", "head", "recompute 7", "backward 3".
  int64_t max_bytes = 0;  ///< the largest value during the phase (requested bytes).
  int64_t end_bytes = 0;  ///< the value when the phase ended.
};

/// Where one parameter tensor lies in the flat gradient and parameter vectors.
struct ParameterRange {
  std::string name;    ///< e.g. "blocks.0.attn.qkv.weight".
  int64_t offset = 0;  ///< first element.
  int64_t numel = 0;   ///< elements.
};

/// One schedule's run.
struct PolicyRun {
  std::string name;                  ///< the --recompute text, e.g. "every:2", "budget:40MiB".
  std::string pattern;               ///< recompute::schedule_pattern(), e.g. "F.F.F.".
  std::string compression = "none";  ///< nn::compression_name() of the run.
  /// The store's peak in step 1 (SavedActivations::peak_bytes(): requested bytes).
  int64_t activation_peak_bytes = 0;
  /// recompute::activation_peak_bytes() of the schedule on the runtime's chain costs: the
  /// planner's prediction of activation_peak_bytes (it does not model compression).
  int64_t predicted_activation_peak_bytes = 0;
  /// What the store held when step 1's forward ended (after the drops and the compression).
  int64_t bytes_after_forward = 0;
  /// estimate::runtime_bytes_after_forward() of the schedule and compression: its prediction.
  int64_t predicted_bytes_after_forward = 0;
  int64_t peak_bytes = 0;            ///< the allocator's allocated_bytes.all.peak over all steps.
  std::vector<double> step_seconds;  ///< wall time of each step.
  double recomputed_forward_fraction = 0.0;  ///< estimate::recomputed_forward_fraction().
  std::vector<double> losses;                ///< per step (0 on meta).
  std::vector<float> gradients;              ///< (numel) after step 1's backward; empty on meta.
  std::vector<float> parameters;             ///< (numel) after the last step; empty on meta.
  std::vector<ParameterRange> parameter_ranges;  ///< the tensors inside those vectors.
  std::vector<PhaseSample> timeline;             ///< step 1, if RunSettings::record_timeline.
  /// The largest value of the replayed timeline: equals activation_peak_bytes when the store
  /// allocates every saved tensor through the allocator, as it must.
  int64_t timeline_peak_bytes = 0;
};

/// Runs RunSettings::steps training steps with \p spec on a fresh Runtime.
/// \param settings the model and the run. \param spec the schedule.
/// \param compression int8 activation compression of what the layers keep (none: fp32).
/// \return the measurements.
/// \throws vramlab::UsageError for bad settings or a budget no schedule fits;
/// memory::OutOfMemoryError when the device is too small.
PolicyRun run_policy(const RunSettings& settings, const recompute::RecomputeSpec& spec,
                     nn::ActivationCompression compression = nn::ActivationCompression::none);

/// Whether one training step with batch \p batch fits \p device: a real step on a fresh Runtime
/// (after an out-of-memory error the allocator is left behind with the runtime).
/// \param settings the model (its batch and device are replaced). \param spec the schedule.
/// \param device where to try. \param batch B ≥ 1.
/// \return true when the step ran; false on memory::OutOfMemoryError, or for a `budget` spec
/// that no schedule meets at this batch.
bool step_fits(const RunSettings& settings, const recompute::RecomputeSpec& spec,
               const memory::Device& device, int64_t batch);

/// The largest batch whose first step fits \p device, by doubling then bisecting over real
/// steps (step_fits()); the step's memory grows with B, so the fitting batches are 1..answer.
/// \param settings the model. \param spec the schedule. \param device where to try.
/// \param limit the largest batch tried.
/// \return the batch, 0 when not even B = 1 fits, \p limit when the limit fits.
int64_t max_batch(const RunSettings& settings, const recompute::RecomputeSpec& spec,
                  const memory::Device& device, int64_t limit);

/// ‖a − b‖ / ‖b‖ over one range of two gradient vectors (0 when both are zero).
/// \param a,b the vectors. \param offset,count the range. \return the relative L2 error.
double relative_error(const std::vector<float>& a, const std::vector<float>& b, int64_t offset,
                      int64_t count);

/// \return true when \p a and \p b have the same length and the same bits.
bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace vramlab::lesson02
