// Tests of kernels/cpu/softmax.h and cross_entropy.h: fast paths against the double reference
// (including logits of ±80 that overflow a naive exp-sum), padded vocabularies, gradient checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/platform/errors.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/softmax.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::gradient_matches;
using test_util::random_tokens;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;

struct Shape {
  int64_t N, V, Vp;
};
const Shape kShapes[] = {{0, 5, 5},      {1, 1, 1},        {7, 13, 16},
                         {13, 129, 129}, {33, 1001, 1024}, {64, 4097, 4160}};

// Logits in [-8, 8] with some rows pushed to ±80 (e^80 overflows a float exp-sum without the
// max subtraction).
std::vector<float> logits_with_extremes(int64_t N, int64_t Vp, uint64_t seed) {
  auto logits = random_vector(N * Vp, seed, -8.0, 8.0);
  for (int64_t row = 0; row < N; row += 3) {
    for (int64_t i = 0; i < Vp; i += 2) logits[static_cast<size_t>(row * Vp + i)] += 80.0f;
  }
  for (int64_t row = 1; row < N; row += 3) {
    for (int64_t i = 0; i < Vp; i++) logits[static_cast<size_t>(row * Vp + i)] -= 80.0f;
  }
  return logits;
}

// Probabilities: exp accurate to 1 ulp of an argument that itself carries the rounding of
// (x - max) (≤ 1 ulp of 80+8, i.e. 8e-6 absolute, so ≈ 8e-6 relative in the result), plus the
// normalizing division. Losses: logsumexp (≈ 88 at most) is exact to a few ulp of 88 (1e-5).
constexpr double kProbabilityRtol = 1.6e-5, kLossAtol = 2e-5, kLossRtol = 1e-6;

TEST(Softmax, FastMatchesTheDoubleReference) {
  for (const auto& [N, V, Vp] : kShapes) {
    const auto inp = logits_with_extremes(N, V, 1), dout = random_vector(N * V, 2);
    std::vector<float> out(inp.size());
    softmax_forward(out.data(), inp.data(), N, V);
    const auto inp64 = to_double(inp), dout64 = to_double(dout);
    std::vector<double> out64(inp.size());
    softmax_forward_reference<double>(out64.data(), inp64.data(), N, V);
    const std::string shape = " N=" + std::to_string(N) + " C=" + std::to_string(V);
    EXPECT_TRUE(all_close("softmax out" + shape, out, out64, 1e-30, kProbabilityRtol));
    auto dinp = random_vector(N * V, 3);
    auto dinp64 = to_double(dinp);
    // The backward is checked on the reference probabilities so it is judged alone.
    const std::vector<float> probabilities(out64.begin(), out64.end());
    softmax_backward(dinp.data(), dout.data(), probabilities.data(), N, V);
    const std::vector<double> probabilities64(probabilities.begin(), probabilities.end());
    softmax_backward_reference<double>(dinp64.data(), dout64.data(), probabilities64.data(), N, V);
    // Σ dout·out (weights summing to 1, |dout| ≤ 1): a few ulp of 1.
    EXPECT_TRUE(all_close("softmax dinp" + shape, dinp, dinp64, 5e-7, 5e-7));
  }
}

TEST(Softmax, ReferenceGradientMatchesCentralDifferences) {
  const int64_t N = 3, C = 7;
  auto inp = random_vector<double>(N * C, 10, -3.0, 3.0);
  const auto w = random_vector<double>(N * C, 11);
  std::vector<double> out(inp.size()), dinp(inp.size());
  const auto loss = [&] {
    softmax_forward_reference<double>(out.data(), inp.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();
  softmax_backward_reference<double>(dinp.data(), w.data(), out.data(), N, C);
  EXPECT_TRUE(gradient_matches("softmax dinp", inp, dinp, loss));
}

TEST(CrossEntropy, FastMatchesTheDoubleReferenceWithPaddedVocabulary) {
  for (const auto& [N, V, Vp] : kShapes) {
    const auto logits = logits_with_extremes(N, Vp, 20);
    const auto targets = random_tokens(N, V, 21);
    const auto dlosses = random_vector(N, 22);
    std::vector<float> losses(static_cast<size_t>(N)), lse(losses.size());
    std::vector<float> probs(logits.size(), NAN);
    cross_entropy_forward(losses.data(), lse.data(), probs.data(), logits.data(), targets.data(), N,
                          V, Vp);
    const auto logits64 = to_double(logits), dlosses64 = to_double(dlosses);
    std::vector<double> losses64(losses.size()), lse64(losses.size()), probs64(logits.size());
    cross_entropy_forward_reference<double>(losses64.data(), lse64.data(), probs64.data(),
                                            logits64.data(), targets.data(), N, V, Vp);
    const std::string shape = " N=" + std::to_string(N) + " V=" + std::to_string(V);
    EXPECT_TRUE(all_close("losses" + shape, losses, losses64, kLossAtol, kLossRtol));
    EXPECT_TRUE(all_close("logsumexp" + shape, lse, lse64, kLossAtol, kLossRtol));
    EXPECT_TRUE(all_close("probs" + shape, probs, probs64, 1e-30, kProbabilityRtol));

    // Backward on a buffer whose padded columns hold a sentinel that must survive.
    auto dlogits = random_vector(N * Vp, 23);
    for (int64_t row = 0; row < N; row++) {
      for (int64_t i = V; i < Vp; i++) dlogits[static_cast<size_t>(row * Vp + i)] = 12345.0f;
    }
    auto dlogits64 = to_double(dlogits);
    cross_entropy_backward(dlogits.data(), dlosses.data(), logits.data(), lse.data(),
                           targets.data(), N, V, Vp);
    cross_entropy_backward_reference<double>(dlogits64.data(), dlosses64.data(), logits64.data(),
                                             lse64.data(), targets.data(), N, V, Vp);
    // dlogits = dloss·(p - 1[target]) added to O(1) values: the probability error (relative) plus
    // a rounding of the O(1) sum.
    EXPECT_TRUE(all_close("dlogits" + shape, dlogits, dlogits64, 2.4e-7, kProbabilityRtol));
  }
}

TEST(Softmax, MaskedMinusInfinityGetsZeroAndNaNPoisonsItsRowOnly) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, -inf, 0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(),
                                2.0f};
  std::vector<float> out(6);
  softmax_forward(out.data(), x.data(), 2, 3);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.5f);
  for (int i = 3; i < 6; i++) EXPECT_TRUE(std::isnan(out[static_cast<size_t>(i)])) << i;
}

TEST(CrossEntropy, LossOfUniformLogitsIsLogV) {
  const int64_t N = 4, V = 1000;
  const std::vector<float> logits(N * V, 3.25f);
  const auto targets = random_tokens(N, V, 30);
  std::vector<float> losses(N), lse(N);
  cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(), targets.data(), N, V, V);
  for (const float loss : losses) EXPECT_NEAR(loss, std::log(1000.0), 1e-5);
}

TEST(CrossEntropy, ReferenceGradientMatchesCentralDifferences) {
  const int64_t N = 3, V = 7, Vp = 8;
  auto logits = random_vector<double>(N * Vp, 40, -3.0, 3.0);
  const auto targets = random_tokens(N, V, 41);
  const auto dlosses = random_vector<double>(N, 42);
  std::vector<double> losses(N), lse(N);
  const auto loss = [&] {
    cross_entropy_forward_reference<double>(losses.data(), lse.data(), nullptr, logits.data(),
                                            targets.data(), N, V, Vp);
    return weighted_sum(losses, dlosses);
  };
  loss();
  std::vector<double> dlogits(logits.size());
  cross_entropy_backward_reference<double>(dlogits.data(), dlosses.data(), logits.data(),
                                           lse.data(), targets.data(), N, V, Vp);
  // The padded column is not an input of the loss: its analytic and numeric gradients are both 0.
  EXPECT_TRUE(gradient_matches("dlogits", logits, dlogits, loss));
}

TEST(CrossEntropy, RejectsTargetsOutsideTheVocabularyAndBadPadding) {
  const std::vector<float> logits(8, 0.0f);
  std::vector<float> losses(2), lse(2);
  const std::vector<int32_t> bad = {1, 4};
  EXPECT_THROW(
      cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(), bad.data(), 2, 4, 4),
      InternalError);
  const std::vector<int32_t> negative = {-1, 0};
  EXPECT_THROW(cross_entropy_backward(losses.data(), lse.data(), logits.data(), lse.data(),
                                      negative.data(), 2, 4, 4),
               InternalError);
  const std::vector<int32_t> good = {0, 1};
  EXPECT_THROW(cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(), good.data(),
                                     2, 4, 3),
               InternalError);
  std::vector<float> dlogits(8, 0.0f);
  EXPECT_THROW(cross_entropy_dlogits(dlogits.data(), logits.data(), bad.data(), 2, 4, 4, 0.5f),
               InternalError);
}

// dlogits = scale · (probs − onehot), written over whatever was there (the logits, in the nn
// layer), padding untouched; equal to cross_entropy_backward accumulated into zeros with
// dlosses = scale, within f32 rounding of the two ways of getting the probabilities.
TEST(CrossEntropy, DlogitsFromProbabilitiesMatchesTheBackwardAndKeepsPadding) {
  for (const Shape& s : kShapes) {
    const auto logits = logits_with_extremes(s.N, s.Vp, 41);
    const auto targets = random_tokens(s.N, s.V, 42);
    const float scale = s.N > 0 ? 1.0f / static_cast<float>(s.N) : 1.0f;
    std::vector<float> losses(static_cast<size_t>(s.N)), lse(static_cast<size_t>(s.N));
    std::vector<float> probs(static_cast<size_t>(s.N * s.Vp));  // (N, Vp)
    cross_entropy_forward(losses.data(), lse.data(), probs.data(), logits.data(), targets.data(),
                          s.N, s.V, s.Vp);
    std::vector<float> dlogits = logits;  // (N, Vp) overwritten in place, as the nn layer does
    cross_entropy_dlogits(dlogits.data(), probs.data(), targets.data(), s.N, s.V, s.Vp, scale);
    std::vector<float> expected(static_cast<size_t>(s.N * s.Vp), 0.0f);  // (N, Vp)
    const std::vector<float> dlosses(static_cast<size_t>(s.N), scale);
    cross_entropy_backward(expected.data(), dlosses.data(), logits.data(), lse.data(),
                           targets.data(), s.N, s.V, s.Vp);
    for (int64_t row = 0; row < s.N; ++row)
      for (int64_t i = s.V; i < s.Vp; ++i) {
        const auto at = static_cast<size_t>(row * s.Vp + i);
        ASSERT_EQ(dlogits[at], logits[at]) << "padding column " << i << " of row " << row;
        expected[at] = logits[at];
      }
    // Both are scale·(p − onehot) with p ≤ 1 from two f32 exp paths (forward's softmax, backward's
    // exp(x − logsumexp)), each within a few ulps of 1: |Δ| ≤ 2e-6 · scale.
    EXPECT_TRUE(all_close("dlogits N=" + std::to_string(s.N) + " V=" + std::to_string(s.V), dlogits,
                          expected, 2e-6 * scale, 0.0));
  }
}

}  // namespace
}  // namespace vramlab::kernels::cpu
