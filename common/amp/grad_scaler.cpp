// GradScaler (see grad_scaler.h).
#include "common/amp/grad_scaler.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/platform/errors.h"

namespace vramlab::amp {

namespace {

void require(bool ok, const char* what, double value) {
  if (ok) return;
  std::ostringstream text;
  text << "GradScaler: " << what << " = " << value;
  throw UsageError(text.str());
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), scale_(options.init_scale) {
  require(std::isfinite(options.init_scale) && options.init_scale > 0,
          "init_scale must be finite and > 0, got init_scale", options.init_scale);
  require(options.growth_factor > 1 && std::isfinite(options.growth_factor),
          "growth_factor must be > 1, got growth_factor", options.growth_factor);
  require(options.backoff_factor > 0 && options.backoff_factor < 1,
          "backoff_factor must be in (0, 1), got backoff_factor", options.backoff_factor);
  require(options.growth_interval >= 1, "growth_interval must be >= 1, got growth_interval",
          static_cast<double>(options.growth_interval));
}

GradScaler::GradScaler(const LossScaleSpec& spec) : GradScaler(GradScalerOptions{}) {
  kind_ = spec.kind;
  if (spec.kind == LossScaleKind::fixed) {
    require(std::isfinite(spec.value) && spec.value > 0,
            "a static loss scale must be finite and > 0, got", spec.value);
    scale_ = spec.value;
  } else if (spec.kind == LossScaleKind::none) {
    scale_ = 1.0;
  }
}

float GradScaler::inverse_scale() const { return static_cast<float>(1.0 / scale_); }

void GradScaler::unscale(bool found_inf) {
  if (!enabled()) return;
  if (unscaled_)
    throw std::logic_error(
        "unscale_() has already been called on this optimizer since the last update().");
  unscaled_ = true;
  found_inf_ = found_inf;
}

bool GradScaler::should_step() const {
  if (!enabled()) return true;
  if (!unscaled_) throw std::logic_error("GradScaler: should_step() before unscale()");
  return !found_inf_;
}

void GradScaler::update() {
  if (!enabled()) return;
  if (!unscaled_) throw std::logic_error("No inf checks were recorded prior to update.");
  unscaled_ = false;
  if (kind_ != LossScaleKind::dynamic) return;
  // PyTorch keeps the scale in an fp32 tensor: every update rounds to fp32 (a long run of
  // overflows ends at 0, as there).
  if (found_inf_) {
    scale_ = static_cast<float>(scale_ * options_.backoff_factor);
    growth_tracker_ = 0;
    return;
  }
  const int64_t t = growth_tracker_ + 1;
  if (t == options_.growth_interval) {
    // PyTorch computes the grown scale in fp32 and keeps the old one if it is not finite.
    const auto grown = static_cast<float>(scale_ * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    growth_tracker_ = t;
  }
}

}  // namespace vramlab::amp
