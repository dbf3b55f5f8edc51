/// \file
/// \brief Exercise 03.2: the dynamic loss scale of PyTorch's GradScaler, as a state machine.
///
/// The one API shared by the stub (exercises/03-mixed-precision/scaler_update.cpp) and the
/// reference (solutions/03-mixed-precision/scaler_update.cpp). Mixed-precision training in f16
/// multiplies the loss by a scale S before backward so that small gradients do not underflow,
/// divides the gradients by S before the optimizer step, and adapts S after every step. The rule
/// is that of `torch.amp.GradScaler.update()` and its kernel `_amp_update_scale_`
/// (aten/src/ATen/native/cuda/AmpKernels.cu), with the scale held in an f32 as PyTorch holds it:
///
///     if found_inf:  scale = scale · backoff_factor;  growth_tracker = 0
///     else:          t = growth_tracker + 1
///                    if t == growth_interval:
///                        grown = scale · growth_factor   (an f32 product)
///                        if grown is finite: scale = grown
///                        growth_tracker = 0
///                    else:
///                        growth_tracker = t
///
/// found_inf says whether any unscaled gradient of the step held an inf or a NaN; such a step
/// does not reach the optimizer (`scaler.step(optimizer)` skips `optimizer.step()`), and the
/// update then shrinks the scale. The scale a step multiplies its loss by is the one before that
/// step's update.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::lesson03 {

/// GradScaler's constructor arguments, with its defaults.
struct ScalerConfig {
  float init_scale = 65536.0f;     ///< the first step's scale, 2^16 (finite, > 0).
  float growth_factor = 2.0f;      ///< applied after growth_interval clean steps (finite, > 1).
  float backoff_factor = 0.5f;     ///< applied after a step with an inf or NaN (in (0, 1)).
  int64_t growth_interval = 2000;  ///< clean steps in a row before the scale grows (≥ 1).
};

/// What GradScaler carries from one step to the next (its `_scale` and `_growth_tracker`).
struct ScalerState {
  float scale = 65536.0f;      ///< the scale the next step multiplies its loss by.
  int64_t growth_tracker = 0;  ///< clean steps since the last growth or overflow.
};

/// Exercise 03.2: one update, after a step (see the file comment).
/// \param state the scaler before the update (scale finite and ≥ 0: about 170 backoffs in a row
///        underflow an f32 scale to 0, in PyTorch too; tracker in [0, growth_interval)).
/// \param found_inf whether the step's gradients held an inf or a NaN.
/// \param config the factors and the interval.
/// \return the scaler after the update.
/// \throws vramlab::UsageError naming the value for a config outside the ranges of ScalerConfig
///         or a state outside the ranges above.
ScalerState scaler_update(ScalerState state, bool found_inf, const ScalerConfig& config);

/// A training run's loss scales, step by step.
struct ScalerTrace {
  std::vector<float> scale;     ///< (steps) the scale each step multiplied its loss by.
  std::vector<bool> skipped;    ///< (steps) whether the step's optimizer.step() was skipped.
  int64_t optimizer_steps = 0;  ///< steps that reached the optimizer.
  ScalerState final_state;      ///< the scaler after the last step's update.
};

/// Exercise 03.2: runs a fresh GradScaler (scale config.init_scale, tracker 0) over a run.
/// \param found_inf (steps) per step, whether its gradients held an inf or a NaN.
/// \param config the factors and the interval.
/// \return the scale and the skip of every step, and the scaler at the end.
/// \throws vramlab::UsageError naming the value for a config outside the ranges of ScalerConfig.
ScalerTrace scaler_trace(const std::vector<bool>& found_inf, const ScalerConfig& config);

}  // namespace vramlab::lesson03
