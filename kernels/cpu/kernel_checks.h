/// \file
/// \brief Argument checks shared by the CPU and CUDA kernels. A kernel's arguments come from the
/// runtime (or a learner's code), never straight from a user, so a violated precondition is a bug:
/// it throws vramlab::InternalError naming the bad value and the file and line of the kernel's
/// check, before any parallel region starts (exceptions must not leave OpenMP).
#pragma once

#include <cstdint>
#include <source_location>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::kernels::cpu {

/// Throws InternalError unless \p value >= 0.
/// \param op the kernel's name. \param what the size's name, e.g. "T". \param value the size.
/// \param where the calling check (filled in by the compiler).
/// \throws vramlab::InternalError when \p value is negative.
inline void require_non_negative(const char* op, const char* what, int64_t value,
                                 std::source_location where = std::source_location::current()) {
  if (value < 0) {
    throw InternalError(
        std::string(op) + ": " + what + " must be >= 0, got " + std::to_string(value), where);
  }
}

/// Throws InternalError unless \p condition holds.
/// \param condition what must be true. \param op the kernel's name.
/// \param message what is wrong, naming the bad value.
/// \param where the calling check (filled in by the compiler).
/// \throws vramlab::InternalError when \p condition is false.
inline void require(bool condition, const char* op, const std::string& message,
                    std::source_location where = std::source_location::current()) {
  if (!condition) throw InternalError(std::string(op) + ": " + message, where);
}

}  // namespace vramlab::kernels::cpu
