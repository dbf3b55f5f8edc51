// Tests of exercise 09.1 (the dynamic code map and block-wise quantization of 8-bit AdamW). They
// run against your code (`vramlab check 09.1`) and against the reference (ctest:
// test_ex_09_1_ref).
// Expectations: the runtime's map and quantizer (kernels/cpu/optimizer_8bit.h, bitsandbytes'
// semantics) on seeded random tensors shaped like Adam's moments (signs for m, squares for v,
// magnitudes over eight decades, one outlier per tensor), of odd sizes with a partial last block
// and block sizes 1 … 4096; ties found exactly in f32 between every pair of neighbouring codes;
// the round-trip error bounded by half the gap between the two codes around x / absmax (plus
// the f32 rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "kernels/cpu/optimizer_8bit.h"
#include "lessons/09-optimizer-memory/api/blockwise_quantization.h"

namespace vramlab::lesson09 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// A value as printf's %.9g prints it: every f32 digit, and small values not shown as 0.000000.
std::string g9(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

const CodeMap& runtime_map(bool is_signed) {
  return kernels::cpu::dynamic_quantization_map(is_signed);
}

const char* map_name(bool is_signed) {
  return is_signed ? "signed map" : "unsigned map";
}

// What the runtime stores for x: the codes and the absmax of every block.
BlockwiseQuantized runtime_quantize(const std::vector<float>& x, int64_t block, bool is_signed) {
  const auto n = static_cast<int64_t>(x.size());
  BlockwiseQuantized out{
      std::vector<uint8_t>(x.size(), 0),
      std::vector<float>(static_cast<size_t>(kernels::cpu::quantization_block_count(n, block)))};
  kernels::cpu::quantize_blockwise(out.codes.data(), out.absmax.data(), x.data(), n, block,
                                   runtime_map(is_signed));
  return out;
}

// Tensors shaped like Adam's moments: m has both signs, v = (something)² ≥ 0, and in both the
// magnitudes spread over eight decades, with one outlier 1000 times the rest (what block-wise
// quantization confines to its block).
std::vector<float> moment_like(std::mt19937_64& rng, int64_t n, bool is_signed) {
  std::uniform_real_distribution<double> decade(-8.0, 0.0), unit(0.0, 1.0);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& value : x) {
    const double magnitude = std::pow(10.0, decade(rng));
    value = static_cast<float>(is_signed && unit(rng) < 0.5 ? -magnitude : magnitude);
  }
  if (n > 0) x[static_cast<size_t>(n / 3)] *= 1000.0f;
  return x;
}

std::vector<float> normal_values(std::mt19937_64& rng, int64_t n, bool is_signed) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& value : x) value = is_signed ? normal(rng) : normal(rng) * normal(rng);
  return x;
}

// One case per tensor: the first element whose code differs, and how many do.
struct QuantizationChecks {
  Comparison codes{"code index of an element (first mismatch per tensor)", Unit::kNumber};
  Comparison absmax{"absmax of a block (first mismatch per tensor)", Unit::kNumber};

  void add(const std::string& where, const std::vector<float>& x, int64_t block,
           const BlockwiseQuantized& expected, const BlockwiseQuantized& got) {
    if (got.codes.size() != expected.codes.size() || got.absmax.size() != expected.absmax.size()) {
      codes.add(where + ": number of codes", static_cast<double>(expected.codes.size()),
                static_cast<double>(got.codes.size()));
      absmax.add(where + ": number of absmax values", static_cast<double>(expected.absmax.size()),
                 static_cast<double>(got.absmax.size()));
      return;
    }
    size_t first = expected.codes.size(), wrong = 0;
    for (size_t i = 0; i < expected.codes.size(); ++i)
      if (got.codes[i] != expected.codes[i]) {
        if (wrong++ == 0) first = i;
      }
    if (wrong == 0) {
      codes.add(where, 0, 0);
    } else {
      const size_t b = first / static_cast<size_t>(block);
      codes.add(where + ": element " + std::to_string(first) + " of block " + std::to_string(b) +
                    " (x = " + g9(x[first]) + ", block absmax = " + g9(expected.absmax[b]) + "; " +
                    std::to_string(wrong) + " codes wrong)",
                expected.codes[first], got.codes[first]);
    }
    size_t first_block = expected.absmax.size();
    for (size_t b = 0; b < expected.absmax.size() && first_block == expected.absmax.size(); ++b)
      if (!(got.absmax[b] == expected.absmax[b] ||
            (std::isnan(got.absmax[b]) && std::isnan(expected.absmax[b]))))
        first_block = b;
    if (first_block == expected.absmax.size())
      absmax.add(where, 0, 0);
    else
      absmax.add(where + ": block " + std::to_string(first_block), expected.absmax[first_block],
                 got.absmax[first_block]);
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(codes);
    VRAMLAB_EXPECT_PASSES(absmax);
  }
};

std::string case_name(const char* kind, bool is_signed, int64_t n, int64_t block) {
  return std::string(kind) + " " + map_name(is_signed) + " n=" + std::to_string(n) +
         " B=" + std::to_string(block);
}

TEST(BlockwiseQuantization, BothMapsEqualTheRuntimesWithinAMillionth) {
  for (const bool is_signed : {true, false}) {
    Comparison codes(std::string("codes of the ") + map_name(is_signed), Unit::kNumber, 0.0, 1e-6);
    const CodeMap got = dynamic_code_map(is_signed);
    const CodeMap& expected = runtime_map(is_signed);
    for (size_t i = 0; i < expected.size(); ++i)
      codes.add("index " + std::to_string(i), expected[i], got[i]);
    VRAMLAB_EXPECT_PASSES(codes);
  }
}

//! [test]
TEST(BlockwiseQuantization, CodesAndAbsmaxEqualTheRuntimesForOddSizesAndBlocks) {
  std::mt19937_64 rng(901);
  QuantizationChecks checks;
  for (const bool is_signed : {true, false})
    for (const int64_t n : {1, 7, 255, 256, 257, 4099, 100003})
      for (const int64_t block : {1, 3, 64, 256, 2048}) {
        const std::vector<float> m = moment_like(rng, n, is_signed);
        checks.add(case_name("moment-like", is_signed, n, block), m, block,
                   runtime_quantize(m, block, is_signed),
                   quantize_blockwise(m, block, runtime_map(is_signed)));
        const std::vector<float> g = normal_values(rng, n, is_signed);
        checks.add(case_name("normal", is_signed, n, block), g, block,
                   runtime_quantize(g, block, is_signed),
                   quantize_blockwise(g, block, runtime_map(is_signed)));
      }
  checks.expect_passes();
}
//! [test]

// Every f32 value strictly between two neighbouring codes whose f32 distances to both are equal.
std::vector<float> ties_between(float lo, float hi) {
  std::vector<float> ties;
  float v = lo + (hi - lo) / 2.0f;
  for (int step = 0; step < 4; ++step) v = std::nextafter(v, lo);
  for (int step = 0; step < 9; ++step, v = std::nextafter(v, hi))
    if (v > lo && v < hi && std::fabs(v - lo) == std::fabs(v - hi)) ties.push_back(v);
  return ties;
}

TEST(BlockwiseQuantization, ATieBetweenTwoCodesGoesToTheLowerIndex) {
  for (const bool is_signed : {true, false}) {
    const CodeMap& code = runtime_map(is_signed);
    Comparison direct(std::string("nearest_code at an exact tie, ") + map_name(is_signed),
                      Unit::kNumber);
    Comparison in_block(
        std::string("code of a tied element in a block of absmax 4, ") + map_name(is_signed),
        Unit::kNumber);
    for (size_t i = 0; i + 1 < code.size(); ++i)
      for (const float v : ties_between(code[i], code[i + 1])) {
        const std::string where =
            "x = " + g9(v) + " between code " + std::to_string(i) + " and " + std::to_string(i + 1);
        direct.add(where, static_cast<double>(i), nearest_code(code, v));
        // A power-of-two absmax divides exactly, so the block holds the same tie.
        const std::vector<float> block = {4.0f, 4.0f * v, 4.0f * v};
        in_block.add(where, static_cast<double>(i), quantize_blockwise(block, 3, code).codes[1]);
      }
    // Both maps have exact ties between most neighbours; too few means the search above broke.
    EXPECT_GE(direct.count(), 100u)
        << map_name(is_signed) << ": only " << direct.count() << " ties found";
    VRAMLAB_EXPECT_PASSES(direct);
    VRAMLAB_EXPECT_PASSES(in_block);
  }
}

TEST(BlockwiseQuantization, ZeroBlocksNonFiniteBlocksAndValuesBeyondTheCodes) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  QuantizationChecks checks;
  const std::vector<std::pair<const char*, std::vector<float>>> tensors = {
      {"an all-zero block between two others", {1, -2, 0.5, 0, 0, 0, 0, -0.0f, 3, 1e-3f}},
      {"a NaN in the middle block", {1, -2, 0.5, 0.25, nan, 7, 2, 1, 1e-3f}},
      {"+inf and -inf in two blocks", {inf, 1, 2, 3, 4, -5, -inf, 0, 1}},
      {"-absmax (below the signed map's first code)", {-8, 8, 1, -1, -3, 3, -0.5, 2, 0}},
      {"subnormals only", {tiny, -tiny, 4 * tiny, 0, tiny, -3 * tiny, 0, 0, 2 * tiny}},
      {"one element per block", {-1, 1, 0.3f, -7, 1e-30f, 0}},
  };
  for (const bool is_signed : {true, false})
    for (const auto& [what, x] : tensors)
      for (const int64_t block : {1, 3, 4}) {
        const std::string where =
            std::string(what) + ", " + map_name(is_signed) + " B=" + std::to_string(block);
        checks.add(where, x, block, runtime_quantize(x, block, is_signed),
                   quantize_blockwise(x, block, runtime_map(is_signed)));
      }
  checks.expect_passes();
  const std::vector<float> empty;
  EXPECT_TRUE(quantize_blockwise(empty, 256, runtime_map(true)).absmax.empty())
      << "an empty tensor has no block";
}

// Half the gap between the two codes that enclose v (the end pair when v lies beyond the codes).
double half_local_gap(const CodeMap& code, double v) {
  size_t lo = 0;
  while (lo + 2 < code.size() && code[lo + 1] <= v) ++lo;
  return (static_cast<double>(code[lo + 1]) - static_cast<double>(code[lo])) / 2.0;
}

TEST(BlockwiseQuantization, RoundTripErrorIsAtMostHalfTheLocalCodeGapTimesTheBlocksAbsmax) {
  std::mt19937_64 rng(902);
  for (const bool is_signed : {true, false}) {
    const CodeMap& code = runtime_map(is_signed);
    // The ratio |error| / bound, at most 1. The bound is half the gap times the absmax, plus the
    // f32 rounding of x / absmax, of the codes themselves (the signed map's end pair is exactly
    // 2 half gaps from -1 in decimal, not in f32) and of code · absmax: 2^-22 of |x| + |result|.
    Comparison ratio(std::string("round-trip |error| / (half the local code gap x block absmax + "
                                 "f32 rounding), ") +
                         map_name(is_signed),
                     Unit::kNumber, 1.0);
    for (const int64_t n : {5, 1000, 4099})
      for (const int64_t block : {1, 7, 256, 2048}) {
        const std::vector<float> x = moment_like(rng, n, is_signed);
        const BlockwiseQuantized q = quantize_blockwise(x, block, code);
        const std::vector<float> back = dequantize_blockwise(q, block, code);
        ASSERT_EQ(back.size(), x.size());
        double worst = 0.0;
        std::string worst_where = case_name("moment-like", is_signed, n, block);
        for (int64_t start = 0; start < n; start += block) {
          double absmax = 0.0;  // the block's own, measured here
          for (int64_t i = start; i < std::min(start + block, n); ++i)
            absmax = std::max(absmax, std::fabs(static_cast<double>(x[static_cast<size_t>(i)])));
          for (int64_t i = start; i < std::min(start + block, n); ++i) {
            const double xi = x[static_cast<size_t>(i)];
            const double yi = back[static_cast<size_t>(i)];
            const double bound = half_local_gap(code, xi / absmax) * absmax +
                                 0x1p-22 * (std::fabs(xi) + std::fabs(yi));
            const double r = std::fabs(yi - xi) / bound;
            if (!(r <= worst)) {
              worst = r;
              worst_where = case_name("moment-like", is_signed, n, block) + " element " +
                            std::to_string(i) + " x = " + g9(xi);
            }
          }
        }
        ratio.add(worst_where, 0.0, worst);
      }
    VRAMLAB_EXPECT_PASSES(ratio);
  }
}

template <typename F>
void expect_usage_error_naming(const std::string& call, const std::string& value, F f) {
  try {
    f();
    ADD_FAILURE() << call << " accepted " << value;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos)
        << call << ": the message should name " << value << ": " << e.what();
  }
}

TEST(BlockwiseQuantization, RejectsABadBlockSizeOrAbsmaxCountNamingTheValue) {
  const std::vector<float> x = {1, 2, 3};
  const CodeMap& code = runtime_map(true);
  expect_usage_error_naming("quantize_blockwise(B = 0)", "0",
                            [&] { quantize_blockwise(x, 0, code); });
  expect_usage_error_naming("quantize_blockwise(B = -256)", "-256",
                            [&] { quantize_blockwise(x, -256, code); });
  expect_usage_error_naming("dequantize_blockwise(B = -3)", "-3", [&] {
    dequantize_blockwise(BlockwiseQuantized{{1, 2, 3}, {1.0f}}, -3, code);
  });
  // 5 elements in blocks of 2 need 3 absmax values, not 2.
  expect_usage_error_naming("dequantize_blockwise(5 codes, 2 absmax, B = 2)", "2", [&] {
    dequantize_blockwise(BlockwiseQuantized{{1, 2, 3, 4, 5}, {1.0f, 1.0f}}, 2, code);
  });
}

}  // namespace
}  // namespace vramlab::lesson09
