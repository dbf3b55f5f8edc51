/// \file
/// \brief The error types every vramlab layer throws, and how the command line reports them.
///
/// A vramlab binary maps a UsageError to one line on stderr and exit code 2 (bad input), and any
/// other std::exception to exit code 1. Out-of-memory errors derive from std::runtime_error (see
/// common/memory/oom_error.h) and carry a PyTorch-format message. An InternalError is a bug in
/// vramlab (or in a learner's exercise code calling a kernel): it names the file and line of the
/// check that failed, so the message points at the broken contract rather than at the user.
#pragma once

#include <stdexcept>
#include <string>

#include "common/platform/source_location.h"

namespace vramlab {

/// Bad input from a user: a flag, a value, a file line. The message names the bad value.
/// Binaries turn it into one line on stderr and exit code 2.
struct UsageError : std::invalid_argument {
  /// \param message what was wrong, naming the offending value, e.g. "unknown dtype 'nope'".
  /// Its control characters other than newline are kept as `\xNN` text: the value named may come
  /// from a file, and what() is a C string, so a NUL in it would cut the message short (the
  /// fuzzers of tests/fuzz found such cuts in manifest ids and model names).
  explicit UsageError(const std::string& message) : std::invalid_argument(shown(message)) {}

 private:
  static std::string shown(const std::string& message) {
    std::string out;
    out.reserve(message.size());
    for (const char c : message) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\n') || byte == 0x7f) {
        constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[byte >> 4];
        out += kHex[byte & 0xf];
      } else {
        out += c;
      }
    }
    return out;
  }
};

/// A violated precondition inside vramlab (a kernel given a negative size, a token outside the
/// vocabulary, a tensor of the wrong dtype): a bug in the caller, not bad user input.
struct InternalError : std::logic_error {
  /// \param message what was violated, naming the values.
  /// \param where the check that failed (defaults to the caller's line).
  explicit InternalError(const std::string& message,
                         vramlab::source_location where = vramlab::source_location::current())
      : std::logic_error("internal error at " + std::string(where.file_name()) + ":" +
                         std::to_string(where.line()) + ": " + message) {}
};

/// Exit code for bad input (a UsageError or a command-line parse error).
inline constexpr int kExitUsage = 2;
/// Exit code for a run that failed at run time (for instance an out-of-memory during a replay).
inline constexpr int kExitFailure = 1;

}  // namespace vramlab
