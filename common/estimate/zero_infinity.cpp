// ZeRO-Infinity's memory and efficiency models (zero_infinity.h): the paper's formulas, in 64-bit
// integers where they count bytes (its 100T-parameter row has 2·10^15 bytes of model states).
#include "common/estimate/zero_infinity.h"

#include <cmath>
#include <string>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate::zero_infinity {
namespace {

void require_shape(const Shape& shape) {
  require_positive(shape.layers, "layers");
  require_positive(shape.hidden, "hidden");
  require_positive(shape.heads, "heads");
}

int64_t hidden_squared(const Shape& shape) {
  require_shape(shape);
  return checked_mul(shape.hidden, shape.hidden, "hidden squared");
}

// bsz·seq: the tokens of one step.
int64_t tokens(int64_t batch, int64_t seq) {
  require_positive(batch, "batch");
  require_positive(seq, "seq");
  return checked_mul(batch, seq, "tokens");
}

void require_finite_non_negative(double value, const char* what) {
  if (!std::isfinite(value) || value < 0.0)
    throw UsageError(std::string(what) + " = " + std::to_string(value) +
                     " must be finite and non-negative");
}

}  // namespace

int64_t parameters(const Shape& shape) {
  return checked_mul(checked_mul(12, shape.layers, "parameters"), hidden_squared(shape),
                     "parameters");
}

int64_t model_state_bytes(const Shape& shape) {
  return checked_mul(20, parameters(shape), "model state bytes");
}

int64_t activation_checkpoint_bytes(const Shape& shape, int64_t batch, int64_t seq, int64_t ci) {
  require_shape(shape);
  require_positive(ci, "ci");
  const int64_t per_checkpoint = checked_mul(checked_mul(2, tokens(batch, seq), "checkpoint bytes"),
                                             shape.hidden, "checkpoint bytes");
  // One checkpoint per ci of the nl blocks; the paper divides, so a partial span counts its share.
  return checked_mul(per_checkpoint, shape.layers, "checkpoint bytes") / ci;
}

int64_t model_state_working_bytes(const Shape& shape) {
  return checked_mul(16, hidden_squared(shape), "model state working bytes");
}

int64_t activation_working_bytes(const Shape& shape, int64_t batch, int64_t seq, int64_t ci) {
  require_shape(shape);
  require_positive(ci, "ci");
  const int64_t per_token =
      checked_add(checked_mul(16, shape.hidden, "activation working bytes"),
                  checked_mul(checked_mul(2, shape.heads, "activation working bytes"), seq,
                              "activation working bytes"),
                  "activation working bytes");
  return checked_mul(checked_mul(tokens(batch, seq), ci, "activation working bytes"), per_token,
                     "activation working bytes");
}

int64_t full_activation_bytes(const Shape& shape, int64_t batch, int64_t seq) {
  return checked_mul(checked_mul(2, shape.layers, "activation bytes"),
                     activation_working_bytes(shape, batch, seq, 1), "activation bytes");
}

double parameter_gradient_intensity(int64_t batch, int64_t seq) {
  return static_cast<double>(tokens(batch, seq));
}

double optimizer_state_intensity(int64_t batch, int64_t seq) {
  return static_cast<double>(tokens(batch, seq)) / 4.0;
}

double offloaded_optimizer_intensity(int64_t batch, int64_t seq, bool recompute) {
  return (recompute ? 8.0 : 6.0) * static_cast<double>(tokens(batch, seq)) / 4.0;
}

double activation_checkpoint_intensity(int64_t hidden, int64_t ci) {
  require_positive(hidden, "hidden");
  require_positive(ci, "ci");
  return 24.0 * static_cast<double>(hidden) * static_cast<double>(ci);
}

double efficiency(double ait, double bytes_per_s, double peak_flops) {
  require_finite_non_negative(ait, "arithmetic intensity");
  require_finite_non_negative(bytes_per_s, "bandwidth");
  require_finite_non_negative(peak_flops, "peak FLOP/s");
  const double moved = ait * bytes_per_s;  // FLOP/s the link can feed
  if (!std::isfinite(moved) || moved + peak_flops <= 0.0)
    throw UsageError("efficiency: ait · bandwidth + peak must be finite and positive");
  return moved / (moved + peak_flops);
}

double bandwidth_for_efficiency(double ait, double peak_flops, double fraction) {
  if (!std::isfinite(ait) || ait <= 0.0 || !std::isfinite(peak_flops) || peak_flops <= 0.0)
    throw UsageError("bandwidth_for_efficiency: ait and peak must be positive and finite");
  if (!(fraction >= 0.0 && fraction < 1.0))
    throw UsageError("efficiency fraction = " + std::to_string(fraction) + " must be in [0, 1)");
  return fraction * peak_flops / (ait * (1.0 - fraction));
}

}  // namespace vramlab::estimate::zero_infinity
