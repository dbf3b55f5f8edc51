// Exercise 07.4 — YOUR CODE: the training phase in which reserved − allocated (the memory the
// allocator holds that no tensor uses) is largest, from a recording's trace.
//
// The API and its contract: lessons/07-profiling/api/fragmentation_by_phase.h
// Check:  build/bin/vramlab check 07.4        Stuck:  build/bin/vramlab hint 07.4
#include "lessons/07-profiling/api/fragmentation_by_phase.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson07 {

//! [stub]
std::vector<PhaseGap> fragmentation_by_phase([[maybe_unused]] const profile::Recording& recording) {
  // FILL ME IN (roughly 50 lines), rejecting a snapshot out of the schema with
  // vramlab::UsageError (common/platform/errors.h): allocated and reserved at the end, what the
  // trace added to each, then the gap after every entry charged to the phase running then.
  VRAMLAB_NOT_IMPLEMENTED("07.4");
}
//! [stub]

}  // namespace vramlab::lesson07
