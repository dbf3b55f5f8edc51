/// \file
/// \brief Lesson 06's measurements: the attention core (the causal attention op alone, forward
/// then backward, through nn::KernelBackend on a fresh nn::Runtime) naive against flash, a small
/// model trained with either, and the per-layer saved bytes at scale on meta.
///
/// The attention core is what nn::Attention runs between its projections: q, k, v (B, T, H, D)
/// in, out (B, T, H, D) and what backward needs saved, then dout in and dq, dk, dv out with the
/// backward's scratch. Naive saves att (B, H, T, T) and needs a (B, H, T, T) score gradient
/// dpreatt; flash saves lse (B, H, T) f32 and needs a (B, H, T) f32 delta. The allocator runs
/// with expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), so its peak is
/// the sum of the live tensors' 512-byte-rounded sizes and equals attention_core_peak_formula()
/// byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/model/model_kinds.h"

namespace vramlab::lesson06 {

/// The heads of the attention core: B sequences of H query heads (Hkv key/value heads) of
/// width D, activations in f32. The default is one GPT-2 head layout: B = 1, H = 8, D = 64.
struct CoreShape {
  int64_t batch = 1;      ///< B ≥ 1.
  int64_t heads = 8;      ///< H ≥ 1.
  int64_t kv_heads = 8;   ///< Hkv ≥ 1, divides H (grouped-query attention when smaller).
  int64_t head_dim = 64;  ///< D ≥ 1.
};

/// \param shape the heads. \throws vramlab::UsageError naming a bad size.
void validate(const CoreShape& shape);

/// One run of the attention core.
struct CoreRun {
  AttentionKind attention = AttentionKind::naive;  ///< which kernel.
  int64_t seq = 0;                                 ///< T.
  std::string device;                              ///< where it ran, e.g. "sim" or "meta".
  int64_t peak_bytes = 0;   ///< the allocator's allocated peak over forward + backward.
  int64_t saved_bytes = 0;  ///< what the kernel keeps for backward beside q, k, v, out: att or lse.
  int64_t scratch_bytes = 0;  ///< the backward's scratch: dpreatt or delta.
  /// Forward + backward wall time of the two kernel calls; negative when no kernel ran (meta).
  double seconds = -1.0;
  std::vector<float> out;  ///< (B, T, H, D) the output, empty unless asked for
  std::vector<float> dq;   ///< (B, T, H, D) its gradients, empty unless asked for
  std::vector<float> dk;   ///< (B, T, Hkv, D), empty unless asked for
  std::vector<float> dv;   ///< (B, T, Hkv, D), empty unless asked for
};

/// Runs the attention core once on a fresh Runtime of \p device: random q, k, v, dout
/// (N(0, 1), from \p seed, the same for either kernel), forward, then backward.
/// \param device sim or cpu computes; meta only allocates (seconds stays negative).
/// \param attention naive or flash. \param seq T ≥ 1. \param shape the heads.
/// \param seed the inputs. \param keep_outputs copy out, dq, dk, dv to the host.
/// \return the run. \throws vramlab::UsageError for bad sizes; memory::OutOfMemoryError when
/// the device is too small.
CoreRun run_attention_core(const memory::Device& device, AttentionKind attention, int64_t seq,
                           const CoreShape& shape, uint64_t seed, bool keep_outputs);

/// The bytes the kernel saves for backward beside q, k, v and out, f32: naive B·H·T²·4 (att),
/// flash B·H·T·4 (lse). \param attention the kernel. \param seq T. \param shape the heads.
/// \return bytes. \throws vramlab::UsageError on an overflow.
int64_t saved_bytes_formula(AttentionKind attention, int64_t seq, const CoreShape& shape);

/// The allocator peak run_attention_core must measure: every tensor of the op live at once in
/// backward, each rounded up to 512 bytes: q, k, v, out, dout, dq, dk, dv, the saved tensor and
/// the backward's scratch (the same size as the saved one).
/// \param attention the kernel. \param seq T. \param shape the heads. \return bytes.
int64_t attention_core_peak_formula(AttentionKind attention, int64_t seq, const CoreShape& shape);

/// \return max |a − b| over two equally long vectors (0 for empty ones).
/// \throws vramlab::InternalError when the lengths differ.
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);
/// \return max |a| (0 for an empty vector).
double max_abs(const std::vector<float>& a);

/// The small model both kernels train in the training comparison.
struct TrainSettings {
  ModelConfig model;            ///< the model (validated by the trainer).
  int64_t batch = 8;            ///< B.
  int64_t seq = 128;            ///< T.
  memory::Device device;        ///< where it trains.
  uint64_t seed = 1;            ///< weights and tokens: the same for both kernels.
  int64_t steps = 30;           ///< training steps (≥ 1).
  float learning_rate = 3e-3f;  ///< AdamW's step size.
};

/// One training run with one attention kernel.
struct TrainingRun {
  AttentionKind attention = AttentionKind::naive;  ///< which kernel.
  std::vector<double> losses;                      ///< per step (0 on meta).
  /// What block 0 kept after the forward, from the saved-activation store (requested bytes).
  int64_t layer_saved_bytes = 0;
  /// estimate::runtime_activation_bytes_per_layer for the same model, B, T, dtype and kernel.
  int64_t layer_saved_estimate = 0;
  /// What block 0 kept of its attention: att or lse (requested bytes).
  int64_t layer_attention_saved_bytes = 0;
  int64_t activation_peak_bytes = 0;  ///< step 1's store peak.
  double seconds = 0.0;               ///< wall time of all steps.
};

/// Trains settings.steps steps with \p attention on a fresh Runtime.
/// \param settings the model and the run. \param attention the kernel.
/// \return the run. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when the device is too small.
TrainingRun run_training(const TrainSettings& settings, AttentionKind attention);

/// \param a,b two runs of the same length. \return max over steps of |loss_a − loss_b|.
double max_loss_diff(const TrainingRun& a, const TrainingRun& b);

}  // namespace vramlab::lesson06
