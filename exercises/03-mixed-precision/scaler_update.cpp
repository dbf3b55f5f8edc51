// Exercise 03.2 — YOUR CODE: GradScaler's dynamic loss scale, one update at a time and over a run.
//
// The API and its contract: lessons/03-mixed-precision/api/scaler_update.h
// Check:  build/bin/vramlab check 03.2        Stuck:  build/bin/vramlab hint 03.2
#include "lessons/03-mixed-precision/api/scaler_update.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson03 {

//! [stub]
ScalerState scaler_update([[maybe_unused]] ScalerState state, [[maybe_unused]] bool found_inf,
                          [[maybe_unused]] const ScalerConfig& config) {
  // FILL ME IN (roughly 25 lines): reject a bad config or state with vramlab::UsageError
  // (common/platform/errors.h), then back off or count the clean step, growing at the interval.
  VRAMLAB_NOT_IMPLEMENTED("03.2");
}

ScalerTrace scaler_trace([[maybe_unused]] const std::vector<bool>& found_inf,
                         [[maybe_unused]] const ScalerConfig& config) {
  // FILL ME IN (roughly 12 lines): record each step's scale and skip, then update.
  VRAMLAB_NOT_IMPLEMENTED("03.2");
}
//! [stub]

}  // namespace vramlab::lesson03
