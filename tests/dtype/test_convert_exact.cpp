// Exactness of the f32 <-> f16/bf16/fp8 conversions against a formula oracle (format_oracle.h),
// without the CUDA headers: every pattern's value, every round trip, every rounding midpoint.
//   build/tests/bin/test_dtype --gtest_filter='ConvertExact*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "tests/dtype/format_oracle.h"

namespace vramlab {
namespace {

using test::OracleLayout;

// One narrow format: its oracle layout, pattern count and our two conversions (RNE, no saturation).
struct FormatUnderTest {
  std::string name;
  OracleLayout layout;
  uint32_t pattern_count;
  float (*to_f32)(uint32_t);
  uint32_t (*from_f32)(float);
};

std::vector<FormatUnderTest> formats_under_test() {
  return {
      {"f16", test::kF16Oracle, 65536,
       [](uint32_t b) { return f16_bits_to_f32(static_cast<uint16_t>(b)); },
       [](float x) -> uint32_t { return f32_to_f16_bits(x); }},
      {"bf16", test::kBF16Oracle, 65536,
       [](uint32_t b) { return bf16_bits_to_f32(static_cast<uint16_t>(b)); },
       [](float x) -> uint32_t { return f32_to_bf16_bits(x); }},
      {"fp8_e4m3", test::kE4M3Oracle, 256,
       [](uint32_t b) { return e4m3_bits_to_f32(static_cast<uint8_t>(b)); },
       [](float x) -> uint32_t { return f32_to_e4m3_bits(x, false); }},
      {"fp8_e5m2", test::kE5M2Oracle, 256,
       [](uint32_t b) { return e5m2_bits_to_f32(static_cast<uint8_t>(b)); },
       [](float x) -> uint32_t { return f32_to_e5m2_bits(x, false); }},
  };
}

TEST(ConvertExact, EveryPatternDecodesToItsFormulaValue) {
  for (const FormatUnderTest& f : formats_under_test()) {
    int64_t mismatches = 0;
    for (uint32_t bits = 0; bits < f.pattern_count; ++bits) {
      const double want = test::oracle_value(f.layout, bits);
      const float got = f.to_f32(bits);
      const bool ok = std::isnan(want) ? std::isnan(got)
                                       : (static_cast<double>(got) == want &&
                                          std::signbit(got) == std::signbit(want));
      if (!ok && ++mismatches <= 5) {
        ADD_FAILURE() << f.name << " pattern 0x" << std::hex << bits << std::dec << " decodes to "
                      << got << ", formula gives " << want;
      }
    }
    EXPECT_EQ(mismatches, 0) << f.name << ": patterns whose value differs from the formula";
  }
}

TEST(ConvertExact, EveryPatternRoundTripsThroughF32) {
  for (const FormatUnderTest& f : formats_under_test()) {
    int64_t mismatches = 0;
    for (uint32_t bits = 0; bits < f.pattern_count; ++bits) {
      const float value = f.to_f32(bits);
      const uint32_t back = f.from_f32(value);
      const bool ok = std::isnan(value) ? std::isnan(f.to_f32(back)) : back == bits;
      if (!ok && ++mismatches <= 5) {
        ADD_FAILURE() << f.name << " 0x" << std::hex << bits << " -> " << value << " -> 0x" << back;
      }
    }
    EXPECT_EQ(mismatches, 0) << f.name << ": patterns that do not round-trip";
  }
}

// Between consecutive representable magnitudes a < b: the midpoint ties to the even pattern, and
// the f32 just below / above the midpoint goes to a / b. The midpoint is exact in f32 for every
// format here (at most 12 significant bits).
TEST(ConvertExact, MidpointsTieToEvenAndNeighboursRoundToNearest) {
  for (const FormatUnderTest& f : formats_under_test()) {
    const uint32_t sign_bit = f.pattern_count / 2;
    int64_t checked = 0;
    for (uint32_t lower = 0; lower + 1 < sign_bit; ++lower) {
      const double a = test::oracle_value(f.layout, lower);
      const double b = test::oracle_value(f.layout, lower + 1);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      const double mid = (a + b) / 2;
      const float mid_f32 = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(mid_f32), mid) << f.name << ": midpoint not exact in f32";
      const uint32_t even = (lower % 2 == 0) ? lower : lower + 1;
      for (uint32_t sign : {0u, sign_bit}) {
        const float s = sign != 0 ? -1.0f : 1.0f;
        EXPECT_EQ(f.from_f32(s * mid_f32), sign | even)
            << f.name << ": tie at " << s * mid_f32 << " between 0x" << std::hex << lower
            << " and 0x" << lower + 1;
        EXPECT_EQ(f.from_f32(s * std::nextafter(mid_f32, 0.0f)), sign | lower)
            << f.name << ": just below midpoint " << s * mid_f32;
        EXPECT_EQ(f.from_f32(s * std::nextafter(mid_f32, std::numeric_limits<float>::infinity())),
                  sign | (lower + 1))
            << f.name << ": just above midpoint " << s * mid_f32;
      }
      ++checked;
    }
    EXPECT_GT(checked, static_cast<int64_t>(sign_bit) / 2) << f.name;
  }
}

// f32_to_bf16_bits and f32_to_f16_bits are branch-free shortcuts; the generic rounding (used for
// stochastic rounding and fp8) must give the same bits: every f32 pattern whose dropped bits are a
// tie, one either side of it, zero or all ones, plus every 997th pattern.
TEST(ConvertExact, FastPathsEqualTheGenericRounding) {
  const auto generic_bf16 = [](float x) {
    return detail::narrow_from_f32<detail::BF16Layout>(x, false, detail::Rounding::nearest_even, 0);
  };
  const auto generic_f16 = [](float x) {
    return detail::narrow_from_f32<detail::F16Layout>(x, false, detail::Rounding::nearest_even, 0);
  };
  int64_t mismatches = 0;
  const auto check = [&](uint32_t bits) {
    const float x = bits_to_f32(bits);
    const bool ok = f32_to_bf16_bits(x) == generic_bf16(x) && f32_to_f16_bits(x) == generic_f16(x);
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << "f32 0x" << std::hex << bits << ": bf16 fast 0x" << f32_to_bf16_bits(x)
                    << " generic 0x" << generic_bf16(x) << "; f16 fast 0x" << f32_to_f16_bits(x)
                    << " generic 0x" << generic_f16(x);
    }
  };
  for (uint32_t high = 0; high < 0x10000u; ++high) {
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) check((high << 16) | low);
  }
  // f16 drops 13 bits from normals and more from subnormals: ties at every position 13..25.
  for (uint32_t exponent = 0; exponent < 256; ++exponent) {
    for (uint32_t tie_bit = 12; tie_bit < 26; ++tie_bit) {
      for (uint32_t mantissa : {0u, 1u << 13, 3u << 20, 0x7FFFFFu & ~((2u << tie_bit) - 1u)}) {
        const uint32_t tie =
            (exponent << 23) | (mantissa & 0x7FFFFFu) | ((1u << tie_bit) & 0x7FFFFFu);
        for (uint32_t bits : {tie - 1u, tie, tie + 1u}) check(bits);
      }
    }
  }
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 997) check(static_cast<uint32_t>(bits));
  EXPECT_EQ(mismatches, 0);
}

TEST(ConvertExact, ZerosKeepTheirSignAndTinyValuesUnderflowToSignedZero) {
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_e4m3_bits(-0.0f, true), 0x80);
  EXPECT_EQ(f32_to_e5m2_bits(-0.0f, false), 0x80);
  const float f32_min_subnormal = std::ldexp(1.0f, -149);
  EXPECT_EQ(f32_to_f16_bits(-f32_min_subnormal), 0x8000);
  EXPECT_EQ(f32_to_e4m3_bits(f32_min_subnormal, false), 0x00);
  // bf16 shares f32's exponent range: 2^-133 is its smallest subnormal, exactly.
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(1.0f, -134)), 0x0000);  // tie with 0, 0 is even
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(3.0f, -135)), 0x0001);  // 0.75 of the step
}

TEST(ConvertExact, OverflowFollowsEachFormatsRule) {
  const float inf = std::numeric_limits<float>::infinity();
  // f16: 65504 is max; 65520 is the midpoint to 2^16, ties to even = infinity.
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(65519.996f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-1e30f), 0xFC00);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  // e4m3: 448 max, 464 ties to 448 (even), above 464 overflows.
  EXPECT_EQ(f32_to_e4m3_bits(464.0f, false), 0x7E);
  EXPECT_EQ(f32_to_e4m3_bits(464.1f, false), 0x7F);
  EXPECT_EQ(f32_to_e4m3_bits(-464.1f, false), 0xFF);
  EXPECT_EQ(f32_to_e4m3_bits(464.1f, true), 0x7E);
  EXPECT_EQ(f32_to_e4m3_bits(-inf, true), 0xFE);
  EXPECT_EQ(f32_to_e4m3_bits(inf, false), 0x7F);
  // e5m2: 57344 max, 61440 ties to 65536 = infinity (even).
  EXPECT_EQ(f32_to_e5m2_bits(61439.996f, false), 0x7B);
  EXPECT_EQ(f32_to_e5m2_bits(61440.0f, false), 0x7C);
  EXPECT_EQ(f32_to_e5m2_bits(61440.0f, true), 0x7B);
  EXPECT_EQ(f32_to_e5m2_bits(-inf, true), 0xFB);
  EXPECT_EQ(f32_to_e5m2_bits(-inf, false), 0xFC);
}

TEST(ConvertExact, NanBecomesTheCanonicalNanWhateverItsSignAndPayload) {
  for (uint32_t nan_bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FA00000u}) {
    const float nan = bits_to_f32(nan_bits);
    EXPECT_EQ(f32_to_f16_bits(nan), 0x7FFF) << std::hex << nan_bits;
    EXPECT_EQ(f32_to_bf16_bits(nan), 0x7FFF) << std::hex << nan_bits;
    for (bool saturate : {false, true}) {
      EXPECT_EQ(f32_to_e4m3_bits(nan, saturate), 0x7F) << std::hex << nan_bits;
      EXPECT_EQ(f32_to_e5m2_bits(nan, saturate), 0x7F) << std::hex << nan_bits;
    }
  }
}

TEST(ConvertExact, ConversionsAreConstantExpressions) {
  static_assert(f32_to_f16_bits(1.0f) == 0x3C00);
  static_assert(f16_bits_to_f32(0x0001) == 0x1p-24f);
  static_assert(f32_to_bf16_bits(-2.0f) == 0xC000);
  static_assert(e4m3_bits_to_f32(0x7E) == 448.0f);
  static_assert(f32_to_e5m2_bits(1e9f, true) == 0x7B);
  static_assert(to_f32(to_bf16(1.5f)) == 1.5f);
  SUCCEED();
}

}  // namespace
}  // namespace vramlab
