// The floating-point formats' limits, each computed from the format's bit layout.
#include "common/dtype/format_info.h"

#include <cmath>

#include "common/platform/errors.h"

namespace vramlab {

namespace {

// "1111" for width 4.
std::string ones(int width) {
  return std::string(static_cast<size_t>(width), '1');
}

FloatFormatInfo describe(std::string name, int exponent_bits, int mantissa_bits,
                         SpecialValues specials) {
  FloatFormatInfo f;
  f.name = std::move(name);
  f.total_bits = 1 + exponent_bits + mantissa_bits;
  f.exponent_bits = exponent_bits;
  f.mantissa_bits = mantissa_bits;
  f.bias = (1 << (exponent_bits - 1)) - 1;
  f.specials = specials;
  f.has_infinity = specials == SpecialValues::ieee;
  const int exponent_field_max = (1 << exponent_bits) - 1;
  const int64_t mantissa_count = int64_t{1} << mantissa_bits;
  // IEEE formats give the whole all-ones exponent to inf/NaN; e4m3 keeps it for finite values
  // except the all-ones mantissa.
  const int largest_finite_field = f.has_infinity ? exponent_field_max - 1 : exponent_field_max;
  const int64_t largest_mantissa = f.has_infinity ? mantissa_count - 1 : mantissa_count - 2;
  f.max_exponent = largest_finite_field - f.bias;
  f.min_normal_exponent = 1 - f.bias;
  f.min_subnormal_exponent = f.min_normal_exponent - mantissa_bits;
  // (1 + m / 2^M) * 2^e = (2^M + m) * 2^(e - M): an integer times a power of two, exact in a
  // double.
  f.max_finite = std::ldexp(static_cast<double>(mantissa_count + largest_mantissa),
                            f.max_exponent - mantissa_bits);
  f.min_normal = std::ldexp(1.0, f.min_normal_exponent);
  f.min_subnormal = std::ldexp(1.0, f.min_subnormal_exponent);
  f.epsilon = std::ldexp(1.0, -mantissa_bits);
  const std::string exponent_ones = ones(exponent_bits);
  if (f.has_infinity) {
    f.nan_pattern_count = 2u * static_cast<uint64_t>(mantissa_count - 1);
    f.nan_patterns = "S." + exponent_ones + ".m, m != 0";
    f.infinity_pattern =
        "S." + exponent_ones + "." + std::string(static_cast<size_t>(mantissa_bits), '0');
  } else {
    f.nan_pattern_count = 2;
    f.nan_patterns = "S." + exponent_ones + "." + ones(mantissa_bits);
  }
  return f;
}

}  // namespace

const std::vector<FloatFormatInfo>& float_formats() {
  static const std::vector<FloatFormatInfo> formats = {
      describe("f32", 8, 23, SpecialValues::ieee),
      describe("tf32", 8, 10, SpecialValues::ieee),
      describe("bf16", 8, 7, SpecialValues::ieee),
      describe("f16", 5, 10, SpecialValues::ieee),
      describe("fp8_e5m2", 5, 2, SpecialValues::ieee),
      describe("fp8_e4m3", 4, 3, SpecialValues::finite_single_nan),
  };
  return formats;
}

const FloatFormatInfo* find_float_format(std::string_view name) {
  for (const FloatFormatInfo& f : float_formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FloatFormatInfo& float_format_info(DType dtype) {
  const FloatFormatInfo* f = find_float_format(dtype_name(dtype));
  if (f == nullptr) {
    throw UsageError("dtype '" + std::string(dtype_name(dtype)) +
                     "' is an integer type, not a floating-point format");
  }
  return *f;
}

}  // namespace vramlab
