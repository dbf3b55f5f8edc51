// Known-wrong variant of exercise 01.5 (kept for `vramlab verify`, never linked into a lesson):
// fragments the right segments but frees only every fourth tensor, so at the failure less than
// 30% of the device holds no tensor. The exercise's tests must fail for it.
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
