// Tests of kernels/cpu/attention.h: multi-head and grouped-query causal attention, fast path
// against the double reference, causality, and the reference gradients against central
// differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/platform/errors.h"
#include "kernels/cpu/attention.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::gradient_matches;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;

struct Shape {
  int64_t B, T, H, Hkv, D;
};
const Shape kShapes[] = {{0, 4, 2, 2, 8},   {1, 1, 1, 1, 1},    {2, 7, 4, 2, 6},
                         {1, 13, 3, 1, 16}, {2, 129, 4, 4, 32}, {1, 64, 8, 2, 64}};

struct Buffers {
  std::vector<float> q, k, v, dout;
};

Buffers random_inputs(const Shape& s, uint64_t seed) {
  // q, k in [-2, 2]: scores up to 4·D/√D = 4√D, a peaked softmax for the larger heads.
  return {random_vector(s.B * s.T * s.H * s.D, seed, -2.0, 2.0),
          random_vector(s.B * s.T * s.Hkv * s.D, seed + 1, -2.0, 2.0),
          random_vector(s.B * s.T * s.Hkv * s.D, seed + 2),
          random_vector(s.B * s.T * s.H * s.D, seed + 3)};
}

// Scores are float dot products of length D (error ≤ D·u·Σ|q||k| ≈ D·u·4D/√D), so the pre-softmax
// scores get atol 8·D·√D·u; probabilities and outputs inherit a relative error of the same size
// through exp. Measured worst case: 14% of these.
double score_atol(int64_t D) {
  return 8.0 * static_cast<double>(D) * std::sqrt(static_cast<double>(D)) * std::ldexp(1.0, -24);
}

// The runtime keeps no scores: it passes att as preatt, so the scores are overwritten in place.
// That must give bitwise the probabilities and outputs of separate buffers.
TEST(Attention, ScoresComputedInPlaceInTheProbabilitiesGiveTheSameResultBitwise) {
  for (const auto& shape : kShapes) {
    const auto [B, T, H, Hkv, D] = shape;
    const auto in = random_inputs(shape, 7);
    const auto scores = static_cast<size_t>(B * H * T * T);
    std::vector<float> out(in.q.size()), preatt(scores), att(scores);  // (B,T,H,D), (B,H,T,T) x2
    attention_forward(out.data(), preatt.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                      B, T, H, Hkv, D);
    std::vector<float> out_in_place(in.q.size(), NAN), att_in_place(scores, NAN);
    attention_forward(out_in_place.data(), att_in_place.data(), att_in_place.data(), in.q.data(),
                      in.k.data(), in.v.data(), B, T, H, Hkv, D);
    const std::string name = " B=" + std::to_string(B) + " T=" + std::to_string(T);
    EXPECT_TRUE(all_close("att in place" + name, att_in_place, to_double(att), 0.0, 0.0));
    EXPECT_TRUE(all_close("out in place" + name, out_in_place, to_double(out), 0.0, 0.0));
  }
}

TEST(Attention, FastMatchesTheDoubleReference) {
  for (const auto& shape : kShapes) {
    const auto [B, T, H, Hkv, D] = shape;
    const auto in = random_inputs(shape, 1);
    const size_t scores = static_cast<size_t>(B * H * T * T);
    std::vector<float> out(in.q.size()), preatt(scores), att(scores);
    attention_forward(out.data(), preatt.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                      B, T, H, Hkv, D);
    const auto q64 = to_double(in.q), k64 = to_double(in.k), v64 = to_double(in.v),
               dout64 = to_double(in.dout);
    std::vector<double> out64(out.size()), preatt64(scores), att64(scores);
    attention_forward_reference<double>(out64.data(), preatt64.data(), att64.data(), q64.data(),
                                        k64.data(), v64.data(), B, T, H, Hkv, D);
    const std::string name = " T=" + std::to_string(T) + " H=" + std::to_string(H) +
                             " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D);
    const double atol = score_atol(D);
    EXPECT_TRUE(all_close("preatt" + name, preatt, preatt64, atol, 0.0));
    EXPECT_TRUE(all_close("att" + name, att, att64, atol, atol));
    EXPECT_TRUE(all_close("out" + name, out, out64, atol, atol));

    auto dq = random_vector(in.q.size(), 5), dk = random_vector(in.k.size(), 6),
         dv = random_vector(in.v.size(), 7);
    auto dq64 = to_double(dq), dk64 = to_double(dk), dv64 = to_double(dv);
    std::vector<float> dpreatt(scores, NAN);
    std::vector<double> dpreatt64(scores);
    // The backward is judged on the reference probabilities so its own error is measured.
    const std::vector<float> att_ref(att64.begin(), att64.end());
    const std::vector<double> att_ref64(att_ref.begin(), att_ref.end());
    attention_backward(dq.data(), dk.data(), dv.data(), dpreatt.data(), in.dout.data(), in.q.data(),
                       in.k.data(), in.v.data(), att_ref.data(), B, T, H, Hkv, D);
    attention_backward_reference<double>(dq64.data(), dk64.data(), dv64.data(), dpreatt64.data(),
                                         dout64.data(), q64.data(), k64.data(), v64.data(),
                                         att_ref64.data(), B, T, H, Hkv, D);
    // dk and dv sum over T rows and H/Hkv heads: the error grows with the number of terms.
    const double sum_atol = atol * static_cast<double>(T * (H / std::max<int64_t>(Hkv, 1)));
    EXPECT_TRUE(all_close("dpreatt" + name, dpreatt, dpreatt64, atol, atol));
    EXPECT_TRUE(all_close("dq" + name, dq, dq64, atol * static_cast<double>(T), atol));
    EXPECT_TRUE(all_close("dk" + name, dk, dk64, sum_atol, atol));
    EXPECT_TRUE(all_close("dv" + name, dv, dv64, sum_atol, atol));
  }
}

TEST(Attention, IsCausalFutureKeysAndValuesDoNotChangeEarlierOutputs) {
  const Shape s{1, 9, 2, 1, 8};
  auto in = random_inputs(s, 10);
  const size_t scores = static_cast<size_t>(s.B * s.H * s.T * s.T);
  std::vector<float> out(in.q.size()), preatt(scores), att(scores);
  attention_forward(out.data(), preatt.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                    s.B, s.T, s.H, s.Hkv, s.D);
  const auto before = out;
  // Change the last position's key and value: every earlier output must stay bit-identical.
  for (int64_t d = 0; d < s.D; d++) {
    in.k[static_cast<size_t>((s.T - 1) * s.D + d)] += 1.0f;
    in.v[static_cast<size_t>((s.T - 1) * s.D + d)] -= 1.0f;
  }
  attention_forward(out.data(), preatt.data(), att.data(), in.q.data(), in.k.data(), in.v.data(),
                    s.B, s.T, s.H, s.Hkv, s.D);
  const size_t earlier = static_cast<size_t>((s.T - 1) * s.H * s.D);
  for (size_t i = 0; i < earlier; i++) ASSERT_EQ(out[i], before[i]) << "element " << i;
  // Masked scores are -inf and masked probabilities exactly 0; each row sums to 1.
  for (int64_t t = 0; t < s.T; t++) {
    double row_sum = 0.0;
    for (int64_t t2 = 0; t2 < s.T; t2++) {
      const size_t at = static_cast<size_t>(t * s.T + t2);
      if (t2 > t) {
        EXPECT_EQ(preatt[at], -std::numeric_limits<float>::infinity());
        EXPECT_EQ(att[at], 0.0f);
      }
      row_sum += att[at];
    }
    EXPECT_NEAR(row_sum, 1.0, 1e-6) << "row " << t;
  }
}

TEST(Attention, GroupedQueryEqualsMultiHeadWithRepeatedKeysAndValues) {
  // Hkv = 1 shared by H = 3 heads must equal H = 3 independent heads whose k, v are copies.
  const int64_t B = 1, T = 5, H = 3, D = 4;
  const auto q = random_vector(B * T * H * D, 20), k1 = random_vector(B * T * D, 21),
             v1 = random_vector(B * T * D, 22);
  std::vector<float> k3(static_cast<size_t>(B * T * H * D)), v3(k3.size());
  for (int64_t t = 0; t < T; t++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t d = 0; d < D; d++) {
        k3[static_cast<size_t>((t * H + h) * D + d)] = k1[static_cast<size_t>(t * D + d)];
        v3[static_cast<size_t>((t * H + h) * D + d)] = v1[static_cast<size_t>(t * D + d)];
      }
    }
  }
  std::vector<float> out_gqa(q.size()), out_mha(q.size()), pre(B * H * T * T), att(pre.size());
  attention_forward(out_gqa.data(), pre.data(), att.data(), q.data(), k1.data(), v1.data(), B, T, H,
                    1, D);
  attention_forward(out_mha.data(), pre.data(), att.data(), q.data(), k3.data(), v3.data(), B, T, H,
                    H, D);
  EXPECT_TRUE(test_util::bitwise_equal("GQA vs repeated MHA", out_gqa, out_mha));
}

TEST(Attention, ReferenceGradientsMatchCentralDifferencesForGroupedQueries) {
  const int64_t B = 2, T = 4, H = 4, Hkv = 2, D = 3;
  auto q = random_vector<double>(B * T * H * D, 30), k = random_vector<double>(B * T * Hkv * D, 31),
       v = random_vector<double>(B * T * Hkv * D, 32);
  const auto w = random_vector<double>(q.size(), 33);
  std::vector<double> out(q.size()), preatt(B * H * T * T), att(preatt.size());
  const auto loss = [&] {
    attention_forward_reference<double>(out.data(), preatt.data(), att.data(), q.data(), k.data(),
                                        v.data(), B, T, H, Hkv, D);
    return weighted_sum(out, w);
  };
  loss();
  std::vector<double> dq(q.size()), dk(k.size()), dv(v.size()), dpreatt(preatt.size());
  attention_backward_reference<double>(dq.data(), dk.data(), dv.data(), dpreatt.data(), w.data(),
                                       q.data(), k.data(), v.data(), att.data(), B, T, H, Hkv, D);
  EXPECT_TRUE(gradient_matches("dq", q, dq, loss));
  EXPECT_TRUE(gradient_matches("dk", k, dk, loss));
  EXPECT_TRUE(gradient_matches("dv", v, dv, loss));
}

TEST(Attention, RejectsKvHeadsThatDoNotDivideHeads) {
  float x = 0.0f;
  EXPECT_THROW(attention_forward(&x, &x, &x, &x, &x, &x, 1, 1, 4, 3, 2), InternalError);
  EXPECT_THROW(attention_backward(&x, &x, &x, &x, &x, &x, &x, &x, &x, 1, 1, 4, 0, 2),
               InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
