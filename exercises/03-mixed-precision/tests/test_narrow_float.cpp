// Tests of exercise 03.1 (f32 to bf16 and to f16 from the bits). They run against your code
// (`vramlab check 03.1`) and against the reference (ctest: test_ex_03_1_ref).
// Expectations: the runtime's conversions (common/dtype/convert.h), which tests/dtype checks bit
// for bit against NVIDIA's __float2half_rn and __float2bfloat16_rn; hand-computed bits at the
// boundaries the header names; every representable 16-bit value coming back unchanged; millions
// of random f32 bit patterns; and an exhaustive sweep of the f32 binades where f16's subnormals,
// its smallest normals and its overflow lie.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/03-mixed-precision/api/narrow_float.h"

namespace vramlab::lesson03 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::string hex(uint32_t bits, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*X", digits, bits);
  return buffer;
}

std::string describe(float x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "x=%.9g (f32 %s)", static_cast<double>(x),
                hex(std::bit_cast<uint32_t>(x), 8).c_str());
  return buffer;
}

// Bits compared over many inputs; the summary names the first wrong input and how many were
// wrong, without building a message per input (the sweeps check tens of millions).
class BitsCheck {
 public:
  explicit BitsCheck(std::string quantity) : quantity_(std::move(quantity)) {}

  void add(float x, uint16_t expected, uint16_t got) {
    ++cases_;
    if (expected == got) return;
    if (wrong_++ == 0) {
      first_where_ = describe(x) + ": expected " + hex(expected, 4) + ", got " + hex(got, 4);
      first_expected_ = expected;
      first_got_ = got;
    }
  }

  [[nodiscard]] Comparison comparison() const {
    Comparison c(quantity_ + " (" + std::to_string(wrong_) + " of " + std::to_string(cases_) +
                     " inputs wrong; the first shown)",
                 Unit::kNumber);
    if (wrong_ > 0)
      c.add(first_where_, first_expected_, first_got_);
    else if (cases_ > 0)
      c.add("all inputs", 0.0, 0.0);
    return c;
  }

 private:
  std::string quantity_;
  int64_t cases_ = 0;
  int64_t wrong_ = 0;
  std::string first_where_;
  double first_expected_ = 0;
  double first_got_ = 0;
};

float from_bits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Checks both conversions on x and on -x against convert.h.
void check_both(float x, BitsCheck& bf16, BitsCheck& f16) {
  for (float v : {x, -x}) {
    bf16.add(v, f32_to_bf16_bits(v), to_bf16_bits(v));
    f16.add(v, f32_to_f16_bits(v), to_f16_bits(v));
  }
}

TEST(NarrowFloat, SpecialClassesZerosInfinitiesAndNaNs) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  Comparison bf16("bf16 bits of a special value", Unit::kNumber);
  Comparison f16("f16 bits of a special value", Unit::kNumber);
  struct Case {
    float x;
    uint16_t bf16, f16;  // computed by hand from the formats' layouts
  };
  const Case cases[] = {
      {0.0f, 0x0000, 0x0000},
      {-0.0f, 0x8000, 0x8000},
      {kInf, 0x7F80, 0x7C00},
      {-kInf, 0xFF80, 0xFC00},
      {1.0f, 0x3F80, 0x3C00},
      {-2.0f, 0xC000, 0xC000},
      // NaNs of every kind: quiet, signalling with the smallest payload (which a rounding carry
      // would turn into infinity), negative, all payload bits set.
      {from_bits(0x7FC00000u), 0x7FFF, 0x7FFF},
      {from_bits(0x7F800001u), 0x7FFF, 0x7FFF},
      {from_bits(0xFF800001u), 0x7FFF, 0x7FFF},
      {from_bits(0xFFC00000u), 0x7FFF, 0x7FFF},
      {from_bits(0x7FFFFFFFu), 0x7FFF, 0x7FFF},
      {from_bits(0xFFFFFFFFu), 0x7FFF, 0x7FFF},
      {from_bits(0x7F800100u), 0x7FFF, 0x7FFF},
      // The largest f32 is above bf16's largest (0x7F7F = 0x7F7F0000 in f32) by more than half
      // an ulp, so it rounds to infinity.
      {std::numeric_limits<float>::max(), 0x7F80, 0x7C00},
      {from_bits(0x7F7F7FFFu), 0x7F7F, 0x7C00},  // just below the bf16 tie: stays finite
      {from_bits(0x7F7F8000u), 0x7F80, 0x7C00},  // the tie: to even, which is infinity
      // f16's top: 65504 is the largest; 65519 rounds down, 65520 (the tie, toward the even
      // 0x7C00) and above round to infinity.
      {65504.0f, 0x4780, 0x7BFF},
      {65519.0f, 0x4780, 0x7BFF},
      {from_bits(0x477FEFFFu), 0x4780, 0x7BFF},  // 65519.996
      {65520.0f, 0x4780, 0x7C00},
      {-65520.0f, 0xC780, 0xFC00},
      {65536.0f, 0x4780, 0x7C00},
      {1e10f, 0x5015, 0x7C00},
      // The smallest f32 subnormal and normal: bf16 keeps them (same exponent range), f16 not.
      {from_bits(0x00000001u), 0x0000, 0x0000},
      {from_bits(0x80000001u), 0x8000, 0x8000},
      {from_bits(0x00008000u), 0x0000, 0x0000},  // bf16 tie at the smallest subnormal: to even 0
      {from_bits(0x00008001u), 0x0001, 0x0000},
      {from_bits(0x00018000u), 0x0002, 0x0000},  // tie between 1 and 2: to even 2
      {from_bits(0x00800000u), 0x0080, 0x0000},
  };
  for (const Case& c : cases) {
    bf16.add(describe(c.x), c.bf16, to_bf16_bits(c.x));
    f16.add(describe(c.x), c.f16, to_f16_bits(c.x));
  }
  VRAMLAB_EXPECT_PASSES(bf16);
  VRAMLAB_EXPECT_PASSES(f16);
}

//! [test]
TEST(NarrowFloat, F16SubnormalsAndTheirBoundaries) {
  // f16 subnormals are k·2^-24, k = 1..1023. Each k, each midpoint (k + 1/2)·2^-24 (a tie: to
  // the even k), and one f32 ulp on either side of every midpoint.
  BitsCheck table("f16 bits vs convert.h near subnormal boundaries");
  Comparison exact("f16 bits of a subnormal boundary (by hand)", Unit::kNumber);
  for (uint32_t k = 0; k <= 1024; ++k) {
    const float value = std::ldexp(static_cast<float>(k), -24);
    const float midpoint = std::ldexp(static_cast<float>(k) + 0.5f, -24);
    for (float x :
         {value, midpoint, std::nextafter(midpoint, 0.0f), std::nextafter(midpoint, 1.0f)}) {
      table.add(x, f32_to_f16_bits(x), to_f16_bits(x));
      table.add(-x, f32_to_f16_bits(-x), to_f16_bits(-x));
    }
    exact.add("k=" + std::to_string(k) + " " + describe(value), k, to_f16_bits(value));
    if (k < 1024) {
      const uint32_t even = k % 2 == 0 ? k : k + 1;
      exact.add("tie k+1/2, k=" + std::to_string(k) + " " + describe(midpoint), even,
                to_f16_bits(midpoint));
      exact.add("just above the tie k+1/2, k=" + std::to_string(k), k + 1,
                to_f16_bits(std::nextafter(midpoint, 1.0f)));
      exact.add("just below the tie k+1/2, k=" + std::to_string(k), k,
                to_f16_bits(std::nextafter(midpoint, 0.0f)));
    }
  }
  // Half the smallest subnormal, 2^-25, ties to +-0; anything above it is the smallest one.
  const float half = std::ldexp(1.0f, -25);
  exact.add("2^-25 " + describe(half), 0x0000, to_f16_bits(half));
  exact.add("-2^-25 " + describe(-half), 0x8000, to_f16_bits(-half));
  exact.add("just above 2^-25", 0x0001, to_f16_bits(std::nextafter(half, 1.0f)));
  exact.add("just above -2^-25", 0x8001, to_f16_bits(std::nextafter(-half, -1.0f)));
  exact.add("just below 2^-25", 0x0000, to_f16_bits(std::nextafter(half, 0.0f)));
  exact.add("2^-30", 0x0000, to_f16_bits(std::ldexp(1.0f, -30)));
  exact.add("smallest normal 2^-14", 0x0400, to_f16_bits(std::ldexp(1.0f, -14)));
  exact.add("largest subnormal 1023*2^-24", 0x03FF, to_f16_bits(std::ldexp(1023.0f, -24)));
  VRAMLAB_EXPECT_PASSES(table.comparison());
  VRAMLAB_EXPECT_PASSES(exact);
}
//! [test]

TEST(NarrowFloat, EveryRepresentableValueComesBackUnchanged) {
  // Widening a 16-bit value to f32 is exact, so converting it back must give the same bits
  // (every NaN the canonical one): 65536 patterns per format, decoded by the runtime.
  BitsCheck bf16("bf16 bits of a widened bf16 value");
  BitsCheck f16("f16 bits of a widened f16 value");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float wide_bf16 = bf16_bits_to_f32(bits);
    const float wide_f16 = f16_bits_to_f32(bits);
    bf16.add(wide_bf16, std::isnan(wide_bf16) ? uint16_t{0x7FFF} : bits, to_bf16_bits(wide_bf16));
    f16.add(wide_f16, std::isnan(wide_f16) ? uint16_t{0x7FFF} : bits, to_f16_bits(wide_f16));
  }
  VRAMLAB_EXPECT_PASSES(bf16.comparison());
  VRAMLAB_EXPECT_PASSES(f16.comparison());
}

TEST(NarrowFloat, MatchesTheRuntimeOnRandomBitPatterns) {
  // Uniform bit patterns reach every class (1 in 256 is a NaN or an infinity), plus patterns
  // whose dropped bits are exactly a tie or one off it, which uniform bits almost never hit.
  std::mt19937_64 rng(0x0311);
  BitsCheck bf16("bf16 bits vs convert.h on random f32 patterns");
  BitsCheck f16("f16 bits vs convert.h on random f32 patterns");
  for (int i = 0; i < 3'000'000; ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    check_both(from_bits(bits & 0x7FFFFFFFu), bf16, f16);
    // The same high bits with the dropped bits a tie, and one below and above it.
    for (uint32_t low : {0x8000u, 0x7FFFu, 0x8001u})
      check_both(from_bits((bits & 0x7FFF0000u) | low), bf16, f16);
    for (uint32_t low : {0x1000u, 0x0FFFu, 0x1001u})
      check_both(from_bits((bits & 0x7FFFE000u) | low), bf16, f16);
  }
  VRAMLAB_EXPECT_PASSES(bf16.comparison());
  VRAMLAB_EXPECT_PASSES(f16.comparison());
}

TEST(NarrowFloat, ExhaustiveOverTheBinadesWhereF16UnderflowsAndOverflows) {
  // Every f32 from 2^-26 up to 2^-13 (below half the smallest subnormal, all of f16's subnormals,
  // its smallest normals) and every f32 from 2^15 up to 2^16 (f16's top binade and its overflow),
  // both signs: 2^23 values per binade. bf16 is swept over f32's subnormals, [1, 2) and the top
  // binade, where it overflows.
  BitsCheck f16("f16 bits vs convert.h, exhaustive");
  BitsCheck bf16("bf16 bits vs convert.h, exhaustive");
  std::vector<uint32_t> f16_binades;
  for (uint32_t e = 127 - 26; e <= 127 - 14; ++e) f16_binades.push_back(e);
  f16_binades.push_back(127 + 15);
  for (uint32_t e : f16_binades) {
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      const float x = from_bits((e << 23) | m);
      f16.add(x, f32_to_f16_bits(x), to_f16_bits(x));
      f16.add(-x, f32_to_f16_bits(-x), to_f16_bits(-x));
    }
  }
  for (uint32_t e : {0u, 127u, 254u}) {
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      const float x = from_bits((e << 23) | m);
      bf16.add(x, f32_to_bf16_bits(x), to_bf16_bits(x));
      bf16.add(-x, f32_to_bf16_bits(-x), to_bf16_bits(-x));
    }
  }
  VRAMLAB_EXPECT_PASSES(f16.comparison());
  VRAMLAB_EXPECT_PASSES(bf16.comparison());
}

}  // namespace
}  // namespace vramlab::lesson03
