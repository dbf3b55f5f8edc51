// Exercise 04.3 — YOUR CODE: the bytes of gathered parameters ZeRO-3 holds at each phase of a
// step, and their peak.
//
// The API and its contract: lessons/04-zero/api/zero3_schedule.h
// Check:  build/bin/vramlab check 04.3        Stuck:  build/bin/vramlab hint 04.3
#include "lessons/04-zero/api/zero3_schedule.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson04 {

//! [stub]
std::vector<int64_t> zero3_gathered_bytes_per_phase(
    [[maybe_unused]] const Zero3Schedule& schedule) {
  // FILL ME IN (roughly 40 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h): the padded bytes of each unit, then walk the phases, gathering
  // before and releasing after.
  VRAMLAB_NOT_IMPLEMENTED("04.3");
}

int64_t zero3_peak_gathered_bytes([[maybe_unused]] const Zero3Schedule& schedule) {
  // FILL ME IN (roughly 3 lines).
  VRAMLAB_NOT_IMPLEMENTED("04.3");
}
//! [stub]

}  // namespace vramlab::lesson04
