// Tests of kernels/cpu/matmul.h: the OpenBLAS path against the double reference within the
// rigorous floating-point dot-product bound, and the reference's gradients against central
// differences.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "common/platform/errors.h"
#include "kernels/cpu/matmul.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::gamma;
using test_util::gradient_matches;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;
using test_util::within_tolerance;

// A float dot product of length K is within γ_K·Σ|a_i·b_i| of the exact value (test_util::gamma).
// Adding the bias and an old value to accumulate into costs two more roundings: γ_{K+2}.

std::vector<double> absolute(const std::vector<float>& values) {
  std::vector<double> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = std::fabs(values[i]);
  return result;
}

class MatmulShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t, bool>> {
};

TEST_P(MatmulShapes, ForwardIsWithinTheDotProductErrorBoundOfTheDoubleReference) {
  const auto [N, C, OC, with_bias] = GetParam();
  const auto inp = random_vector(N * C, 1), weight = random_vector(OC * C, 2);
  const auto bias = random_vector(OC, 3);
  std::vector<float> out(static_cast<size_t>(N * OC), NAN);
  matmul_forward(out.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, N, C,
                 OC);

  std::vector<double> expected(out.size()), bound(out.size());
  const auto inp64 = to_double(inp), weight64 = to_double(weight), bias64 = to_double(bias);
  matmul_forward_reference<double>(expected.data(), inp64.data(), weight64.data(),
                                   with_bias ? bias64.data() : nullptr, N, C, OC);
  const auto abs_inp = absolute(inp), abs_weight = absolute(weight), abs_bias = absolute(bias);
  matmul_forward_reference<double>(bound.data(), abs_inp.data(), abs_weight.data(),
                                   with_bias ? abs_bias.data() : nullptr, N, C, OC);
  const double g = gamma(C + 2);
  EXPECT_TRUE(within_tolerance(
      "matmul_forward", out.data(), expected.data(), N * OC,
      [&](int64_t i) { return g * bound[static_cast<size_t>(i)] + 1e-300; }, "γ_{C+2}·|inp|·|W|ᵀ"));
}

TEST_P(MatmulShapes, BackwardAccumulatesWithinTheDotProductErrorBound) {
  const auto [N, C, OC, with_bias] = GetParam();
  const auto inp = random_vector(N * C, 4), weight = random_vector(OC * C, 5);
  const auto dout = random_vector(N * OC, 6);
  auto dinp = random_vector(N * C, 7), dweight = random_vector(OC * C, 8);
  auto dbias = random_vector(OC, 9);
  auto dinp64 = to_double(dinp), dweight64 = to_double(dweight), dbias64 = to_double(dbias);
  // Bounds: the same accumulation on absolute values.
  auto dinp_bound = absolute(dinp), dweight_bound = absolute(dweight),
       dbias_bound = absolute(dbias);
  matmul_backward(dinp.data(), dweight.data(), with_bias ? dbias.data() : nullptr, dout.data(),
                  inp.data(), weight.data(), N, C, OC);
  const auto inp64 = to_double(inp), weight64 = to_double(weight), dout64 = to_double(dout);
  matmul_backward_reference<double>(dinp64.data(), dweight64.data(),
                                    with_bias ? dbias64.data() : nullptr, dout64.data(),
                                    inp64.data(), weight64.data(), N, C, OC);
  const auto abs_inp = absolute(inp), abs_weight = absolute(weight), abs_dout = absolute(dout);
  matmul_backward_reference<double>(dinp_bound.data(), dweight_bound.data(),
                                    with_bias ? dbias_bound.data() : nullptr, abs_dout.data(),
                                    abs_inp.data(), abs_weight.data(), N, C, OC);
  const double g_inp = gamma(OC + 1), g_weight = gamma(N + 1);
  EXPECT_TRUE(within_tolerance(
      "dinp", dinp.data(), dinp64.data(), N * C,
      [&](int64_t i) { return g_inp * dinp_bound[static_cast<size_t>(i)] + 1e-300; },
      "γ_{OC+1}·bound"));
  EXPECT_TRUE(within_tolerance(
      "dweight", dweight.data(), dweight64.data(), OC * C,
      [&](int64_t i) { return g_weight * dweight_bound[static_cast<size_t>(i)] + 1e-300; },
      "γ_{N+1}·bound"));
  EXPECT_TRUE(within_tolerance(
      "dbias", dbias.data(), dbias64.data(), OC,
      [&](int64_t i) { return g_weight * dbias_bound[static_cast<size_t>(i)] + 1e-300; },
      "γ_{N+1}·bound"));
}

INSTANTIATE_TEST_SUITE_P(
    OddAndRoundShapes, MatmulShapes,
    ::testing::Values(std::make_tuple(1, 1, 1, true), std::make_tuple(7, 13, 5, true),
                      std::make_tuple(13, 129, 33, false), std::make_tuple(129, 67, 130, true),
                      std::make_tuple(64, 256, 768, true), std::make_tuple(0, 8, 8, true),
                      std::make_tuple(5, 0, 3, true)));

TEST(Matmul, ReferenceGradientsMatchCentralDifferencesInDouble) {
  const int64_t N = 3, C = 5, OC = 4;
  auto inp = random_vector<double>(N * C, 10), weight = random_vector<double>(OC * C, 11);
  auto bias = random_vector<double>(OC, 12);
  const auto dout = random_vector<double>(N * OC, 13);
  std::vector<double> out(static_cast<size_t>(N * OC));
  const auto loss = [&] {
    matmul_forward_reference<double>(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    return weighted_sum(out, dout);
  };
  std::vector<double> dinp(inp.size()), dweight(weight.size()), dbias(bias.size());
  matmul_backward_reference<double>(dinp.data(), dweight.data(), dbias.data(), dout.data(),
                                    inp.data(), weight.data(), N, C, OC);
  EXPECT_TRUE(gradient_matches("dinp", inp, dinp, loss));
  EXPECT_TRUE(gradient_matches("dweight", weight, dweight, loss));
  EXPECT_TRUE(gradient_matches("dbias", bias, dbias, loss));
}

TEST(Matmul, RejectsNegativeSizes) {
  float x = 0.0f;
  EXPECT_THROW(matmul_forward(&x, &x, &x, nullptr, -1, 1, 1), InternalError);
  EXPECT_THROW(matmul_backward(&x, &x, nullptr, &x, &x, &x, 1, -2, 1), InternalError);
  EXPECT_THROW(matmul_forward_reference<double>(nullptr, nullptr, nullptr, nullptr, 1, 1, -3),
               InternalError);
}

TEST(Sgemm, RejectsALeadingDimensionShorterThanARow) {
  std::vector<float> a(12), b(12), c(9);
  EXPECT_THROW(sgemm(false, false, 3, 3, 4, 1.0f, a.data(), 3, b.data(), 3, 0.0f, c.data(), 3),
               InternalError);
  EXPECT_THROW(sgemm(false, true, 3, 3, 4, 1.0f, a.data(), 4, b.data(), 3, 0.0f, c.data(), 3),
               InternalError);
  EXPECT_NO_THROW(sgemm(false, true, 3, 3, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 3));
}

TEST(Sgemm, HonoursBetaForAnEmptyInnerDimension) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
}

}  // namespace
}  // namespace vramlab::kernels::cpu
