// The number formats' limits (format_info.h), derived from bit layouts, against the decimal values
// printed for each format (within half a unit of the last printed digit), and against the
// conversions' own extreme patterns.
//   build/tests/bin/test_dtype --gtest_filter='FormatInfo*'
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/dtype/convert.h"
#include "common/dtype/format_info.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

// A value printed with `digits` significant digits, e.g. {3.40282e38, 6}: the derived value must
// lie within half a unit of its last digit.
struct Printed {
  double value;
  int digits;
};

void expect_matches_printed(const std::string& what, double derived, Printed printed) {
  const double last_digit =
      std::pow(10.0, std::floor(std::log10(std::abs(printed.value))) - (printed.digits - 1));
  const double tolerance = last_digit / 2;
  const double diff = std::abs(derived - printed.value);
  EXPECT_LE(diff, tolerance) << what << ": derived " << derived << ", printed " << printed.value
                             << ", |diff| " << diff << " = " << 100 * diff / tolerance
                             << "% of the half-last-digit tolerance";
}

struct PrintedLimits {
  std::string name;
  int exponent_bits, mantissa_bits, bias;
  Printed max, min_normal, min_subnormal, epsilon;
};

// The limits as printed: f32 and f16 from IEEE 754-2008 (binary32, binary16); bf16 (8 exponent
// bits, 7 mantissa bits) and tf32 (8 and 10, NVIDIA's A100 whitepaper) by the same rules; E4M3 and
// E5M2 from Micikevicius et al., "FP8 Formats for Deep Learning" (2022), Table 1 (max 448 and
// 57344, min normal 2^-6 and 2^-14, min subnormal 2^-9 and 2^-16). Exact powers of two printed as
// 2^k are given with 17 digits (the power itself); decimals are as printed.
TEST(FormatInfo, MatchesTheLiteraturesPrintedValues) {
  const PrintedLimits rows[] = {
      {"f32", 8, 23, 127, {3.40282e38, 6}, {1.1755e-38, 5}, {1.401e-45, 4}, {1.19e-7, 3}},
      {"tf32",
       8,
       10,
       127,
       {3.401e38, 4},
       {std::ldexp(1.0, -126), 17},
       {std::ldexp(1.0, -136), 17},
       {9.77e-4, 3}},
      {"bf16",
       8,
       7,
       127,
       {3.38953e38, 6},
       {std::ldexp(1.0, -126), 17},
       {9.18e-41, 3},
       {7.8125e-3, 5}},
      {"f16", 5, 10, 15, {65504, 5}, {6.1035e-5, 5}, {5.96e-8, 3}, {9.77e-4, 3}},
      {"fp8_e5m2", 5, 2, 15, {57344, 5}, {std::ldexp(1.0, -14), 17}, {1.526e-5, 4}, {0.25, 2}},
      {"fp8_e4m3", 4, 3, 7, {448, 3}, {0.015625, 5}, {1.953e-3, 4}, {0.125, 3}},
  };
  for (const PrintedLimits& row : rows) {
    const FloatFormatInfo* f = find_float_format(row.name);
    ASSERT_NE(f, nullptr) << row.name;
    EXPECT_EQ(f->exponent_bits, row.exponent_bits) << row.name;
    EXPECT_EQ(f->mantissa_bits, row.mantissa_bits) << row.name;
    EXPECT_EQ(f->total_bits, 1 + row.exponent_bits + row.mantissa_bits) << row.name;
    EXPECT_EQ(f->bias, row.bias) << row.name;
    expect_matches_printed(row.name + " max", f->max_finite, row.max);
    expect_matches_printed(row.name + " min normal", f->min_normal, row.min_normal);
    expect_matches_printed(row.name + " min subnormal", f->min_subnormal, row.min_subnormal);
    expect_matches_printed(row.name + " epsilon", f->epsilon, row.epsilon);
  }
}

TEST(FormatInfo, ListsSixFormatsWidestFirst) {
  const auto& formats = float_formats();
  ASSERT_EQ(formats.size(), 6u);
  const char* names[] = {"f32", "tf32", "bf16", "f16", "fp8_e5m2", "fp8_e4m3"};
  for (size_t i = 0; i < formats.size(); ++i) EXPECT_EQ(formats[i].name, names[i]);
  EXPECT_EQ(find_float_format("nope"), nullptr);
}

TEST(FormatInfo, SpecialsFollowOcpFp8AndIeee) {
  const FloatFormatInfo& e4m3 = float_format_info(DType::fp8_e4m3);
  EXPECT_FALSE(e4m3.has_infinity);
  EXPECT_EQ(e4m3.nan_pattern_count, 2u);
  EXPECT_EQ(e4m3.nan_patterns, "S.1111.111");
  EXPECT_EQ(e4m3.infinity_pattern, "");
  const FloatFormatInfo& e5m2 = float_format_info(DType::fp8_e5m2);
  EXPECT_TRUE(e5m2.has_infinity);
  EXPECT_EQ(e5m2.nan_pattern_count, 6u);  // 2 signs x 3 non-zero mantissas
  EXPECT_EQ(e5m2.infinity_pattern, "S.11111.00");
  EXPECT_EQ(e5m2.nan_patterns, "S.11111.m, m != 0");
  EXPECT_EQ(float_format_info(DType::f16).nan_pattern_count, 2046u);
  EXPECT_EQ(float_format_info(DType::f32).nan_pattern_count, 2u * ((1u << 23) - 1u));
}

// The table and the conversions are written separately; they must agree on the extremes.
TEST(FormatInfo, AgreesWithTheConversionsExtremePatterns) {
  EXPECT_EQ(float_format_info(DType::f16).max_finite, f16_bits_to_f32(0x7BFF));
  EXPECT_EQ(float_format_info(DType::f16).min_subnormal, f16_bits_to_f32(0x0001));
  EXPECT_EQ(float_format_info(DType::f16).min_normal, f16_bits_to_f32(0x0400));
  EXPECT_EQ(float_format_info(DType::bf16).max_finite, bf16_bits_to_f32(0x7F7F));
  EXPECT_EQ(float_format_info(DType::bf16).min_subnormal, bf16_bits_to_f32(0x0001));
  EXPECT_EQ(float_format_info(DType::fp8_e4m3).max_finite, e4m3_bits_to_f32(0x7E));
  EXPECT_EQ(float_format_info(DType::fp8_e4m3).min_subnormal, e4m3_bits_to_f32(0x01));
  EXPECT_EQ(float_format_info(DType::fp8_e5m2).max_finite, e5m2_bits_to_f32(0x7B));
  EXPECT_EQ(float_format_info(DType::fp8_e5m2).min_subnormal, e5m2_bits_to_f32(0x01));
  EXPECT_EQ(float_format_info(DType::f32).max_finite, std::numeric_limits<float>::max());
  EXPECT_EQ(float_format_info(DType::f32).min_subnormal, std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(float_format_info(DType::f32).epsilon, std::numeric_limits<float>::epsilon());
}

TEST(FormatInfo, IntegerDTypesAreRejectedByName) {
  try {
    float_format_info(DType::i32);
    FAIL() << "float_format_info(i32) did not throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'i32'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vramlab
