/// \file
/// \brief Overflow-checked int64 arithmetic for sizes computed from user input (shapes, counts,
/// bytes): an overflow, or a size that is not positive, is bad input, reported as a
/// vramlab::UsageError naming the quantity.
#pragma once

#include <cstdint>
#include <string>

#include "common/platform/errors.h"

namespace vramlab {

/// \p a × \p b, or a UsageError when the product does not fit in int64.
/// \param a left factor. \param b right factor.
/// \param what names the quantity being computed, for the message (e.g. "parameter count").
/// \return the exact product.
/// \throws vramlab::UsageError "<what> overflows int64 (A * B)".
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw UsageError(std::string(what) + " overflows int64 (" + std::to_string(a) + " * " +
                     std::to_string(b) + ")");
  return product;
}

/// \p a + \p b, or a UsageError when the sum does not fit in int64.
/// \param a left term. \param b right term.
/// \param what names the quantity being computed, for the message.
/// \return the exact sum.
/// \throws vramlab::UsageError "<what> overflows int64 (A + B)".
inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw UsageError(std::string(what) + " overflows int64 (" + std::to_string(a) + " + " +
                     std::to_string(b) + ")");
  return sum;
}

/// Refuses a size or count from user input that is not positive.
/// \throws vramlab::UsageError "<what> must be positive, got VALUE".
inline void require_positive(int64_t value, const char* what) {
  if (value <= 0)
    throw UsageError(std::string(what) + " must be positive, got " + std::to_string(value));
}

/// ⌈\p a / \p b⌉ for a ≥ 0 and b > 0 (no overflow possible).
/// \param a dividend (non-negative). \param b divisor (positive). \return the rounded-up quotient.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace vramlab
