// Test-only oracle for the narrow formats: the value of a bit pattern computed from the textbook
// formula (-1)^s * 2^(e - bias) * (1.m) in double precision, independent of common/dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace vramlab::test {

/// A narrow format's layout as the formula needs it.
struct OracleLayout {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;  // false: OCP e4m3 (all-ones exponent is finite except mantissa all ones)
};

inline constexpr OracleLayout kF16Oracle{5, 10, true};
inline constexpr OracleLayout kBF16Oracle{8, 7, true};
inline constexpr OracleLayout kE4M3Oracle{4, 3, false};
inline constexpr OracleLayout kE5M2Oracle{5, 2, true};

/// The value of `bits` in `layout` by the formula; NaN patterns give a NaN.
inline double oracle_value(OracleLayout layout, uint32_t bits) {
  const int bias = (1 << (layout.exponent_bits - 1)) - 1;
  const uint32_t exponent_max = (1u << layout.exponent_bits) - 1u;
  const uint32_t mantissa_mask = (1u << layout.mantissa_bits) - 1u;
  const bool negative = ((bits >> (layout.exponent_bits + layout.mantissa_bits)) & 1u) != 0;
  const uint32_t e = (bits >> layout.mantissa_bits) & exponent_max;
  const uint32_t m = bits & mantissa_mask;
  double magnitude = 0.0;
  if (e == exponent_max && layout.has_infinity) {
    magnitude =
        m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == exponent_max && m == mantissa_mask) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    magnitude = std::ldexp(static_cast<double>(m), 1 - bias - layout.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -layout.mantissa_bits),
                           static_cast<int>(e) - bias);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace vramlab::test
