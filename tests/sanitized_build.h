#pragma once
// Whether a test binary was built with AddressSanitizer and UndefinedBehaviorSanitizer (the asan
// preset, VRAMLAB_SANITIZE), for the few tests that size their work by it.

#include <gtest/gtest.h>

namespace vramlab::test_build {

// The sanitizers check every memory access: the runtime runs several times slower under them.
#if defined(VRAMLAB_SANITIZE)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace vramlab::test_build

// Skips a test under the sanitizers when its point is a long run's numbers or a large input's
// size, not memory safety: the Release suite runs it, and the sanitizer suite runs the same code
// through the smaller cases that `why` names. GoogleTest reports the skip and its reason, and ctest
// lists the test as not run. The empty branch keeps an `else` after the macro from binding to it.
#define VRAMLAB_SKIP_UNDER_SANITIZERS(why)                                                         \
  if (!::vramlab::test_build::kSanitized) {                                                        \
  } else                                                                                           \
    GTEST_SKIP() << "skipped under the sanitizers (the Release suite runs it; the same code runs " \
                    "here through "                                                                \
                 << why << ")"
