// Known-wrong variant of exercise 01.5 (kept for `vramlab verify`, never linked into a lesson):
// asks for more than the device has. It runs out of memory with everything unused, but no
// arrangement of the memory could have served that request: it is not fragmentation.
// The exercise's tests must fail for it.
#include <string>

#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {

std::string fragmentation_trace() {
  return "alloc a 1MiB\nalloc everything 2GiB\n";
}

}  // namespace vramlab::lesson01
