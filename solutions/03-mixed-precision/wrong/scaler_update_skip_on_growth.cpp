// Known-wrong variant of exercise 03.2 (kept for `vramlab verify`, never linked into a lesson):
// marks a step skipped whenever the update changes the scale, growth included, though a grown step
// did reach the optimizer.
// The exercise's tests must fail for it.
#include <cmath>
#include <string>

#include "common/platform/errors.h"
#include "lessons/03-mixed-precision/api/scaler_update.h"

namespace vramlab::lesson03 {

namespace {

std::string str(float v) {
  return std::to_string(v);
}

void require_config(const ScalerConfig& config) {
  if (!(std::isfinite(config.init_scale) && config.init_scale > 0.0f))
    throw UsageError("GradScaler init_scale must be finite and > 0, got " + str(config.init_scale));
  if (!(std::isfinite(config.growth_factor) && config.growth_factor > 1.0f))
    throw UsageError("GradScaler growth_factor must be finite and > 1, got " +
                     str(config.growth_factor));
  if (!(config.backoff_factor > 0.0f && config.backoff_factor < 1.0f))
    throw UsageError("GradScaler backoff_factor must be in (0, 1), got " +
                     str(config.backoff_factor));
  if (config.growth_interval < 1)
    throw UsageError("GradScaler growth_interval must be >= 1, got " +
                     std::to_string(config.growth_interval));
}

}  // namespace

ScalerState scaler_update(ScalerState state, bool found_inf, const ScalerConfig& config) {
  require_config(config);
  if (!(std::isfinite(state.scale) && state.scale >= 0.0f))
    throw UsageError("GradScaler scale must be finite and >= 0, got " + str(state.scale));
  if (state.growth_tracker < 0 || state.growth_tracker >= config.growth_interval)
    throw UsageError("GradScaler growth_tracker must be in [0, " +
                     std::to_string(config.growth_interval) + "), got " +
                     std::to_string(state.growth_tracker));
  if (found_inf) {
    // The overflowing step is skipped, and the clean-step count starts over.
    return ScalerState{state.scale * config.backoff_factor, 0};
  }
  const int64_t clean_steps = state.growth_tracker + 1;
  if (clean_steps < config.growth_interval) return ScalerState{state.scale, clean_steps};
  // The product in f32, as PyTorch's kernel computes it: a scale near 3.4e38 would become inf,
  // and an infinite scale would turn every later gradient into inf or NaN; it stays instead.
  const float grown = state.scale * config.growth_factor;
  return ScalerState{std::isfinite(grown) ? grown : state.scale, 0};
}

ScalerTrace scaler_trace(const std::vector<bool>& found_inf, const ScalerConfig& config) {
  require_config(config);
  ScalerTrace trace;
  ScalerState state{config.init_scale, 0};
  for (const bool inf : found_inf) {
    trace.scale.push_back(state.scale);  // the loss of this step was multiplied by it
    const float before = state.scale;
    state = scaler_update(state, inf, config);
    // The mistake: a changed scale is taken for a skipped step.
    const bool skipped = inf || state.scale != before;
    trace.skipped.push_back(skipped);
    if (!skipped) ++trace.optimizer_steps;
  }
  trace.final_state = state;
  return trace;
}

}  // namespace vramlab::lesson03
