// Relative-tolerance comparison for the estimator tests: the failure message gives the expected
// and actual values, |diff| and the difference as a percentage of the tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace vramlab::estimate::testing {

/// Passes when |actual - expected| <= rel_tol * |expected| (or <= rel_tol when expected is 0).
inline ::testing::AssertionResult near_relative(double actual, double expected, double rel_tol) {
  const double diff = std::fabs(actual - expected);
  const double allowed = rel_tol * (expected == 0.0 ? 1.0 : std::fabs(expected));
  if (diff <= allowed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << std::to_string(expected) << ", got " << std::to_string(actual)
         << ": |diff| " << diff << " is " << (100.0 * diff / allowed) << "% of the tolerance "
         << allowed;
}

/// Passes when \p actual rounds to the printed value \p printed, i.e. lies within half a unit of
/// the last printed digit (\p unit is that digit's value, e.g. 0.1 for "31.4").
inline ::testing::AssertionResult matches_printed(double actual, double printed, double unit) {
  const double diff = std::fabs(actual - printed);
  if (diff <= 0.5 * unit + 1e-12) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "printed " << printed << " (±" << 0.5 * unit << "), got " << actual << ": |diff| "
         << diff << " is " << (100.0 * diff / (0.5 * unit)) << "% of the tolerance";
}

}  // namespace vramlab::estimate::testing
