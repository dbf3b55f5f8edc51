/// \file
/// \brief Lesson 09's measurements: one model trained with one optimizer on a fresh nn::Runtime,
/// the bytes its states really take (three ways: Optimizer::state_bytes(), the allocator's
/// optimizer_state blocks, the estimator), the losses, and for 8-bit AdamW how far its
/// quantised moments drift from the fp32 moments the same gradients would give.
///
/// The bytes are read from the allocator's snapshot after the last step: every live block with
/// its category, requested size and tensor name. Gradients are zeroed rather than released
/// between steps (TrainOptions::grads_to_none = false), so the snapshot holds the weights, the
/// gradients and every optimizer state at once, each exactly as requested.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/estimate/model_state_memory.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/plan/techniques.h"

namespace vramlab::lesson09 {

/// Every optimizer the runtime implements, in the order of the lesson's tables.
inline constexpr std::array<estimate::Optimizer, 7> kOptimizers = {
    estimate::Optimizer::sgd,      estimate::Optimizer::sgd_momentum,
    estimate::Optimizer::adamw,    estimate::Optimizer::adamw_8bit,
    estimate::Optimizer::lion,     estimate::Optimizer::adam_mini,
    estimate::Optimizer::adafactor};

/// One learning rate per optimizer family: each family's step means something different, so one
/// number for all would be wrong for most of them.
struct LearningRates {
  float adamw = 3e-3f;  ///< AdamW, and the drop-ins on its moments: 8-bit AdamW, Adam-mini.
  /// Lion's update is a sign, ±1 per element, larger than Adam's normalised step: the paper
  /// (Chen et al. 2023, §5) uses a learning rate 3–10x smaller than AdamW's.
  float lion = 1e-3f;
  /// Adafactor's ρ: a relative step, min(ρ, 1/√t) times RMS(parameter) (torch.optim.Adafactor's
  /// default 1e-2), not an absolute one.
  float adafactor = 1e-2f;
  float sgd = 1.0f;  ///< plain SGD: the raw gradient is small on a softmax head.
  /// With momentum 0.9 the step grows towards lr / (1 − 0.9) = 10 lr: a tenth of SGD's.
  float sgd_momentum = 0.1f;
};

/// \param rates the rates. \param optimizer one optimizer. \return its rate.
float learning_rate(const LearningRates& rates, estimate::Optimizer optimizer);

/// What one run trains.
struct RunSettings {
  ModelConfig model;                                ///< the model (validated by the trainer).
  int64_t batch = 8;                                ///< B.
  int64_t seq = 64;                                 ///< T.
  memory::Device device;                            ///< where it runs.
  uint64_t seed = 1;                                ///< weights and tokens: the same for every run.
  int64_t steps = 300;                              ///< optimizer steps (≥ 1).
  amp::Precision precision = amp::Precision::fp32;  ///< the training precision.
  plan::EightBitOptions eight_bit;                  ///< 8-bit AdamW's block size and exceptions.
  /// 8-bit AdamW only: compare its moments with the fp32 shadow every this many steps (and at the
  /// last step); 0 never (no shadow is kept).
  int64_t quantization_every = 0;
};

/// What one optimizer keeps, measured after the last step and predicted by the estimator.
struct StateBytes {
  int64_t parameter_count = 0;  ///< Ψ.
  int64_t state_bytes = 0;      ///< Optimizer::state_bytes(): moments, absmax and master.
  /// Σ requested bytes of the allocator's live optimizer_state blocks (the snapshot).
  int64_t allocator_requested = 0;
  /// The allocator's optimizer_state category: its blocks' rounded sizes (512-byte multiples).
  int64_t allocator_allocated = 0;
  int64_t allocator_blocks = 0;  ///< how many optimizer_state blocks (tensors) there are.
  int64_t parameter_bytes = 0;   ///< the parameter blocks' requested bytes.
  int64_t gradient_bytes = 0;    ///< the gradient blocks' requested bytes.
  int64_t master_bytes = 0;      ///< the fp32 master copy ("master weights"), mixed precision.
  int64_t absmax_bytes = 0;      ///< 8-bit AdamW's per-block fp32 scales.
  int64_t moment_bytes = 0;      ///< the other optimizer_state blocks: m, v, codes, factors.
  /// The estimator (estimate::estimate_memory) for the same model, precision and optimizer, before
  /// partitioning.
  estimate::ModelStateBytes estimate;
  /// The absmax part of estimate.optimizer_moments: 2 moments × 4 B × the layout's blocks.
  int64_t estimate_absmax_bytes = 0;

  /// \return every measured component equals the estimator's to the byte, and state_bytes()
  /// equals the allocator's requested optimizer_state bytes.
  [[nodiscard]] bool equals_estimate() const;
  /// \return state_bytes / Ψ.
  [[nodiscard]] double state_bytes_per_param() const;
  /// \return (weights + gradients + states) / Ψ.
  [[nodiscard]] double model_state_bytes_per_param() const;
};

/// 8-bit AdamW's moments at one step against the fp32 shadow's, over the quantised elements
/// (relative: ‖a − b‖₂ / ‖b‖₂, so a number near zero means the 8-bit state carries what fp32
/// would).
struct QuantizationPoint {
  int64_t step = 0;         ///< 1-based.
  double m_error = 0.0;     ///< dequantised m against the shadow's m.
  double v_error = 0.0;     ///< dequantised v against the shadow's v.
  double m_rounding = 0.0;  ///< one block-wise rounding of the shadow's m: the floor of m_error.
  double v_rounding = 0.0;  ///< the same for v.
  /// The bias-corrected direction m̂ / (√v̂ + ε) this step applied, against fp32 AdamW's on the
  /// same gradients. The kernel dequantises the stored states, mixes this step's gradient in in
  /// f32, updates the parameter and only then requantises: so the error is that of the states it
  /// started from (zero at step 1, which starts from zeros).
  double update_error = 0.0;
};

/// One run.
struct OptimizerRun {
  estimate::Optimizer optimizer = estimate::Optimizer::adamw;  ///< which optimizer.
  amp::Precision precision = amp::Precision::fp32;             ///< the training precision.
  float learning_rate = 0.0f;                                  ///< its step size.
  std::vector<double> losses;                                  ///< per step, nats (0 on meta).
  double seconds = 0.0;                                        ///< wall time of all steps.
  StateBytes bytes;                                            ///< after the last step.
  std::vector<QuantizationPoint> quantization;  ///< 8-bit AdamW with quantization_every > 0.
};

/// Trains settings.steps steps with \p optimizer on a fresh Runtime and reads what it keeps.
/// \param settings the run. \param optimizer the optimizer. \param learning_rate its step size.
/// \return the run. \throws vramlab::UsageError for bad settings; memory::OutOfMemoryError when
/// the device is too small.
OptimizerRun run_optimizer(const RunSettings& settings, estimate::Optimizer optimizer,
                           float learning_rate);

/// The estimator's model states for a model trained with \p optimizer in \p precision.
/// \param model the model. \param precision the precision. \param optimizer the optimizer.
/// \param eight_bit 8-bit AdamW's options. \return the unpartitioned model-state bytes.
/// \throws vramlab::UsageError for an invalid model.
estimate::ModelStateBytes estimated_model_states(const ModelConfig& model, amp::Precision precision,
                                                 estimate::Optimizer optimizer,
                                                 const plan::EightBitOptions& eight_bit);

/// \param losses per step. \return the mean of the last tenth of them (at least one): the loss a
/// run ends at, less noisy than its last step.
double final_loss(const std::vector<double>& losses);

/// ‖a − b‖₂ / ‖b‖₂ over two equally long vectors (0 when b is all zeros and a equals it).
/// \throws vramlab::InternalError when the lengths differ.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace vramlab::lesson09
