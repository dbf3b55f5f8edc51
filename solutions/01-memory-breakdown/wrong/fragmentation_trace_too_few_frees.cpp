// Known-wrong variant of exercise 01.5, kept whole: it rewrites most of the function.
// Mistake: frees only every fourth tensor, so under 30% of the device is unused at the failure
// Caught by: FragmentationTrace.MoreThan30PercentHoldsNoTensorAtTheFailure
#include <string>

#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {

std::string fragmentation_trace() {
  constexpr int kSegments = 51, kPerSegment = 13;
  std::string trace;
  for (int i = 0; i < kSegments * kPerSegment; ++i)
    trace += "alloc t" + std::to_string(i) + " 1536KiB\n";
  for (int i = 0; i < kSegments * kPerSegment; ++i)
    if (i % 4 == 1) trace += "free t" + std::to_string(i) + "\n";
  trace += "alloc big 64MiB\n";
  return trace;
}

}  // namespace vramlab::lesson01
