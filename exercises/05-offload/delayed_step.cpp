// Exercise 05.2 — YOUR CODE: how long a step with the delayed parameter update takes.
//
// The API and its contract: lessons/05-offload/api/delayed_step.h
// Check:  build/bin/vramlab check 05.2        Stuck:  build/bin/vramlab hint 05.2
#include "lessons/05-offload/api/delayed_step.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson05 {

//! [stub]
double delayed_step_seconds([[maybe_unused]] const DelayedStep& step) {
  // FILL ME IN (roughly 20 lines), rejecting a bad link, a bad update time or a negative byte
  // count with vramlab::UsageError (common/platform/errors.h): what does each copy wait for now
  // that the update runs beside the step, and in what order do the copies go?
  VRAMLAB_NOT_IMPLEMENTED("05.2");
}
//! [stub]

}  // namespace vramlab::lesson05
