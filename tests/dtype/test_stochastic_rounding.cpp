// Stochastic rounding to f16/bf16: reproducible per seed, always one of the two neighbours, and
// unbiased (the mean of many roundings converges to x within a stated statistical bound).
//   build/tests/bin/test_dtype --gtest_filter='Stochastic*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"

namespace vramlab {
namespace {

struct StochasticFormat {
  std::string name;
  uint16_t (*round)(float, uint32_t);
  uint16_t (*round_nearest)(float);
  float (*to_f32)(uint16_t);
};

std::vector<StochasticFormat> stochastic_formats() {
  return {{"f16", f32_to_f16_bits_stochastic, f32_to_f16_bits, f16_bits_to_f32},
          {"bf16", f32_to_bf16_bits_stochastic, f32_to_bf16_bits, bf16_bits_to_f32}};
}

// Values spread over normal and subnormal ranges of both formats, both signs.
std::vector<float> sample_values(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 15);
  std::vector<float> values(count);
  for (float& v : values) v = (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
  return values;
}

TEST(StochasticBits, DependOnlyOnSeedAndIndex) {
  EXPECT_EQ(stochastic_bits(7, 12345), stochastic_bits(7, 12345));
  int64_t same_across_seeds = 0, same_across_indices = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    same_across_seeds += stochastic_bits(1, i) == stochastic_bits(2, i);
    same_across_indices += stochastic_bits(1, i) == stochastic_bits(1, i + 1);
  }
  // Unrelated 32-bit values collide with probability 2^-32 each: expect 0 in 10^4 draws.
  EXPECT_EQ(same_across_seeds, 0);
  EXPECT_EQ(same_across_indices, 0);
}

TEST(StochasticBits, AreUniformEnoughForRounding) {
  // Each of the 32 bits is set with frequency 1/2: binomial sigma = sqrt(N)/2; bound 5 sigma.
  constexpr int64_t kDraws = 200000;
  std::vector<int64_t> ones(32, 0);
  for (int64_t i = 0; i < kDraws; ++i) {
    const uint32_t r = stochastic_bits(99, static_cast<uint64_t>(i));
    for (int b = 0; b < 32; ++b) ones[static_cast<size_t>(b)] += (r >> b) & 1u;
  }
  const double sigma = std::sqrt(static_cast<double>(kDraws)) / 2;
  for (int b = 0; b < 32; ++b) {
    const double deviation =
        std::abs(static_cast<double>(ones[static_cast<size_t>(b)]) - kDraws / 2.0);
    EXPECT_LE(deviation, 5 * sigma)
        << "bit " << b << " is set " << ones[static_cast<size_t>(b)] << " times in " << kDraws
        << " (" << deviation / sigma << " sigma)";
  }
}

TEST(StochasticRounding, SameSeedSameBitsDifferentSeedDifferentBits) {
  const std::vector<float> values = sample_values(4096, 1);
  for (const StochasticFormat& f : stochastic_formats()) {
    int64_t differing = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t a = f.round(values[i], stochastic_bits(42, i));
      EXPECT_EQ(a, f.round(values[i], stochastic_bits(42, i))) << f.name << " element " << i;
      differing += a != f.round(values[i], stochastic_bits(43, i));
    }
    // Random values are almost never exactly representable, so each element differs between seeds
    // with probability 2p(1-p) > 0; thousands of elements make zero differences impossible.
    EXPECT_GT(differing, 100) << f.name;
  }
}

TEST(StochasticRounding, AlwaysGivesOneOfTheTwoNeighbours) {
  const std::vector<float> values = sample_values(100000, 2);
  for (const StochasticFormat& f : stochastic_formats()) {
    int64_t bad = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float x = values[i];
      const uint16_t r = f.round(x, stochastic_bits(5, i));
      const float got = f.to_f32(r);
      // got must be on x's side of zero, and the pattern one step back toward x must lie on the
      // other side of x (or be x): then no representable value sits strictly between x and got.
      bool ok = std::signbit(got) == std::signbit(x);
      if (ok && std::abs(got) > std::abs(x))
        ok = std::abs(f.to_f32(static_cast<uint16_t>(r - 1))) <= std::abs(x);
      if (ok && std::abs(got) < std::abs(x))
        ok = std::abs(f.to_f32(static_cast<uint16_t>(r + 1))) >= std::abs(x);
      if (!ok && ++bad <= 5) {
        ADD_FAILURE() << f.name << ": " << x << " rounded to " << got << " (0x" << std::hex << r
                      << ")";
      }
    }
    EXPECT_EQ(bad, 0) << f.name;
  }
}

TEST(StochasticRounding, RepresentableValuesAndSpecialsAreKept) {
  for (const StochasticFormat& f : stochastic_formats()) {
    for (float x : {0.0f, -0.0f, 1.0f, -3.5f, 0x1p-14f, std::numeric_limits<float>::infinity()}) {
      for (uint32_t r : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
        EXPECT_EQ(f.round(x, r), f.round_nearest(x)) << f.name << " x=" << x << " r=" << r;
      }
    }
    EXPECT_EQ(f.round(std::nanf(""), 123u), 0x7FFF) << f.name;
  }
}

// Mean of N roundings of x: each draw is lo + spacing * Bernoulli(p) with p = (x - lo) / spacing,
// so the mean has standard deviation sigma = spacing * sqrt(p (1 - p) / N). Bound: 5 sigma
// (a false failure has probability below 1e-6).
TEST(StochasticRounding, IsUnbiasedWithinFiveSigma) {
  constexpr size_t kDraws = 1000000;
  // Normal values of both signs, then each format's own subnormals (where p is not negligible).
  const std::vector<float> common_values = {
      1.0f + 0.3f * 0x1p-7f, -1.0f - 0.7f * 0x1p-10f, 3.14159265f, 0.1f, 1e-3f, 60000.7f};
  const std::vector<float> f16_subnormals = {2.5f * 0x1p-24f, 0.25f * 0x1p-24f, -7.77e-6f};
  const std::vector<float> bf16_subnormals = {1.3f * 0x1p-133f, -0x1.0101p-127f};
  for (const StochasticFormat& f : stochastic_formats()) {
    std::vector<float> values = common_values;
    const std::vector<float>& subnormals = f.name == "f16" ? f16_subnormals : bf16_subnormals;
    values.insert(values.end(), subnormals.begin(), subnormals.end());
    for (size_t v = 0; v < values.size(); ++v) {
      const float x = values[v];
      double sum = 0;
      float lo = f.to_f32(f.round(x, 0xFFFFFFFFu));  // never rounds away from zero
      float hi = lo;
      for (size_t i = 0; i < kDraws; ++i) {
        const float r = f.to_f32(f.round(x, stochastic_bits(1000 + v, i)));
        sum += r;
        if (std::abs(r) > std::abs(hi)) hi = r;
      }
      const double spacing = std::abs(static_cast<double>(hi) - lo);
      const double p = (static_cast<double>(x) - lo) / (static_cast<double>(hi) - lo);
      const double sigma = spacing * std::sqrt(p * (1 - p) / kDraws);
      const double mean = sum / kDraws;
      const double error = std::abs(mean - static_cast<double>(x));
      EXPECT_GT(spacing, 0.0) << f.name << " x=" << x << " never rounded up";
      EXPECT_LE(error, 5 * sigma) << f.name << " x=" << x << ": mean " << mean << " off by "
                                  << error << " = " << 100 * error / (5 * sigma)
                                  << "% of the 5-sigma bound (sigma " << sigma << ")";
    }
  }
}

}  // namespace
}  // namespace vramlab
