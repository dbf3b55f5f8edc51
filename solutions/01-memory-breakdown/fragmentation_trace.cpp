// Reference solution of exercise 01.5: an allocation trace that fragments the caching allocator
// (lessons/01-memory-breakdown/api/fragmentation_trace.h).
#include <string>

#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {

//! [reference]
std::string fragmentation_trace() {
  // Requests between 1 MiB and 10 MiB share 20 MiB large-pool segments (kLargeBuffer): 13 tensors
  // of 1.5 MiB fill one. 51 segments fill the 1 GiB device (1020 MiB).
  constexpr int kSegments = 51, kPerSegment = 13;
  std::string trace = "# fill the device: 51 segments of 20 MiB, 13 tensors of 1.5 MiB each\n";
  for (int i = 0; i < kSegments * kPerSegment; ++i)
    trace += "alloc t" + std::to_string(i) + " 1536KiB\n";
  // Keep one tensor per segment: no segment becomes empty, so none can be released to the
  // device, and each keeps 18.5 MiB reserved but unallocated.
  trace += "# free all but one tensor per segment\n";
  for (int i = 0; i < kSegments * kPerSegment; ++i)
    if (i % kPerSegment != 0) trace += "free t" + std::to_string(i) + "\n";
  // 76.5 MiB of tensors are live, 947.5 MiB unused; 64 MiB fits in no cached block (each
  // segment's free part is 18.5 MiB) and the device has 4 MiB left for a new segment.
  trace += "alloc big 64MiB\n";
  return trace;
}
//! [reference]

}  // namespace vramlab::lesson01
