/// \file
/// \brief Argument checks shared by the CPU and CUDA kernels. A kernel's arguments come from the
/// runtime (or a learner's code), never straight from a user, so a violated precondition is a bug:
/// it throws vramlab::InternalError naming the bad value and the file and line of the kernel's
/// check, before any parallel region starts (exceptions must not leave OpenMP).
#pragma once

#include <cstdint>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::kernels::cpu {

/// Throws InternalError "OP: WHAT must be >= 0, got VALUE" unless \p value >= 0; \p op is the
/// kernel's name, \p what the size's, e.g. "T"; \p where (filled in by the compiler) is the
/// calling check, reported as the error's location.
/// \throws vramlab::InternalError when \p value is negative.
inline void require_non_negative(const char* op, const char* what, int64_t value,
                                 vramlab::source_location where = vramlab::source_location::current()) {
  if (value < 0) {
    throw InternalError(
        std::string(op) + ": " + what + " must be >= 0, got " + std::to_string(value), where);
  }
}

/// Throws InternalError "OP: MESSAGE" unless \p condition holds; \p message names the bad
/// value; \p where as require_non_negative.
/// \throws vramlab::InternalError when \p condition is false.
inline void require(bool condition, const char* op, const std::string& message,
                    vramlab::source_location where = vramlab::source_location::current()) {
  if (!condition) throw InternalError(std::string(op) + ": " + message, where);
}

}  // namespace vramlab::kernels::cpu
