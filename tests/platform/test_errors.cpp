// vramlab::UsageError keeps all of a message that names a hostile value: what() is a C string, so
// a NUL inside would cut it short (the fuzzers of tests/fuzz found such cuts), and an escape
// sequence would drive the terminal. Control characters become \xNN text; newline, printable ASCII
// and UTF-8 stay as they are.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/platform/errors.h"

namespace vramlab {
namespace {

TEST(UsageError, EveryControlCharacterButNewlineIsShownAsHexAndNothingIsCut) {
  for (int byte = 0; byte < 256; ++byte) {
    const std::string value(1, static_cast<char>(byte));
    const std::string message = "unknown model 'a" + value + "b' (expected gpt2)";
    std::string expected_value = value;
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      expected_value = hex;
    }
    EXPECT_EQ(std::string(UsageError(message).what()),
              "unknown model 'a" + expected_value + "b' (expected gpt2)")
        << "byte " << byte;
  }
}

TEST(UsageError, AMessageWithoutControlCharactersIsKeptAsGiven) {
  const std::string message = "invalid size '1.5 ÉiB' (expected bytes, e.g. 4096, or 5MiB)\nline 2";
  EXPECT_EQ(std::string(UsageError(message).what()), message);
  EXPECT_EQ(std::string(UsageError("").what()), "");
}

}  // namespace
}  // namespace vramlab
