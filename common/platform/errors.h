/// \file
/// \brief The error types every vramlab layer throws, and how the command line reports them.
///
/// A vramlab binary maps a UsageError to one line on stderr and exit code 2 (bad input), and any
/// other std::exception to exit code 1. Out-of-memory errors derive from std::runtime_error (see
/// common/memory/oom_error.h) and carry a PyTorch-format message.
#pragma once

#include <stdexcept>
#include <string>

namespace vramlab {

/// Bad input from a user: a flag, a value, a file line. The message names the bad value.
/// Binaries turn it into one line on stderr and exit code 2.
struct UsageError : std::invalid_argument {
  /// \param message what was wrong, naming the offending value, e.g. "unknown dtype 'nope'".
  explicit UsageError(const std::string& message) : std::invalid_argument(message) {}
};

/// Exit code for bad input (a UsageError or a command-line parse error).
inline constexpr int kExitUsage = 2;
/// Exit code for a run that failed at run time (for instance an out-of-memory during a replay).
inline constexpr int kExitFailure = 1;

}  // namespace vramlab
