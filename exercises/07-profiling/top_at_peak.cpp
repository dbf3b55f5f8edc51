// Exercise 07.1 — YOUR CODE: replay a snapshot's trace to its peak and return the k largest
// allocations live there, with the module, phase and tensor that own them.
//
// The API and its contract: lessons/07-profiling/api/top_at_peak.h
// Check:  build/bin/vramlab check 07.1        Stuck:  build/bin/vramlab hint 07.1
#include "lessons/07-profiling/api/top_at_peak.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson07 {

//! [stub]
TopAtPeak top_at_peak([[maybe_unused]] const nlohmann::json& snapshot,
                      [[maybe_unused]] std::size_t k) {
  // FILL ME IN (roughly 60 lines), rejecting a snapshot without "segments" or "device_traces"
  // with vramlab::UsageError (common/platform/errors.h): what was live before the first entry,
  // the live bytes after every entry and the first largest, then the live set at that entry.
  VRAMLAB_NOT_IMPLEMENTED("07.1");
}
//! [stub]

}  // namespace vramlab::lesson07
