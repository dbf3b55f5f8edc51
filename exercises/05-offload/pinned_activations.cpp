// Exercise 05.3 — YOUR CODE: the host memory activation offload pins.
//
// The API and its contract: lessons/05-offload/api/pinned_activations.h
// Check:  build/bin/vramlab check 05.3        Stuck:  build/bin/vramlab hint 05.3
#include "lessons/05-offload/api/pinned_activations.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson05 {

//! [stub]
int64_t pinned_activation_bytes([[maybe_unused]] const OffloadedActivations& forward) {
  // FILL ME IN (roughly 25 lines), rejecting a tensor of fewer than 1 byte or a span that does
  // not start with vramlab::UsageError (common/platform/errors.h): which tensors does each block
  // still hold when its forward ends, which of them leave the device, and what does the pinned
  // allocator hand out for each request?
  VRAMLAB_NOT_IMPLEMENTED("05.3");
}
//! [stub]

}  // namespace vramlab::lesson05
