/// \file
/// \brief Argument checks shared by the CPU kernels: a bad size or index throws vramlab::UsageError
/// naming the bad value, before any parallel region starts (exceptions must not leave OpenMP).
#pragma once

#include <cstdint>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::kernels::cpu {

/// Throws UsageError unless \p value >= 0.
/// \param op the kernel's name, for the message.
/// \param what the size's name, e.g. "T".
/// \param value the size.
/// \throws vramlab::UsageError when \p value is negative.
inline void require_non_negative(const char* op, const char* what, int64_t value) {
  if (value < 0) {
    throw UsageError(std::string(op) + ": " + what + " must be >= 0, got " + std::to_string(value));
  }
}

/// Throws UsageError unless \p condition holds.
/// \param condition what must be true.
/// \param op the kernel's name, for the message.
/// \param message what is wrong, naming the bad value.
/// \throws vramlab::UsageError when \p condition is false.
inline void require(bool condition, const char* op, const std::string& message) {
  if (!condition) throw UsageError(std::string(op) + ": " + message);
}

}  // namespace vramlab::kernels::cpu
