// Exercise 01.3 — YOUR CODE: replay an allocation trace, find the peak of allocated bytes and the
// tensors live at its first moment.
//
// The API and the rounding rule: lessons/01-memory-breakdown/api/peak_from_trace.h
// Check:  build/bin/vramlab check 01.3        Stuck:  build/bin/vramlab hint 01.3
#include "lessons/01-memory-breakdown/api/peak_from_trace.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson01 {

//! [stub]
PeakReport find_peak([[maybe_unused]] const std::vector<TraceEvent>& trace) {
  // FILL ME IN (roughly 25 lines): keep the live tensors and the current allocated bytes,
  // update the peak when it is exceeded, reject bad events with vramlab::UsageError.
  VRAMLAB_NOT_IMPLEMENTED("01.3");
}
//! [stub]

}  // namespace vramlab::lesson01
