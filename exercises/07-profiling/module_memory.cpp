// Exercise 07.2 — YOUR CODE: memory per module from a recording's event history, charged to the
// module that allocated it, beside the naive number that charges frees to whoever ran them.
//
// The API and its contract: lessons/07-profiling/api/module_memory.h
// Check:  build/bin/vramlab check 07.2        Stuck:  build/bin/vramlab hint 07.2
#include "lessons/07-profiling/api/module_memory.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson07 {

//! [stub]
std::vector<ModuleMemory> memory_per_module([[maybe_unused]] const profile::Recording& recording) {
  // FILL ME IN (roughly 70 lines), rejecting a snapshot out of the schema with
  // vramlab::UsageError (common/platform/errors.h): the module running at an entry's time, the
  // two attributions of every alloc and free_requested, then the live set at the peak by the
  // module that allocated it (your 07.1, top_at_peak(snapshot, SIZE_MAX), finds it).
  VRAMLAB_NOT_IMPLEMENTED("07.2");
}
//! [stub]

}  // namespace vramlab::lesson07
