// Tests of exercise 02.3 (int8 compression with absmax scales). They run against your code
// (`vramlab check 02.3`) and against the reference (ctest: test_ex_02_3_ref).
// Expectations: the runtime's own int8 kernels (nn::CpuKernelBackend::quantize_int8 and
// dequantize_int8), bit for bit; the scheme of the API header, element by element in the test's
// own code (float division, std::nearbyint rounds ties to even in the default rounding mode); the
// error bound
// |x - q·scale| ≤ scale/2 on random tensors; hand-made ties, all-zero and non-finite blocks; and
// block counts for tensors of more than 2^31 elements (computed, never allocated).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/tensor_view.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/02-checkpointing/api/int8_compression.h"

namespace vramlab::lesson02 {
namespace {

using workbook::Comparison;
using workbook::Unit;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string where(size_t n, int64_t block) {
  return "n=" + std::to_string(n) + " block=" + std::to_string(block);
}

// The test's own count: whole blocks, plus one for a remainder.
int64_t blocks_of(int64_t n, int64_t block) {
  return n / block + (n % block > 0 ? 1 : 0);
}

struct Quantized {
  std::vector<int8_t> q;      // (n)
  std::vector<float> scales;  // (blocks)
};

// The scheme, element by element.
Quantized expected_quantization(const std::vector<float>& x, int64_t block) {
  const auto n = static_cast<int64_t>(x.size());
  Quantized out;
  out.q.assign(x.size(), 0);
  for (int64_t first = 0; first < n; first += block) {
    const int64_t last = std::min(n, first + block);
    float amax = 0.0f;
    bool finite = true;
    for (int64_t i = first; i < last; ++i) {
      const float v = x[static_cast<size_t>(i)];
      if (std::isnan(v) || std::isinf(v)) finite = false;
      if (std::fabs(v) > amax) amax = std::fabs(v);
    }
    const float scale = finite ? amax / 127.0f : kNaN;
    out.scales.push_back(scale);
    for (int64_t i = first; i < last; ++i) {
      if (!(scale > 0.0f)) continue;  // zero and NaN scales store 0
      float r = std::nearbyint(x[static_cast<size_t>(i)] / scale);
      r = std::min(127.0f, std::max(-127.0f, r));
      out.q[static_cast<size_t>(i)] = static_cast<int8_t>(r);
    }
  }
  return out;
}

Quantized yours(const std::vector<float>& x, int64_t block) {
  Quantized out;
  // Pre-filled with values the scheme never produces, so an element left unwritten shows.
  out.q.assign(x.size(), int8_t{-128});
  out.scales.assign(static_cast<size_t>(blocks_of(static_cast<int64_t>(x.size()), block)), -1.0f);
  quantize_int8(x, block, out.q, out.scales);
  return out;
}

std::vector<float> dequantized(const Quantized& z, int64_t block) {
  std::vector<float> x(z.q.size(), -7.0f);
  dequantize_int8(z.q, z.scales, block, x);
  return x;
}

std::vector<float> random_tensor(std::mt19937_64& rng, size_t n) {
  // Magnitudes from 1e-3 to 1e3 and both signs, a few exact zeros.
  std::uniform_real_distribution<float> exponent(-3.0f, 3.0f), sign(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) {
    v = std::pow(10.0f, exponent(rng)) * (sign(rng) < 0.5f ? -1.0f : 1.0f);
    if (sign(rng) < 0.02f) v = 0.0f;
  }
  return x;
}

// Compares q element by element and the scales bitwise (NaN equal to NaN).
void compare(const std::string& name, const Quantized& expected, const Quantized& got,
             Comparison& q, Comparison& scales) {
  ASSERT_EQ(expected.q.size(), got.q.size());
  ASSERT_EQ(expected.scales.size(), got.scales.size());
  // The first differing element, or the last one when none differs.
  size_t i = 0;
  while (i + 1 < got.q.size() && got.q[i] == expected.q[i]) ++i;
  if (!got.q.empty()) q.add(name + " element " + std::to_string(i), expected.q[i], got.q[i]);
  size_t j = 0;
  auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  while (j + 1 < got.scales.size() && same(got.scales[j], expected.scales[j])) ++j;
  if (!got.scales.empty())
    scales.add(name + " block " + std::to_string(j), expected.scales[j], got.scales[j]);
}

const int64_t kBlocks[] = {1, 7, 64, 256};

TEST(Int8Compression, BlockCountsAreCeilNOverBlock) {
  Comparison count("int8_block_count", Unit::kNumber);
  std::mt19937_64 rng(0x0231);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t block = trial % 4 == 0 ? pick(1, 8) : pick(1, 5000);
    const int64_t n =
        trial % 3 == 0 ? block * pick(0, 50) : pick(0, 300000);  // exact multiples too
    count.add(where(static_cast<size_t>(n), block), static_cast<double>(blocks_of(n, block)),
              static_cast<double>(int8_block_count(n, block)));
  }
  VRAMLAB_EXPECT_PASSES(count);
}

TEST(Int8Compression, CountsAndBytesOfTensorsBeyond2To31Elements) {
  // Activations of 7B models at long context pass 2^31 elements per tensor (one (B,H,T,T)
  // attention matrix at B=1, H=32, T=8192 has 2^31). The counts need 64 bits all the way, and
  // n + block - 1 overflows for n near INT64_MAX.
  const int64_t max = std::numeric_limits<int64_t>::max();
  struct Case {
    int64_t n, block;
  };
  const Case cases[] = {{int64_t{1} << 31, 1},
                        {(int64_t{1} << 31) + 1, 64},
                        {(int64_t{1} << 33) + 5, 256},
                        {(int64_t{1} << 40) - 1, int64_t{1} << 20},
                        {(int64_t{1} << 35) + 3, int64_t{1} << 35},
                        {max, 1},
                        {max, 2},
                        {max, max},
                        {max - 1, max}};
  Comparison count("int8_block_count", Unit::kNumber);
  Comparison bytes("int8_compressed_bytes", Unit::kBytes);
  for (const Case& c : cases) {
    const int64_t blocks = blocks_of(c.n, c.block);
    count.add(where(static_cast<size_t>(c.n), c.block), static_cast<double>(blocks),
              static_cast<double>(int8_block_count(c.n, c.block)));
    if (blocks <= (max - c.n) / 4)
      bytes.add(where(static_cast<size_t>(c.n), c.block), static_cast<double>(c.n + 4 * blocks),
                static_cast<double>(int8_compressed_bytes(c.n, c.block)));
  }
  VRAMLAB_EXPECT_PASSES(count);
  VRAMLAB_EXPECT_PASSES(bytes);
  // The largest n that fits with block 1 is INT64_MAX / 5; one more overflows.
  EXPECT_EQ(int8_compressed_bytes(max / 5, 1), max / 5 * 5);
  EXPECT_THROW(int8_compressed_bytes(max / 5 + 1, 1), UsageError)
      << "5 bytes per element of INT64_MAX / 5 + 1 elements overflow int64";
}

//! [test]
TEST(Int8Compression, MatchesTheSchemeOnRandomTensorsPerBlockAndPerTensor) {
  std::mt19937_64 rng(0x0232);
  Comparison q("q (int8)", Unit::kNumber), scales("scale of a block", Unit::kNumber);
  for (size_t n :
       {size_t{1}, size_t{2}, size_t{7}, size_t{255}, size_t{256}, size_t{1000}, size_t{4097}}) {
    const std::vector<float> x = random_tensor(rng, n);
    std::vector<int64_t> blocks(std::begin(kBlocks), std::end(kBlocks));
    blocks.push_back(static_cast<int64_t>(n));      // per tensor
    blocks.push_back(static_cast<int64_t>(n) + 3);  // a block larger than the tensor
    for (int64_t block : blocks)
      compare(where(n, block), expected_quantization(x, block), yours(x, block), q, scales);
  }
  VRAMLAB_EXPECT_PASSES(q);
  VRAMLAB_EXPECT_PASSES(scales);
}
//! [test]

TEST(Int8Compression, RoundTripErrorIsAtMostHalfAScale) {
  std::mt19937_64 rng(0x0233);
  // Allowed: scale/2, plus the float rounding of q·scale (a few ulps of x).
  Comparison excess("|x - dequantised| beyond scale/2 (0 or less)", Unit::kNumber);
  Comparison range("|q| beyond 127 (0 or less)", Unit::kNumber);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 3000)(rng);
    const std::vector<float> x = random_tensor(rng, n);
    for (int64_t block : {int64_t{1}, int64_t{7}, int64_t{128}, static_cast<int64_t>(n)}) {
      const Quantized z = yours(x, block);
      const std::vector<float> back = dequantized(z, block);
      double worst = 0;
      size_t worst_i = 0;
      int worst_q = 0;
      for (size_t i = 0; i < n; ++i) {
        const float scale = z.scales[i / static_cast<size_t>(block)];
        const double allowed =
            0.5 * static_cast<double>(scale) + 4e-7 * std::fabs(static_cast<double>(x[i]));
        const double over = std::fabs(static_cast<double>(x[i]) - back[i]) - allowed;
        if (!(over <= worst)) {
          worst = std::isnan(over) ? kInf : over;
          worst_i = i;
        }
        worst_q = std::max(worst_q, std::abs(static_cast<int>(z.q[i])));
      }
      excess.add(where(n, block) + " element " + std::to_string(worst_i), 0.0, worst);
      range.add(where(n, block), 0.0, std::max(0, worst_q - 127));
    }
  }
  VRAMLAB_EXPECT_PASSES(excess);
  VRAMLAB_EXPECT_PASSES(range);
}

TEST(Int8Compression, TiesRoundToEven) {
  // amax = 127 · 0.25 gives the exact scale 0.25, so x = (k + 1/2) · 0.25 is an exact tie.
  std::vector<float> x = {31.75f};  // the amax: q = 127
  std::vector<int8_t> expected_q = {127};
  for (int k : {0, 1, 2, 3, 10, 11, 125}) {
    for (float sign : {1.0f, -1.0f}) {
      x.push_back(sign * (static_cast<float>(k) + 0.5f) * 0.25f);
      const int even = k % 2 == 0 ? k : k + 1;
      expected_q.push_back(static_cast<int8_t>(sign * static_cast<float>(even)));
    }
  }
  const int64_t n = static_cast<int64_t>(x.size());
  const Quantized got = yours(x, n);
  Comparison q("q of an exact tie (to even)", Unit::kNumber);
  for (size_t i = 0; i < x.size(); ++i)
    q.add("x=" + std::to_string(x[i]) + " (x/scale=" + std::to_string(x[i] / 0.25f) + ")",
          expected_q[i], got.q[i]);
  VRAMLAB_EXPECT_PASSES(q);
  EXPECT_EQ(got.scales, std::vector<float>{0.25f});
}

TEST(Int8Compression, AllZeroBlocksHaveScaleZeroAndComeBackAsZeros) {
  // Blocks of 5: [nonzero] [all zero] [nonzero] [all zero, the short last one].
  std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f, 0.25f, 0,     0, 0, 0,
                          0,    0,     0,    7.0f, 0,     -1.0f, 0, 0};
  const Quantized got = yours(x, 5);
  const std::vector<float> back = dequantized(got, 5);
  Comparison scales("scale of a block", Unit::kNumber), q("q (int8)", Unit::kNumber),
      zeros("dequantised element of an all-zero block", Unit::kNumber),
      nan("dequantised value is NaN (1) or not (0)", Unit::kNumber);
  const Quantized expected = expected_quantization(x, 5);
  for (size_t j = 0; j < expected.scales.size(); ++j)
    scales.add("block " + std::to_string(j), expected.scales[j], got.scales[j]);
  for (size_t i = 0; i < x.size(); ++i) {
    q.add("element " + std::to_string(i), expected.q[i], got.q[i]);
    if (i / 5 == 1 || i / 5 == 3) zeros.add("element " + std::to_string(i), 0.0, back[i]);
    nan.add("element " + std::to_string(i), 0.0, std::isnan(back[i]) ? 1.0 : 0.0);
  }
  VRAMLAB_EXPECT_PASSES(scales);
  VRAMLAB_EXPECT_PASSES(q);
  VRAMLAB_EXPECT_PASSES(zeros);
  VRAMLAB_EXPECT_PASSES(nan);
}

TEST(Int8Compression, NonFiniteBlocksGetScaleNaNAndDequantiseToNaN) {
  // Blocks of 4: [NaN] [+inf] [finite] [-inf] [finite, short].
  std::vector<float> x = {1.0f, kNaN,  2.0f, 3.0f, kInf,  1.0f, 0.5f, 0.0f,  4.0f,
                          8.0f, -2.0f, 1.0f, 5.0f, -kInf, 1.0f, 2.0f, 0.75f, -0.5f};
  const Quantized got = yours(x, 4);
  const std::vector<float> back = dequantized(got, 4);
  const Quantized expected = expected_quantization(x, 4);
  Comparison scales("scale of a block (NaN for a non-finite block)", Unit::kNumber),
      q("q (int8; 0 in a non-finite block)", Unit::kNumber),
      nan("dequantised value is NaN (1) or not (0)", Unit::kNumber);
  for (size_t j = 0; j < expected.scales.size(); ++j)
    scales.add("block " + std::to_string(j), expected.scales[j], got.scales[j]);
  for (size_t i = 0; i < x.size(); ++i) {
    q.add("element " + std::to_string(i), expected.q[i], got.q[i]);
    const bool finite_block = !std::isnan(expected.scales[i / 4]);
    nan.add("element " + std::to_string(i), finite_block ? 0.0 : 1.0,
            std::isnan(back[i]) ? 1.0 : 0.0);
  }
  VRAMLAB_EXPECT_PASSES(scales);
  VRAMLAB_EXPECT_PASSES(q);
  VRAMLAB_EXPECT_PASSES(nan);
}

// The runtime's kernels on the same input (cpu memory is host memory, so the vectors are the
// tensors).
Quantized runtime_kernels(const std::vector<float>& x, int64_t block) {
  const nn::CpuKernelBackend kernels;
  const auto n = static_cast<int64_t>(x.size());
  const int64_t blocks = blocks_of(n, block);
  Quantized out;
  out.q.assign(x.size(), 0);
  out.scales.assign(static_cast<size_t>(blocks), 0.0f);
  std::vector<float> input = x;  // (n)
  kernels.quantize_int8(memory::TensorView(out.q.data(), DType::i8, {n}),
                        memory::TensorView(out.scales.data(), DType::f32, {blocks}),
                        memory::TensorView(input.data(), DType::f32, {n}), block);
  return out;
}

std::vector<float> runtime_dequantized(const Quantized& z, int64_t block) {
  const nn::CpuKernelBackend kernels;
  const auto n = static_cast<int64_t>(z.q.size());
  Quantized copy = z;
  std::vector<float> x(z.q.size());  // (n)
  kernels.dequantize_int8(memory::TensorView(x.data(), DType::f32, {n}),
                          memory::TensorView(copy.q.data(), DType::i8, {n}),
                          memory::TensorView(copy.scales.data(), DType::f32,
                                             {static_cast<int64_t>(copy.scales.size())}),
                          block);
  return x;
}

TEST(Int8Compression, BitwiseTheRuntimesKernels) {
  // Random tensors with zeros, exact ties, all-zero and non-finite blocks, in odd sizes and
  // blocks: the compressed activations must be the bits the runtime's kernels store.
  std::mt19937_64 rng(0x0234);
  Comparison q("q (int8) vs the runtime's kernel", Unit::kNumber),
      scales("scale vs the runtime's kernel", Unit::kNumber),
      values("dequantised value vs the runtime's kernel", Unit::kNumber);
  for (size_t n : {size_t{1}, size_t{3}, size_t{64}, size_t{65}, size_t{1001}, size_t{5000}}) {
    std::vector<float> x = random_tensor(rng, n);
    // An exact tie (x / scale = 2.5 when the block's amax is 127 · 0.25) and a zero run.
    if (n >= 64) {
      x[0] = 31.75f;
      x[1] = 0.625f;
      std::fill(x.begin() + 8, x.begin() + 16, 0.0f);
    }
    if (n >= 1001) {
      x[500] = kNaN;
      x[900] = -kInf;
    }
    for (int64_t block :
         {int64_t{1}, int64_t{8}, int64_t{7}, int64_t{256}, static_cast<int64_t>(n)}) {
      const std::string name = where(n, block);
      const Quantized expected = runtime_kernels(x, block);
      const Quantized got = yours(x, block);
      compare(name, expected, got, q, scales);
      const std::vector<float> back = dequantized(got, block);
      const std::vector<float> runtime_back = runtime_dequantized(expected, block);
      size_t i = 0;
      auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
      while (i + 1 < n && same(back[i], runtime_back[i])) ++i;
      values.add(name + " element " + std::to_string(i), runtime_back[i], back[i]);
    }
  }
  VRAMLAB_EXPECT_PASSES(q);
  VRAMLAB_EXPECT_PASSES(scales);
  VRAMLAB_EXPECT_PASSES(values);
}

TEST(Int8Compression, RejectsBadInputNamingTheValue) {
  auto expect_usage_error = [](const std::string& what, const std::string& named, auto call) {
    try {
      call();
      ADD_FAILURE() << "no vramlab::UsageError for " << what;
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(named) == std::string::npos)
        ADD_FAILURE() << what << ": the message should name " << named << ": " << e.what();
    }
  };
  expect_usage_error("n = -5", "-5", [] { int8_block_count(-5, 4); });
  expect_usage_error("block = 0", "0", [] { int8_block_count(10, 0); });
  expect_usage_error("block = -3", "-3", [] { int8_compressed_bytes(10, -3); });
  expect_usage_error("n = -9 bytes", "-9", [] { int8_compressed_bytes(-9, 4); });
  std::vector<float> x(10, 1.0f), scales(3), out(10);  // 10 elements, blocks of 4: 3 scales
  std::vector<int8_t> q(10);
  std::vector<float> two_scales(2);
  std::vector<int8_t> short_q(9);
  expect_usage_error("quantize with block 0", "0", [&] { quantize_int8(x, 0, q, scales); });
  expect_usage_error("2 scales for 3 blocks", "2", [&] { quantize_int8(x, 4, q, two_scales); });
  expect_usage_error("9 q for 10 elements", "9", [&] { quantize_int8(x, 4, short_q, scales); });
  expect_usage_error("dequantize with 2 scales", "2",
                     [&] { dequantize_int8(q, two_scales, 4, out); });
  expect_usage_error("dequantize into 9 floats", "9", [&] {
    std::vector<float> short_out(9);
    dequantize_int8(q, scales, 4, short_out);
  });
  expect_usage_error("dequantize with block -1", "-1",
                     [&] { dequantize_int8(q, scales, -1, out); });
}

}  // namespace
}  // namespace vramlab::lesson02
