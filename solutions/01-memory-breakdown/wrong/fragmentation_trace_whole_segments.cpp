// Known-wrong variant of exercise 01.5, kept whole: it rewrites most of the function.
// Mistake: gives each tensor its own segment and frees every other one: the allocator releases the
//   empty segments and retries, so nothing fails
// Caught by: FragmentationTrace.RunsOutOfMemoryOnTheSimulatedDevice
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
