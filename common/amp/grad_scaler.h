/// \file
/// \brief GradScaler: dynamic loss scaling with torch.amp.GradScaler's semantics and defaults, and
/// the static and disabled variants `--loss-scale` selects.
///
/// fp16's smallest subnormal is 2^-24 ≈ 6e-8: smaller gradient values flush to zero (Micikevicius
/// et al. 2018, §3.2). Multiplying the loss by S shifts every gradient of the backward pass up by
/// log2 S binades; the optimizer then multiplies by 1/S. PyTorch's rule
/// (torch/amp/grad_scaler.py, `_amp_update_scale_`):
///
///     update(found_inf): if found_inf: scale *= backoff_factor; tracker = 0
///                        else: t = tracker + 1
///                              if t == growth_interval: if isfinite(scale * growth_factor):
///                                                           scale *= growth_factor
///                                                       tracker = 0
///                              else: tracker = t
///
/// and a step whose gradients hold an inf or NaN is skipped. The stage checks follow PyTorch's
/// (unscale twice before an update, or an update without an unscale, is an error), because those
/// are the mistakes an accumulation loop makes: one unscale per optimizer step, not per micro-batch.
#pragma once

#include <cstdint>

#include "common/amp/loss_scale_spec.h"

namespace vramlab::amp {

/// torch.amp.GradScaler's constructor arguments, with its defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;    ///< 2^16
  double growth_factor = 2.0;     ///< × after growth_interval clean steps
  double backoff_factor = 0.5;    ///< × on an inf/NaN
  int64_t growth_interval = 2000; ///< clean steps before a growth
};

/// One optimizer step's loss scaling: scale the loss, check the gradients, step or skip, update.
class GradScaler {
 public:
  /// A dynamic scaler (PyTorch's GradScaler). \throws vramlab::UsageError naming a bad option
  /// (scale ≤ 0 or non-finite, growth ≤ 1, backoff outside (0, 1), interval < 1).
  explicit GradScaler(const GradScalerOptions& options = {});
  /// From `--loss-scale`: dynamic (default options), static:S (scale fixed at S, inf steps still
  /// skipped) or none (scale 1, no check, no step ever skipped).
  explicit GradScaler(const LossScaleSpec& spec);

  /// \return the scale the next backward multiplies the loss by (1 when disabled).
  [[nodiscard]] double scale() const { return scale_; }
  /// \return float(1 / double(scale)), what PyTorch multiplies gradients by.
  [[nodiscard]] float inverse_scale() const;
  /// \return clean steps since the last growth or backoff.
  [[nodiscard]] int64_t growth_tracker() const { return growth_tracker_; }
  /// \return false for `--loss-scale none`: no scale, no check.
  [[nodiscard]] bool enabled() const { return kind_ != LossScaleKind::none; }
  /// \return the kind it was built as.
  [[nodiscard]] LossScaleKind kind() const { return kind_; }

  /// Records the inf/NaN check of this step's gradients (PyTorch's unscale_). \param found_inf
  /// whether any unscaled gradient is inf or NaN. \throws std::logic_error when called twice
  /// before update(): "unscale_() has already been called on this optimizer since the last
  /// update()."
  void unscale(bool found_inf);
  /// \return true when the optimizer may step: the check found no inf/NaN (always true when
  /// disabled). \throws std::logic_error before unscale() on an enabled scaler.
  [[nodiscard]] bool should_step() const;
  /// Applies the update rule to the recorded check (a no-op for static and none) and readies the
  /// next step. \throws std::logic_error without a prior unscale() on an enabled scaler ("No inf
  /// checks were recorded prior to update.").
  void update();

 private:
  LossScaleKind kind_ = LossScaleKind::dynamic;
  GradScalerOptions options_;
  double scale_ = 65536.0;
  int64_t growth_tracker_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
};

}  // namespace vramlab::amp
