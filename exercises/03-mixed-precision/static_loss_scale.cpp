// Exercise 03.4 — YOUR CODE: the largest static loss scale whose f16 gradients stay finite, and
// GradScaler's backoffs to reach it.
//
// The API and its contract: lessons/03-mixed-precision/api/static_loss_scale.h
// Check:  build/bin/vramlab check 03.4        Stuck:  build/bin/vramlab hint 03.4
#include "lessons/03-mixed-precision/api/static_loss_scale.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson03 {

//! [stub]
double largest_safe_loss_scale([[maybe_unused]] float max_abs_grad) {
  // FILL ME IN (roughly 10 lines): reject bad input with vramlab::UsageError
  // (common/platform/errors.h), then find the exponent of the largest safe power of two.
  VRAMLAB_NOT_IMPLEMENTED("03.4");
}

int64_t gradscaler_backoffs([[maybe_unused]] float max_abs_grad) {
  // FILL ME IN (roughly 5 lines).
  VRAMLAB_NOT_IMPLEMENTED("03.4");
}
//! [stub]

}  // namespace vramlab::lesson03
