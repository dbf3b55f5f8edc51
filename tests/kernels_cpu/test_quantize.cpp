// Tests of kernels/cpu/quantize.h: the fast kernel against the plain-loop reference (bitwise) and
// against the properties that define the scheme, checked from first principles here: the scale
// is max |x| / 127, the block's largest element maps to ±127, every element dequantises within
// half a step, halves round to even, all-zero blocks give scale 0 and q 0, a NaN or ±inf makes
// its own block (and only it) NaN, and block sizes 1, 7 and n.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/quantize.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::within_tolerance;

struct Quantized {
  std::vector<int8_t> q;      // (n)
  std::vector<float> scales;  // (blocks)
  std::vector<float> back;    // (n) dequantised
};

// Outputs start as garbage (q 0x55, floats 12345): the kernels must write every element.
Quantized quantize(const std::vector<float>& x, int64_t block) {
  const auto n = static_cast<int64_t>(x.size());
  Quantized r{std::vector<int8_t>(x.size(), 0x55),
              std::vector<float>(static_cast<size_t>(int8_block_count(n, block)), 12345.0f),
              std::vector<float>(x.size(), 12345.0f)};
  quantize_int8(r.q.data(), r.scales.data(), x.data(), n, block);
  dequantize_int8(r.back.data(), r.q.data(), r.scales.data(), n, block);
  return r;
}

// Blocks of very different magnitudes (1e-4 .. 1e4), normal values inside each.
std::vector<float> random_blocks(int64_t n, int64_t block, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> exponent(-4.0, 4.0);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t first = 0; first < n; first += block) {
    const double magnitude = std::pow(10.0, exponent(generator));
    for (int64_t i = first; i < std::min(n, first + block); i++) {
      x[static_cast<size_t>(i)] = static_cast<float>(magnitude * normal(generator));
    }
  }
  return x;
}

TEST(QuantizeInt8, FastMatchesTheReferenceBitwise) {
  for (const int64_t n : {0, 1, 7, 1000, 4099}) {
    for (const int64_t block : {int64_t{1}, int64_t{7}, int64_t{64}, std::max<int64_t>(n, 1)}) {
      auto x = random_blocks(n, block, static_cast<uint64_t>(n * 7 + block));
      if (n >= 4 * block) {
        x[static_cast<size_t>(block)] = NAN;  // block 1 non-finite; block 2 all zero
        std::fill(x.begin() + 2 * block, x.begin() + 3 * block, 0.0f);
      }
      const Quantized fast = quantize(x, block);
      std::vector<int8_t> q(x.size());
      std::vector<float> scales(fast.scales.size()), back(x.size());
      quantize_int8_reference(q.data(), scales.data(), x.data(), n, block);
      dequantize_int8_reference(back.data(), q.data(), scales.data(), n, block);
      const std::string name = " n=" + std::to_string(n) + " block=" + std::to_string(block);
      EXPECT_EQ(fast.q, q) << "q" << name;
      // memcmp, not ==: NaN scales must match too. Empty buffers have no data() to compare.
      EXPECT_TRUE(scales.empty() ||
                  std::memcmp(fast.scales.data(), scales.data(), scales.size() * 4) == 0)
          << "scales" << name;
      EXPECT_TRUE(back.empty() || std::memcmp(fast.back.data(), back.data(), back.size() * 4) == 0)
          << "dequantised" << name;
    }
  }
}

// Per block: scale = max |x| / 127; the argmax maps to ±127; |q| ≤ 127 and never −128; every
// element dequantises within scale / 2 (plus the two float roundings: x / scale, relative 2^-24
// of at most 127 steps, and q · scale, 2^-24 of |x|).
TEST(QuantizeInt8, EveryElementRoundTripsWithinHalfAStep) {
  for (const int64_t n : {1, 7, 1000, 4099}) {
    for (const int64_t block : {int64_t{1}, int64_t{7}, int64_t{100}, n}) {
      const auto x = random_blocks(n, block, static_cast<uint64_t>(n + 1000 * block));
      const Quantized r = quantize(x, block);
      const std::string name = " n=" + std::to_string(n) + " block=" + std::to_string(block);
      for (int64_t j = 0; j < int8_block_count(n, block); j++) {
        const int64_t first = j * block, last = std::min(n, first + block);
        float amax = 0.0f;
        int64_t argmax = first;
        for (int64_t i = first; i < last; i++) {
          if (std::fabs(x[static_cast<size_t>(i)]) > amax) {
            amax = std::fabs(x[static_cast<size_t>(i)]);
            argmax = i;
          }
        }
        ASSERT_EQ(r.scales[static_cast<size_t>(j)], amax / 127.0f)
            << "scale of block " << j << name;
        EXPECT_EQ(std::abs(r.q[static_cast<size_t>(argmax)]), 127) << "block max" << name;
      }
      for (const int8_t value : r.q) ASSERT_GE(value, -127) << name;
      const auto tolerance = [&](int64_t i) {
        const double scale = r.scales[static_cast<size_t>(i / block)];
        return scale * (0.5 + 127.0 * 0x1p-24) + std::fabs(x[static_cast<size_t>(i)]) * 0x1p-24;
      };
      EXPECT_TRUE(within_tolerance("round trip" + name, r.back.data(), x.data(), n, tolerance,
                                   "scale/2 + float rounding"));
    }
  }
}

TEST(QuantizeInt8, HalvesRoundToEven) {
  // max |x| = 127 makes the scale exactly 1, so x / scale = x: every .5 is an exact tie.
  const std::vector<float> x = {127.0f, 0.5f,  1.5f,   2.5f,    3.5f,        -0.5f,
                                -1.5f,  -2.5f, 126.5f, -125.5f, 0.49999997f, 2.5000002f};
  const std::vector<int8_t> expected = {127, 0, 2, 2, 4, 0, -2, -2, 126, -126, 0, 3};
  const Quantized r = quantize(x, static_cast<int64_t>(x.size()));
  ASSERT_EQ(r.scales[0], 1.0f);
  EXPECT_EQ(r.q, expected);
}

TEST(QuantizeInt8, AnAllZeroBlockHasScaleZeroAndDequantisesToZero) {
  std::vector<float> x(21, 0.0f);
  x[3] = -0.0f;
  for (int64_t i = 14; i < 21; i++) x[static_cast<size_t>(i)] = static_cast<float>(i);
  const Quantized r = quantize(x, 7);  // blocks 0 and 1 zero, block 2 not
  EXPECT_EQ(r.scales[0], 0.0f);
  EXPECT_EQ(r.scales[1], 0.0f);
  EXPECT_EQ(r.scales[2], 20.0f / 127.0f);
  for (int64_t i = 0; i < 14; i++) {
    EXPECT_EQ(r.q[static_cast<size_t>(i)], 0) << i;
    EXPECT_EQ(r.back[static_cast<size_t>(i)], 0.0f) << i;
  }
}

TEST(QuantizeInt8, ANonFiniteValueMakesOnlyItsOwnBlockNaN) {
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    auto x = random_blocks(35, 7, 5);
    x[16] = bad;  // block 2 of 5
    const Quantized r = quantize(x, 7);
    for (int64_t j = 0; j < 5; j++) {
      EXPECT_EQ(std::isnan(r.scales[static_cast<size_t>(j)]), j == 2)
          << "block " << j << " " << bad;
    }
    for (int64_t i = 14; i < 21; i++) {
      EXPECT_EQ(r.q[static_cast<size_t>(i)], 0) << i;
      EXPECT_TRUE(std::isnan(r.back[static_cast<size_t>(i)])) << i;
    }
    for (int64_t i = 0; i < 35; i++) {
      if (i < 14 || i >= 21) {
        EXPECT_TRUE(std::isfinite(r.back[static_cast<size_t>(i)])) << i;
      }
    }
  }
}

TEST(QuantizeInt8, BlockOfOneKeepsEverySignAndMagnitudeToWithinAStep) {
  // Each element is its own block: q = ±127 (or 0), x back to within scale / 2 ≈ |x| / 254.
  const auto x = random_blocks(257, 1, 9);
  const Quantized r = quantize(x, 1);
  for (size_t i = 0; i < x.size(); i++) {
    ASSERT_EQ(r.q[i], x[i] > 0 ? 127 : -127) << i;
    ASSERT_LE(std::fabs(r.back[i] - x[i]), std::fabs(x[i]) * 0x1p-22) << i;
  }
}

TEST(QuantizeInt8, BlockCountIsCeilWithoutOverflow) {
  static_assert(int8_block_count(0, 5) == 0);
  static_assert(int8_block_count(10, 5) == 2);
  static_assert(int8_block_count(11, 5) == 3);
  static_assert(int8_block_count(std::numeric_limits<int64_t>::max(), 2) == (int64_t{1} << 62));
  static_assert(int8_block_count(std::numeric_limits<int64_t>::max(), 1) ==
                std::numeric_limits<int64_t>::max());
  SUCCEED();
}

TEST(QuantizeInt8, RejectsABlockBelowOneAndANegativeSize) {
  int8_t q = 0;
  float x = 1.0f, scale = 0.0f;
  EXPECT_THROW(quantize_int8(&q, &scale, &x, 1, 0), InternalError);
  EXPECT_THROW(dequantize_int8(&x, &q, &scale, 1, -3), InternalError);
  EXPECT_THROW(quantize_int8(&q, &scale, &x, -1, 1), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
