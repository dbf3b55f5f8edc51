// Exercise 01.5 — YOUR CODE: an allocation trace that runs out of memory on a 1 GiB simulated GPU
// while more than 30% of it holds no tensor.
//
// The API and its contract: lessons/01-memory-breakdown/api/fragmentation_trace.h
// Try a trace by hand:  build/bin/vramlab alloc my.trace --device sim:1GiB --summary
// Check:  build/bin/vramlab check 01.5        Stuck:  build/bin/vramlab hint 01.5
#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson01 {

//! [stub]
std::string fragmentation_trace() {
  // FILL ME IN (roughly 15 lines): build the trace text line by line ("alloc NAME SIZE",
  // "free NAME"), for example with a std::string and loops.
  VRAMLAB_NOT_IMPLEMENTED("01.5");
}
//! [stub]

}  // namespace vramlab::lesson01
