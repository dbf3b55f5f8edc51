// Exercise 05.1 — YOUR CODE: the copy time an offloaded step cannot hide.
//
// The API and its contract: lessons/05-offload/api/exposed_copies.h
// Check:  build/bin/vramlab check 05.1        Stuck:  build/bin/vramlab hint 05.1
#include "lessons/05-offload/api/exposed_copies.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson05 {

//! [stub]
double exposed_copy_seconds([[maybe_unused]] const OffloadedStep& step) {
  // FILL ME IN (roughly 15 lines), rejecting a bad link or a negative byte count with
  // vramlab::UsageError (common/platform/errors.h): when does each copy start and end, when is
  // the last gradient on the host, and what waits for what after the backward?
  VRAMLAB_NOT_IMPLEMENTED("05.1");
}
//! [stub]

}  // namespace vramlab::lesson05
