// Tests of kernels/cpu/embedding.h and rope.h: fast paths against the reference, reference
// gradients against central differences, argument checks.
#include <gtest/gtest.h>

#include <cmath>

#include "common/platform/errors.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/rope.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::bitwise_equal;
using test_util::gradient_matches;
using test_util::random_tokens;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;

struct EmbeddingShape {
  int64_t B, T, C, V;
};
const EmbeddingShape kEmbeddingShapes[] = {
    {0, 4, 8, 5}, {1, 1, 1, 1}, {2, 7, 13, 3}, {3, 13, 67, 101}, {4, 129, 256, 1001}};

TEST(Embedding, FastIsBitwiseEqualToTheReference) {
  // Both paths add each element's contributions in token order: the same roundings, so the same
  // bits (with few vocabulary rows, V = 3, many tokens hit the same row).
  for (const auto& [B, T, C, V] : kEmbeddingShapes) {
    for (const bool with_positions : {true, false}) {
      const auto tokens = random_tokens(B * T, V, 1);
      const auto wte = random_vector(V * C, 2), wpe = random_vector(T * C, 3);
      const float* positions = with_positions ? wpe.data() : nullptr;
      std::vector<float> out(static_cast<size_t>(B * T * C)), expected(out.size());
      embedding_forward(out.data(), tokens.data(), wte.data(), positions, B, T, C, V);
      embedding_forward_reference<float>(expected.data(), tokens.data(), wte.data(), positions, B,
                                         T, C, V);
      EXPECT_TRUE(bitwise_equal("embedding_forward", out, expected));
      const auto dout = random_vector(B * T * C, 4);
      auto dwte = random_vector(V * C, 5), dwpe = random_vector(T * C, 6);
      auto dwte_ref = dwte, dwpe_ref = dwpe;
      embedding_backward(dwte.data(), with_positions ? dwpe.data() : nullptr, dout.data(),
                         tokens.data(), B, T, C, V);
      embedding_backward_reference<float>(dwte_ref.data(),
                                          with_positions ? dwpe_ref.data() : nullptr, dout.data(),
                                          tokens.data(), B, T, C, V);
      EXPECT_TRUE(bitwise_equal("dwte", dwte, dwte_ref));
      EXPECT_TRUE(bitwise_equal("dwpe", dwpe, dwpe_ref));
    }
  }
}

TEST(Embedding, ReferenceGradientsMatchCentralDifferences) {
  const int64_t B = 2, T = 3, C = 4, V = 3;
  const auto tokens = random_tokens(B * T, V, 10);
  auto wte = random_vector<double>(V * C, 11), wpe = random_vector<double>(T * C, 12);
  const auto w = random_vector<double>(B * T * C, 13);
  std::vector<double> out(w.size()), dwte(wte.size()), dwpe(wpe.size());
  embedding_backward_reference<double>(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C,
                                       V);
  const auto loss = [&] {
    embedding_forward_reference<double>(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C,
                                        V);
    return weighted_sum(out, w);
  };
  EXPECT_TRUE(gradient_matches("dwte", wte, dwte, loss));
  EXPECT_TRUE(gradient_matches("dwpe", wpe, dwpe, loss));
}

TEST(Embedding, RejectsATokenOutsideTheVocabulary) {
  const std::vector<int32_t> tokens = {0, 7};
  std::vector<float> table(14), out(4);
  EXPECT_THROW(embedding_forward(out.data(), tokens.data(), table.data(), nullptr, 1, 2, 2, 7),
               InternalError);
  EXPECT_THROW(embedding_backward(table.data(), nullptr, out.data(), tokens.data(), 1, 2, 2, 7),
               InternalError);
}

struct RopeShape {
  int64_t B, T, H, D;
};
const RopeShape kRopeShapes[] = {
    {0, 3, 2, 4}, {1, 1, 1, 2}, {2, 7, 3, 6}, {2, 13, 4, 64}, {1, 129, 2, 128}};

// Both paths use the same double-computed angles rounded to float; each output is a two-term
// float expression, so it is within 2 ulp of the larger term (|x| ≤ 1): 2.4e-7 absolute.
constexpr double kRopeAtol = 2.4e-7;

TEST(Rope, FastMatchesTheDoubleReference) {
  for (const auto& [B, T, H, D] : kRopeShapes) {
    for (const int64_t offset : {int64_t{0}, int64_t{1000}}) {
      const auto inp = random_vector(B * T * H * D, 1), dout = random_vector(B * T * H * D, 2);
      std::vector<float> out(inp.size());
      rope_forward(out.data(), inp.data(), B, T, H, D, 10000.0, offset);
      const auto inp64 = to_double(inp), dout64 = to_double(dout);
      std::vector<double> out64(inp.size());
      rope_forward_reference<double>(out64.data(), inp64.data(), B, T, H, D, 10000.0, offset);
      const std::string shape = " T=" + std::to_string(T) + " D=" + std::to_string(D);
      EXPECT_TRUE(all_close("rope out" + shape, out, out64, kRopeAtol, 0.0));
      auto dinp = random_vector(inp.size(), 3);
      auto dinp64 = to_double(dinp);
      rope_backward(dinp.data(), dout.data(), B, T, H, D, 10000.0, offset);
      rope_backward_reference<double>(dinp64.data(), dout64.data(), B, T, H, D, 10000.0, offset);
      EXPECT_TRUE(all_close("rope dinp" + shape, dinp, dinp64, 2 * kRopeAtol, 0.0));
    }
  }
}

TEST(Rope, InPlaceForwardEqualsOutOfPlace) {
  auto x = random_vector(2 * 5 * 3 * 8, 20);
  std::vector<float> out(x.size());
  rope_forward(out.data(), x.data(), 2, 5, 3, 8, 500000.0);
  rope_forward(x.data(), x.data(), 2, 5, 3, 8, 500000.0);
  EXPECT_TRUE(bitwise_equal("in-place rope", x, out));
}

TEST(Rope, RotationPreservesEachPairsNormAndPositionZeroIsTheIdentity) {
  const auto x = random_vector(1 * 4 * 1 * 16, 30);
  std::vector<float> out(x.size());
  rope_forward(out.data(), x.data(), 1, 4, 1, 16);
  for (size_t i = 0; i < 16; i++) EXPECT_EQ(out[i], x[i]) << "position 0, element " << i;
  for (size_t pair = 0; pair < x.size() / 2; pair++) {
    const double before = std::hypot(x[2 * pair], x[2 * pair + 1]);
    const double after = std::hypot(out[2 * pair], out[2 * pair + 1]);
    EXPECT_NEAR(after, before, 4e-7) << "pair " << pair;
  }
}

TEST(Rope, ReferenceGradientMatchesCentralDifferences) {
  const int64_t B = 2, T = 3, H = 2, D = 4;
  auto inp = random_vector<double>(B * T * H * D, 40);
  const auto w = random_vector<double>(inp.size(), 41);
  std::vector<double> out(inp.size()), dinp(inp.size());
  rope_backward_reference<double>(dinp.data(), w.data(), B, T, H, D, 10000.0, 5);
  EXPECT_TRUE(gradient_matches("rope dinp", inp, dinp, [&] {
    rope_forward_reference<double>(out.data(), inp.data(), B, T, H, D, 10000.0, 5);
    return weighted_sum(out, w);
  }));
}

TEST(Rope, RejectsAnOddHeadDimension) {
  float x = 0.0f;
  EXPECT_THROW(rope_forward(&x, &x, 1, 1, 1, 3), InternalError);
  EXPECT_THROW(rope_backward(&x, &x, 1, 1, 1, 4, 0.0), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
