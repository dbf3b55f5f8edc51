// Exercise 01.4 — YOUR CODE: predict the peak of every training step from the second on, from
// what the runtime measured during the first.
//
// The API and its contract: lessons/01-memory-breakdown/api/steady_state_peak.h
// See it happen:  build/bin/vramlab train --device meta --steps 3 (the per-step peaks)
// Check:  build/bin/vramlab check 01.4        Stuck:  build/bin/vramlab hint 01.4
#include "lessons/01-memory-breakdown/api/steady_state_peak.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson01 {

//! [stub]
int64_t predict_steady_state_peak([[maybe_unused]] const FirstStepMeasurement& first) {
  // FILL ME IN (roughly 10 lines): reject bad measurements with vramlab::UsageError
  // (common/platform/errors.h), then work out what step 2 holds that step 1 did not, and when.
  VRAMLAB_NOT_IMPLEMENTED("01.4");
}
//! [stub]

}  // namespace vramlab::lesson01
