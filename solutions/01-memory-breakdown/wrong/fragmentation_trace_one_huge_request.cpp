// Known-wrong variant of exercise 01.5, kept whole: it rewrites most of the function.
// Mistake: asks for more than the device has: out of memory, but not fragmentation
// Caught by: FragmentationTrace.TheFailingRequestIsSmallerThanTheUnusedMemory
#include <string>

#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {

std::string fragmentation_trace() {
  return "alloc a 1MiB\nalloc everything 2GiB\n";
}

}  // namespace vramlab::lesson01
