// Exercise 07.3 — YOUR CODE: the leak from two snapshots: which owners hold more blocks or more
// bytes in the second, and by how much per step.
//
// The API and its contract: lessons/07-profiling/api/leak_finder.h
// Check:  build/bin/vramlab check 07.3        Stuck:  build/bin/vramlab hint 07.3
#include "lessons/07-profiling/api/leak_finder.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson07 {

//! [stub]
std::vector<OwnerGrowth> leaked_owners([[maybe_unused]] const nlohmann::json& before,
                                       [[maybe_unused]] const nlohmann::json& after,
                                       [[maybe_unused]] std::int64_t steps_between) {
  // FILL ME IN (roughly 40 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h): what each snapshot holds per owner, the owners that grew, and
  // their order.
  VRAMLAB_NOT_IMPLEMENTED("07.3");
}
//! [stub]

}  // namespace vramlab::lesson07
