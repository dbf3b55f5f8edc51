/// \file
/// \brief The floating-point formats' limits (max, min normal, min subnormal, epsilon, specials),
/// each derived from its bit layout.
///
/// Nothing here is a typed-in decimal constant: every value is computed from (exponent bits,
/// mantissa bits, what the all-ones exponent means), and tests/dtype checks the results against the
/// values printed in the formats' defining documents: IEEE 754-2008 (binary32, binary16), the
/// bfloat16 and TF32 descriptions by their makers (Google's Cloud TPU bfloat16 format; NVIDIA's
/// A100 Tensor Core GPU Architecture whitepaper, 2020) and, for E4M3 and E5M2, Micikevicius et al.,
/// "FP8 Formats for Deep Learning" (2022, Table 1) and the OCP 8-bit Floating Point Specification
/// (OFP8, 2023).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype/dtype.h"

namespace vramlab {

/// What a format's all-ones exponent field encodes.
enum class SpecialValues {
  ieee,  ///< mantissa 0 is +-infinity, any other mantissa is NaN (f32, tf32, bf16, f16, e5m2)
  finite_single_nan  ///< no infinity; only all-ones exponent and mantissa is NaN (OCP fp8 e4m3)
};

/// One floating-point format's layout and the limits that follow from it.
struct FloatFormatInfo {
  std::string name;              ///< "f32", "tf32", "bf16", "f16", "fp8_e5m2" or "fp8_e4m3"
  int total_bits;                ///< 1 + exponent_bits + mantissa_bits (tf32: 19, stored in 32)
  int exponent_bits;             ///< width of the exponent field
  int mantissa_bits;             ///< width of the stored mantissa (no implicit bit)
  int bias;                      ///< exponent bias, 2^(exponent_bits-1) - 1
  SpecialValues specials;        ///< what the all-ones exponent encodes
  int max_exponent;              ///< unbiased exponent of the largest finite value
  int min_normal_exponent;       ///< log2 of the smallest normal value, 1 - bias
  int min_subnormal_exponent;    ///< log2 of the smallest subnormal value, 1 - bias - mantissa_bits
  double max_finite;             ///< the largest finite value
  double min_normal;             ///< the smallest positive normal value
  double min_subnormal;          ///< the smallest positive subnormal value
  double epsilon;                ///< 2^-mantissa_bits: the gap between 1 and the next value
  bool has_infinity;             ///< whether +-infinity exist
  uint64_t nan_pattern_count;    ///< how many bit patterns are NaN (both signs)
  std::string nan_patterns;      ///< the NaN bit patterns, e.g. "S.11111.m, m != 0" or "S.1111.111"
  std::string infinity_pattern;  ///< infinity's pattern as S.exponent.mantissa, or "" when none
};

/// Every floating-point format vramlab knows, widest first: f32, tf32, bf16, f16, fp8_e5m2,
/// fp8_e4m3.
/// \return the table (built once, never changes).
const std::vector<FloatFormatInfo>& float_formats();

/// The limits of one floating-point format by name ("tf32" included, which has no DType).
/// \return the format's entry, or nullptr when the name is not a floating-point format.
const FloatFormatInfo* find_float_format(std::string_view name);

/// The limits of a floating-point DType.
/// \throws vramlab::UsageError when dtype is an integer type (the message names it).
const FloatFormatInfo& float_format_info(DType dtype);

}  // namespace vramlab
