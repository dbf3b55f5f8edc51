// Known-wrong variant of exercise 03.4 (kept for `vramlab verify`, never linked into a lesson):
// takes 65536 as the bound of f16's finite range, though everything from 65520 up rounds to
// infinity.
// The exercise's tests must fail for it.
#include <cmath>
#include <sstream>
#include <string>

#include "common/platform/errors.h"
#include "lessons/03-mixed-precision/api/static_loss_scale.h"

namespace vramlab::lesson03 {

namespace {

void require_gradient(float max_abs_grad) {
  if (!(std::isfinite(max_abs_grad) && max_abs_grad > 0.0f)) {
    std::ostringstream message;
    message.precision(9);  // every f32 in full, so 1e-30 is not shown as 0.000000
    message << "max |g| must be finite and > 0, got " << max_abs_grad;
    throw UsageError(message.str());
  }
}

// The exponent k of the largest safe scale 2^k. The mistake: 2^k · g < 65536 taken as the
// bound, though everything from 65520 up rounds to infinity.
int largest_safe_exponent(float max_abs_grad) {
  require_gradient(max_abs_grad);
  int e = 0;
  const float m = std::frexp(max_abs_grad, &e);
  (void)m;
  return 16 - e;
}

}  // namespace

double largest_safe_loss_scale(float max_abs_grad) {
  return std::ldexp(1.0, largest_safe_exponent(max_abs_grad));
}

int64_t gradscaler_backoffs(float max_abs_grad) {
  // Each overflowing step halves the scale; 2^16 overflows exactly when 16 > k.
  const int k = largest_safe_exponent(max_abs_grad);
  return k < 16 ? 16 - k : 0;
}

}  // namespace vramlab::lesson03
