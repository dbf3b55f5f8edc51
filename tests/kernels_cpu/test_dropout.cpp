// Tests of kernels/cpu/dropout.h and of attention dropout (kernels/cpu/attention.h): the fast
// kernels against a reference written here from stochastic_bits, the mask's reproducibility
// (same (seed, offset) → same bits; another offset → another mask, shifted by exactly the
// offset), the keep fraction against its binomial spread, p = 0 as an exact copy, and attention
// with dropout against the composition of the non-dropout ops and against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/dtype/dropout_mask.h"
#include "common/platform/errors.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/dropout.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::bitwise_equal;
using test_util::gradient_matches;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;

constexpr uint64_t kSeed = 0xD20F0F7ull;

// The documented mask, from stochastic_bits directly: keep when top24(bits) · 2^-24 >= p.
bool expected_keep(uint64_t seed, uint64_t index, float p) {
  const double uniform = std::ldexp(static_cast<double>(stochastic_bits(seed, index) >> 8), -24);
  return uniform >= static_cast<double>(p);
}

// out[i] = keep ? inp[i] / (1 − p) : 0 in double.
std::vector<double> expected_dropout(const std::vector<float>& inp, float p, uint64_t seed,
                                     uint64_t offset) {
  std::vector<double> out(inp.size());
  for (size_t i = 0; i < inp.size(); i++) {
    out[i] = expected_keep(seed, offset + i, p)
                 ? static_cast<double>(inp[i]) / (1.0 - static_cast<double>(p))
                 : 0.0;
  }
  return out;
}

// One rounding of the scale and one of the product: 2 ulp of the result.
constexpr double kDropoutRtol = 2.0 * 0x1p-24;

TEST(Dropout, ForwardAndBackwardMatchTheMaskFromStochasticBits) {
  for (const int64_t n : {0, 1, 7, 1001, 70001}) {
    for (const float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
      for (const uint64_t offset : {uint64_t{0}, uint64_t{12345}, uint64_t{1} << 40}) {
        const auto inp = random_vector(n, static_cast<uint64_t>(n) + 3, 0.5, 2.0);
        const auto expected = expected_dropout(inp, p, kSeed, offset);
        const std::string name = " n=" + std::to_string(n) + " p=" + std::to_string(p) +
                                 " offset=" + std::to_string(offset);
        std::vector<float> out(inp.size(), NAN), dinp(inp.size(), 1e30f);
        dropout_forward(out.data(), inp.data(), n, p, kSeed, offset);
        EXPECT_TRUE(all_close("dropout_forward" + name, out, expected, 0.0, kDropoutRtol));
        // The backward WRITES dinp (its garbage must be gone) with the forward's mask.
        dropout_backward(dinp.data(), inp.data(), n, p, kSeed, offset);
        EXPECT_TRUE(all_close("dropout_backward" + name, dinp, expected, 0.0, kDropoutRtol));
        std::vector<float> ref(inp.size());
        dropout_forward_reference<float>(ref.data(), inp.data(), n, p, kSeed, offset);
        EXPECT_TRUE(bitwise_equal("fast vs float reference" + name, out, ref));
      }
    }
  }
}

TEST(Dropout, InPlaceEqualsOutOfPlace) {
  const int64_t n = 999;
  auto x = random_vector(n, 4);
  std::vector<float> out(x.size());
  dropout_forward(out.data(), x.data(), n, 0.4f, kSeed, 17);
  dropout_forward(x.data(), x.data(), n, 0.4f, kSeed, 17);
  EXPECT_TRUE(bitwise_equal("in place vs out of place", x, out));
}

TEST(Dropout, PZeroIsAnExactCopyOfEveryBitPattern) {
  std::vector<float> inp = {0.0f,
                            -0.0f,
                            1.0f,
                            -3.5f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max()};
  uint32_t nan_bits = 0x7FA00001u;  // a NaN with a payload (signalling)
  float nan;
  std::memcpy(&nan, &nan_bits, 4);
  inp.push_back(nan);
  std::vector<float> out(inp.size(), 7.0f), dinp(inp.size(), 7.0f);
  dropout_forward(out.data(), inp.data(), static_cast<int64_t>(inp.size()), 0.0f, kSeed, 99);
  dropout_backward(dinp.data(), inp.data(), static_cast<int64_t>(inp.size()), 0.0f, kSeed, 99);
  EXPECT_EQ(std::memcmp(out.data(), inp.data(), inp.size() * 4), 0) << "forward p = 0";
  EXPECT_EQ(std::memcmp(dinp.data(), inp.data(), inp.size() * 4), 0) << "backward p = 0";
}

// Ones through dropout: the mask as 0/1 (a kept 1 becomes 1 / (1 − p) > 0).
std::vector<bool> mask_of(int64_t n, float p, uint64_t seed, uint64_t offset) {
  const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
  std::vector<float> out(ones.size());
  dropout_forward(out.data(), ones.data(), n, p, seed, offset);
  std::vector<bool> mask(ones.size());
  for (size_t i = 0; i < out.size(); i++) mask[i] = out[i] != 0.0f;
  return mask;
}

TEST(Dropout, TheMaskIsAFunctionOfSeedAndOffsetPlusIndex) {
  const int64_t n = 100003;
  const float p = 0.5f;
  const auto a = mask_of(n, p, kSeed, 1000);
  EXPECT_EQ(a, mask_of(n, p, kSeed, 1000)) << "same (seed, offset) must give the same mask";
  // offset + i is the counter: the mask at offset 1000 is the mask at offset 0 shifted by 1000.
  const auto from_zero = mask_of(n + 1000, p, kSeed, 0);
  for (int64_t i = 0; i < n; i++) {
    ASSERT_EQ(a[static_cast<size_t>(i)], from_zero[static_cast<size_t>(i + 1000)]) << "index " << i;
  }
  // Another offset (not a shift of this window's overlap) or another seed: about half the bits
  // differ (independent masks at p = 0.5); require at least 45%.
  for (const auto& other : {mask_of(n, p, kSeed, 1001), mask_of(n, p, kSeed + 1, 1000)}) {
    int64_t differing = 0;
    for (int64_t i = 0; i < n; i++)
      differing += a[static_cast<size_t>(i)] != other[static_cast<size_t>(i)];
    EXPECT_GT(differing, n * 45 / 100) << differing << " of " << n << " mask bits differ";
  }
}

TEST(Dropout, KeepFractionIsOneMinusPWithinFiveBinomialStandardDeviations) {
  const int64_t n = 1 << 20;
  for (const float p : {0.1f, 0.5f, 0.9f}) {
    for (const uint64_t offset : {uint64_t{0}, uint64_t{1} << 33}) {
      const auto mask = mask_of(n, p, kSeed, offset);
      int64_t kept = 0;
      for (const bool k : mask) kept += k;
      const double fraction = static_cast<double>(kept) / static_cast<double>(n);
      const double sigma = std::sqrt(p * (1.0 - p) / static_cast<double>(n));
      EXPECT_NEAR(fraction, 1.0 - p, 5.0 * sigma)
          << "p=" << p << " offset=" << offset << ": " << kept << " of " << n << " kept, "
          << 100.0 * std::fabs(fraction - (1.0 - p)) / (5.0 * sigma) << "% of the tolerance";
    }
  }
}

TEST(Dropout, RejectsAProbabilityOutsideZeroToOneAndANegativeSize) {
  float x = 1.0f;
  for (const float p : {1.0f, -0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_THROW(dropout_forward(&x, &x, 1, p, kSeed, 0), InternalError) << p;
    EXPECT_THROW(dropout_backward(&x, &x, 1, p, kSeed, 0), InternalError) << p;
  }
  EXPECT_THROW(dropout_forward(&x, &x, -1, 0.5f, kSeed, 0), InternalError);
}

// ---- attention dropout ---------------------------------------------------------------------

struct AttentionShape {
  int64_t B, T, H, Hkv, D;
};

struct AttentionInputs {
  std::vector<float> q, k, v, dout;
};

AttentionInputs attention_inputs(const AttentionShape& s, uint64_t seed) {
  return {random_vector(s.B * s.T * s.H * s.D, seed, -2.0, 2.0),
          random_vector(s.B * s.T * s.Hkv * s.D, seed + 1, -2.0, 2.0),
          random_vector(s.B * s.T * s.Hkv * s.D, seed + 2),
          random_vector(s.B * s.T * s.H * s.D, seed + 3)};
}

TEST(AttentionDropout, PZeroIsBitwiseTheResultWithoutDropout) {
  const AttentionShape s{2, 9, 4, 2, 8};
  const auto in = attention_inputs(s, 40);
  const size_t scores = static_cast<size_t>(s.B * s.H * s.T * s.T);
  std::vector<float> out0(in.q.size()), pre0(scores), att0(scores), out1(out0), pre1(pre0),
      att1(att0);
  attention_forward(out0.data(), pre0.data(), att0.data(), in.q.data(), in.k.data(), in.v.data(),
                    s.B, s.T, s.H, s.Hkv, s.D);
  attention_forward(out1.data(), pre1.data(), att1.data(), in.q.data(), in.k.data(), in.v.data(),
                    s.B, s.T, s.H, s.Hkv, s.D, {0.0f, kSeed, 77});
  EXPECT_TRUE(bitwise_equal("out", out1, out0));
  std::vector<float> dq0(in.q.size()), dk0(in.k.size()), dv0(in.v.size()), dpre0(scores);
  auto dq1 = dq0, dk1 = dk0, dv1 = dv0, dpre1 = dpre0;
  attention_backward(dq0.data(), dk0.data(), dv0.data(), dpre0.data(), in.dout.data(), in.q.data(),
                     in.k.data(), in.v.data(), att0.data(), s.B, s.T, s.H, s.Hkv, s.D);
  attention_backward(dq1.data(), dk1.data(), dv1.data(), dpre1.data(), in.dout.data(), in.q.data(),
                     in.k.data(), in.v.data(), att0.data(), s.B, s.T, s.H, s.Hkv, s.D,
                     {0.0f, kSeed, 77});
  EXPECT_TRUE(bitwise_equal("dq", dq1, dq0));
  EXPECT_TRUE(bitwise_equal("dk", dk1, dk0));
  EXPECT_TRUE(bitwise_equal("dv", dv1, dv0));
  EXPECT_TRUE(bitwise_equal("dpreatt", dpre1, dpre0));
}

// The forward with dropout equals the composition of the non-dropout ops: att from
// attention_forward without dropout, dropout_forward on the flat (B, H, T, T) att with the same
// (seed, offset) (so the mask index is offset + the score's position), then dropped · v.
TEST(AttentionDropout, ForwardEqualsSoftmaxThenElementwiseDropoutThenTimesV) {
  for (const AttentionShape s : {AttentionShape{1, 1, 1, 1, 2}, AttentionShape{2, 7, 4, 2, 6},
                                 AttentionShape{1, 33, 3, 1, 16}}) {
    for (const float p : {0.1f, 0.5f, 0.9f}) {
      const uint64_t offset = 1000003;
      const auto in = attention_inputs(s, 50);
      const size_t scores = static_cast<size_t>(s.B * s.H * s.T * s.T);
      std::vector<float> out(in.q.size()), pre(scores), att(scores), pre0(scores), att0(scores);
      attention_forward(out.data(), pre.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                        s.B, s.T, s.H, s.Hkv, s.D, {p, kSeed, offset});
      attention_forward(nullptr, pre0.data(), att0.data(), in.q.data(), in.k.data(), in.v.data(),
                        s.B, s.T, s.H, s.Hkv, s.D);
      const std::string name = " T=" + std::to_string(s.T) + " p=" + std::to_string(p);
      // att stays the probabilities before dropout (what backward's softmax needs).
      EXPECT_TRUE(bitwise_equal("att" + name, att, att0));
      EXPECT_TRUE(bitwise_equal("preatt" + name, pre, pre0));
      std::vector<float> dropped(scores);
      dropout_forward(dropped.data(), att0.data(), static_cast<int64_t>(scores), p, kSeed, offset);
      std::vector<double> expected(out.size(), 0.0);
      const int64_t group = s.H / s.Hkv;
      for (int64_t b = 0; b < s.B; b++)
        for (int64_t t = 0; t < s.T; t++)
          for (int64_t h = 0; h < s.H; h++)
            for (int64_t t2 = 0; t2 <= t; t2++)
              for (int64_t d = 0; d < s.D; d++) {
                expected[static_cast<size_t>(((b * s.T + t) * s.H + h) * s.D + d)] +=
                    static_cast<double>(
                        dropped[static_cast<size_t>(((b * s.H + h) * s.T + t) * s.T + t2)]) *
                    in.v[static_cast<size_t>(((b * s.T + t2) * s.Hkv + h / group) * s.D + d)];
              }
      // Sums of T products of O(1 / (1 − p)) terms in float: T·u·max|term| with margin.
      const double atol = 4.0 * static_cast<double>(s.T) * 0x1p-24 / (1.0 - p);
      EXPECT_TRUE(all_close("out vs composed" + name, out, expected, atol, 0.0));
    }
  }
}

TEST(AttentionDropout, FastMatchesTheDoubleReferenceForwardAndBackward) {
  for (const AttentionShape s : {AttentionShape{2, 7, 4, 2, 6}, AttentionShape{1, 13, 3, 1, 16},
                                 AttentionShape{2, 65, 4, 4, 8}}) {
    for (const float p : {0.2f, 0.9f}) {
      const AttentionDropout dropout{p, kSeed, 4242};
      const auto in = attention_inputs(s, 60);
      const size_t scores = static_cast<size_t>(s.B * s.H * s.T * s.T);
      std::vector<float> out(in.q.size()), pre(scores), att(scores);
      attention_forward(out.data(), pre.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                        s.B, s.T, s.H, s.Hkv, s.D, dropout);
      const auto q64 = to_double(in.q), k64 = to_double(in.k), v64 = to_double(in.v),
                 dout64 = to_double(in.dout);
      std::vector<double> out64(out.size()), pre64(scores), att64(scores);
      attention_forward_reference<double>(out64.data(), pre64.data(), att64.data(), q64.data(),
                                          k64.data(), v64.data(), s.B, s.T, s.H, s.Hkv, s.D,
                                          dropout);
      const std::string name = " T=" + std::to_string(s.T) + " p=" + std::to_string(p);
      const double scale = 1.0 / (1.0 - p);
      const double atol = 8.0 * s.D * std::sqrt(static_cast<double>(s.D)) * 0x1p-24 * scale;
      EXPECT_TRUE(all_close("out" + name, out, out64, atol, atol));
      // The backward on the reference probabilities, so that its own error is measured.
      const std::vector<float> att_ref(att64.begin(), att64.end());
      const std::vector<double> att_ref64(att_ref.begin(), att_ref.end());
      auto dq = random_vector(in.q.size(), 61), dk = random_vector(in.k.size(), 62),
           dv = random_vector(in.v.size(), 63);
      auto dq64 = to_double(dq), dk64 = to_double(dk), dv64 = to_double(dv);
      std::vector<float> dpre(scores, NAN);
      std::vector<double> dpre64(scores);
      attention_backward(dq.data(), dk.data(), dv.data(), dpre.data(), in.dout.data(), in.q.data(),
                         in.k.data(), in.v.data(), att_ref.data(), s.B, s.T, s.H, s.Hkv, s.D,
                         dropout);
      attention_backward_reference<double>(dq64.data(), dk64.data(), dv64.data(), dpre64.data(),
                                           dout64.data(), q64.data(), k64.data(), v64.data(),
                                           att_ref64.data(), s.B, s.T, s.H, s.Hkv, s.D, dropout);
      const double sum_atol = atol * static_cast<double>(s.T * (s.H / s.Hkv));
      EXPECT_TRUE(all_close("dpreatt" + name, dpre, dpre64, atol, atol));
      EXPECT_TRUE(all_close("dq" + name, dq, dq64, atol * static_cast<double>(s.T), atol));
      EXPECT_TRUE(all_close("dk" + name, dk, dk64, sum_atol, atol));
      EXPECT_TRUE(all_close("dv" + name, dv, dv64, sum_atol, atol));
    }
  }
}

// For a fixed (seed, offset) the mask is a constant, so out is a smooth function of q, k, v and
// the reference backward must match central differences of the reference forward.
TEST(AttentionDropout, ReferenceGradientsMatchCentralDifferences) {
  const int64_t B = 2, T = 5, H = 4, Hkv = 2, D = 3;
  const AttentionDropout dropout{0.3f, kSeed, 999};
  auto q = random_vector<double>(B * T * H * D, 70), k = random_vector<double>(B * T * Hkv * D, 71),
       v = random_vector<double>(B * T * Hkv * D, 72);
  const auto w = random_vector<double>(q.size(), 73);
  std::vector<double> out(q.size()), preatt(B * H * T * T), att(preatt.size());
  const auto loss = [&] {
    attention_forward_reference<double>(out.data(), preatt.data(), att.data(), q.data(), k.data(),
                                        v.data(), B, T, H, Hkv, D, dropout);
    return weighted_sum(out, w);
  };
  loss();
  // Some but not all of the scores are dropped (else the test would not test the mask).
  int64_t dropped = 0, causal = 0;
  for (int64_t i = 0; i < B * H * T * T; i++) {
    if ((i % T) > (i / T % T)) continue;
    causal++;
    dropped +=
        dropout_keep(dropout.seed, dropout.offset + static_cast<uint64_t>(i), dropout.p) ? 0 : 1;
  }
  ASSERT_GT(dropped, 0);
  ASSERT_LT(dropped, causal);
  std::vector<double> dq(q.size()), dk(k.size()), dv(v.size()), dpreatt(preatt.size());
  attention_backward_reference<double>(dq.data(), dk.data(), dv.data(), dpreatt.data(), w.data(),
                                       q.data(), k.data(), v.data(), att.data(), B, T, H, Hkv, D,
                                       dropout);
  EXPECT_TRUE(gradient_matches("dq", q, dq, loss));
  EXPECT_TRUE(gradient_matches("dk", k, dk, loss));
  EXPECT_TRUE(gradient_matches("dv", v, dv, loss));
}

TEST(AttentionDropout, SameOffsetReproducesTheOutputAndAnotherOffsetChangesIt) {
  const AttentionShape s{1, 16, 2, 2, 8};
  const auto in = attention_inputs(s, 80);
  const size_t scores = static_cast<size_t>(s.B * s.H * s.T * s.T);
  const auto run = [&](uint64_t offset) {
    std::vector<float> out(in.q.size()), pre(scores), att(scores);
    attention_forward(out.data(), pre.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                      s.B, s.T, s.H, s.Hkv, s.D, {0.5f, kSeed, offset});
    return out;
  };
  const auto a = run(5);
  EXPECT_TRUE(bitwise_equal("same offset", run(5), a));
  const auto b = run(5 + scores);
  int64_t differing = 0;
  for (size_t i = 0; i < a.size(); i++) differing += a[i] != b[i];
  EXPECT_GT(differing, static_cast<int64_t>(a.size()) / 2) << differing << " of " << a.size();
}

TEST(AttentionDropout, RejectsAProbabilityOfOne) {
  float x = 0.0f;
  EXPECT_THROW(attention_forward(&x, &x, &x, &x, &x, &x, 1, 1, 1, 1, 1, {1.0f, 0, 0}),
               InternalError);
  EXPECT_THROW(attention_backward(&x, &x, &x, &x, &x, &x, &x, &x, &x, 1, 1, 1, 1, 1, {-0.5f, 0, 0}),
               InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
