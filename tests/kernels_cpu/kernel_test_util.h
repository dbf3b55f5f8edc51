/// \file
/// \brief Shared helpers of the CPU kernel tests: seeded random buffers, an elementwise comparison
/// that reports the worst element (max |diff|, its index, % of the tolerance), and a central
/// finite-difference gradient check in double precision.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace vramlab::kernels::cpu::test_util {

/// n values uniform in [low, high), from a fixed seed.
template <typename Real = float>
std::vector<Real> random_vector(int64_t n, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<Real> values(static_cast<size_t>(n));
  for (auto& value : values) value = static_cast<Real>(distribution(generator));
  return values;
}

/// γ_K = K·u/(1 - K·u), u = 2^-24: a float dot product of length K (any order, with or without
/// FMA) is within γ_K·Σ|a_i·b_i| of the exact value (Higham, Accuracy and Stability, §3.1).
inline double gamma(int64_t K) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(K) * u / (1.0 - static_cast<double>(K) * u);
}

/// n token ids uniform in [0, V), from a fixed seed.
inline std::vector<int32_t> random_tokens(int64_t n, int64_t V, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int64_t> distribution(0, V - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (auto& token : tokens) token = static_cast<int32_t>(distribution(generator));
  return tokens;
}

/// The same values widened to double (inputs of the double reference).
inline std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

/// Passes when |actual_i - expected_i| <= tolerance(i) for every i (non-finite values must match
/// exactly). The failure message names the worst element: its index, both values, |diff| and how
/// many percent of its tolerance it uses.
template <typename A, typename E, typename Tolerance>
::testing::AssertionResult within_tolerance(const std::string& what, const A* actual,
                                            const E* expected, int64_t n, Tolerance tolerance,
                                            const std::string& tolerance_text) {
  double worst_ratio = -1.0, worst_diff = 0.0;
  int64_t worst_index = -1, failures = 0;
  for (int64_t i = 0; i < n; i++) {
    const double a = static_cast<double>(actual[i]), e = static_cast<double>(expected[i]);
    double ratio;
    if (!std::isfinite(e) || !std::isfinite(a)) {
      const bool same = (std::isnan(a) && std::isnan(e)) || a == e;
      ratio = same ? 0.0 : INFINITY;
    } else {
      ratio = std::fabs(a - e) / tolerance(i);
    }
    if (ratio > 1.0) failures++;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_index = i;
      worst_diff = std::fabs(a - e);
    }
  }
  std::ostringstream message;
  message.precision(9);
  if (worst_index >= 0) {
    message << what << ": max |diff| = " << worst_diff << " at index " << worst_index << " (actual "
            << static_cast<double>(actual[worst_index]) << ", expected "
            << static_cast<double>(expected[worst_index]) << "), " << 100.0 * worst_ratio
            << "% of the tolerance (" << tolerance_text << "); " << failures << " of " << n
            << " elements out of tolerance";
  } else {
    message << what << ": empty";
  }
  if (failures > 0) return ::testing::AssertionFailure() << message.str();
  return ::testing::AssertionSuccess() << message.str();
}

/// Passes when |actual_i - expected_i| <= atol + rtol·|expected_i| for every i (see
/// within_tolerance for the message).
template <typename A, typename E>
::testing::AssertionResult all_close(const std::string& what, const A* actual, const E* expected,
                                     int64_t n, double atol, double rtol) {
  std::ostringstream text;
  text << "atol " << atol << ", rtol " << rtol;
  return within_tolerance(
      what, actual, expected, n,
      [&](int64_t i) { return atol + rtol * std::fabs(static_cast<double>(expected[i])); },
      text.str());
}

/// Vector overload of all_close (sizes must match).
template <typename A, typename E>
::testing::AssertionResult all_close(const std::string& what, const std::vector<A>& actual,
                                     const std::vector<E>& expected, double atol, double rtol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << actual.size() << " vs " << expected.size();
  }
  return all_close(what, actual.data(), expected.data(), static_cast<int64_t>(actual.size()), atol,
                   rtol);
}

/// Passes when the two buffers hold the same bits.
inline ::testing::AssertionResult bitwise_equal(const std::string& what,
                                                const std::vector<float>& a,
                                                const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < a.size(); i++) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << what << ": first difference at index " << i << " ("
                                           << a[i] << " vs " << b[i] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

/// Central-difference step and tolerance of every gradient check: with h = 1e-5 in double the
/// truncation error is h²·f'''/6 ≈ 1e-11 and the rounding error ε·|L|/h ≈ 1e-11 for the O(1)
/// losses used here, so 1e-7 absolute + 1e-6 relative leaves a wide margin while still catching
/// any wrong term of a backward (which is off by O(1)).
inline constexpr double kFiniteDifferenceStep = 1e-5;
/// Absolute tolerance of the gradient checks (see kFiniteDifferenceStep).
inline constexpr double kGradientAtol = 1e-7;
/// Relative tolerance of the gradient checks (see kFiniteDifferenceStep).
inline constexpr double kGradientRtol = 1e-6;

/// Compares \p analytic (dL/dinput from a backward kernel) with central differences of \p loss
/// with respect to every element of \p input (perturbed in place and restored).
inline ::testing::AssertionResult gradient_matches(const std::string& what,
                                                   std::vector<double>& input,
                                                   const std::vector<double>& analytic,
                                                   const std::function<double()>& loss) {
  std::vector<double> numeric(input.size());
  for (size_t i = 0; i < input.size(); i++) {
    const double saved = input[i];
    input[i] = saved + kFiniteDifferenceStep;
    const double plus = loss();
    input[i] = saved - kFiniteDifferenceStep;
    const double minus = loss();
    input[i] = saved;
    numeric[i] = (plus - minus) / (2.0 * kFiniteDifferenceStep);
  }
  return all_close(what + " (analytic vs central difference)", analytic, numeric, kGradientAtol,
                   kGradientRtol);
}

/// Σ_i out_i · weight_i: the scalar loss whose gradient with respect to out is \p weight.
inline double weighted_sum(const std::vector<double>& out, const std::vector<double>& weight) {
  double total = 0.0;
  for (size_t i = 0; i < out.size(); i++) total += out[i] * weight[i];
  return total;
}

}  // namespace vramlab::kernels::cpu::test_util
