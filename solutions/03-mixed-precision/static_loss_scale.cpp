// Reference solution of exercise 03.4: the largest safe static loss scale and GradScaler's
// backoffs (lessons/03-mixed-precision/api/static_loss_scale.h).
#include <cmath>
#include <sstream>
#include <string>

#include "common/platform/errors.h"
#include "lessons/03-mixed-precision/api/static_loss_scale.h"

namespace vramlab::lesson03 {

//! [reference]
namespace {

void require_gradient(float max_abs_grad) {
  if (!(std::isfinite(max_abs_grad) && max_abs_grad > 0.0f)) {
    std::ostringstream message;
    message.precision(9);  // every f32 in full, so 1e-30 is not shown as 0.000000
    message << "max |g| must be finite and > 0, got " << max_abs_grad;
    throw UsageError(message.str());
  }
}

// The exponent k of the largest safe scale 2^k. With g = m · 2^e (m in [0.5, 1), std::frexp),
// 2^k · g < 65520 = (4095/4096) · 2^16 holds for k + e = 16 exactly when m < 4095/4096; for
// m in [4095/4096, 1) only k + e = 15 is safe. Exact: no logarithm, no rounding.
int largest_safe_exponent(float max_abs_grad) {
  require_gradient(max_abs_grad);
  int e = 0;
  const float m = std::frexp(max_abs_grad, &e);
  return (m < 4095.0f / 4096.0f ? 16 : 15) - e;
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
//! [reference]

}  // namespace vramlab::lesson03
