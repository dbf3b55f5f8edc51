// Known-wrong variant of exercise 01.5 (kept for `vramlab verify`, never linked into a lesson):
// gives every tensor its own segment and frees every other one, expecting the holes to fragment
// the device. On the failing request the allocator releases the empty cached segments and
// retries, so the trace never runs out of memory. The exercise's tests must fail for it.
#include <string>

#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {

std::string fragmentation_trace() {
  std::string trace;
  for (int i = 0; i < 25; ++i) trace += "alloc t" + std::to_string(i) + " 40MiB\n";  // 1000 MiB
  for (int i = 0; i < 25; i += 2) trace += "free t" + std::to_string(i) + "\n";
  trace += "alloc big 60MiB\n";
  return trace;
}

}  // namespace vramlab::lesson01
