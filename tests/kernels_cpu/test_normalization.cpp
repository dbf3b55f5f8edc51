// Tests of kernels/cpu/normalization.h: LayerNorm and RMSNorm fast paths against the double
// reference, reference gradients against central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/platform/errors.h"
#include "kernels/cpu/normalization.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::gradient_matches;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;

struct Shape {
  int64_t N, C;
};
const Shape kShapes[] = {{0, 8}, {1, 1}, {7, 13}, {13, 129}, {33, 768}, {129, 67}};

// Rows with an offset of 3 so a one-pass variance would visibly cancel.
std::vector<float> rows_with_offset(int64_t n, uint64_t seed) {
  return random_vector(n, seed, 2.0, 4.0);
}

// The fast forward accumulates the row statistics in double, so mean and rstd are within a few
// float roundings; each output then carries a handful of float roundings of O(1) values. The
// backward's row sums are float sums of C random-signed terms. Tolerance 5e-7 absolute and
// relative (8 ulp of 1); measured worst case 50% (LayerNorm output, also in an unvectorized
// Debug build).
constexpr double kNormAtol = 5e-7, kNormRtol = 5e-7;

// dinp = rstd·(O(1) terms): absolute errors scale with the row's rstd (316 for a constant row with
// eps = 1e-5, where dnorm - mean(dnorm) cancels and only rounding is left).
::testing::AssertionResult dinp_close(const std::string& what, const std::vector<float>& actual,
                                      const std::vector<double>& expected,
                                      const std::vector<double>& rstd, int64_t C) {
  return test_util::within_tolerance(
      what, actual.data(), expected.data(), static_cast<int64_t>(actual.size()),
      [&](int64_t i) {
        return kNormAtol * std::max(1.0, rstd[static_cast<size_t>(i / C)]) +
               kNormRtol * std::fabs(expected[static_cast<size_t>(i)]);
      },
      "5e-7·max(1, rstd) + 5e-7·|expected|");
}

TEST(LayerNorm, FastMatchesTheDoubleReference) {
  for (const auto& [N, C] : kShapes) {
    const auto inp = rows_with_offset(N * C, 1), weight = random_vector(C, 2),
               bias = random_vector(C, 3), dout = random_vector(N * C, 4);
    std::vector<float> out(inp.size()), mean(static_cast<size_t>(N)), rstd(mean.size());
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                      N, C);
    const auto inp64 = to_double(inp), weight64 = to_double(weight), bias64 = to_double(bias);
    std::vector<double> out64(inp.size()), mean64(mean.size()), rstd64(mean.size());
    layernorm_forward_reference<double>(out64.data(), mean64.data(), rstd64.data(), inp64.data(),
                                        weight64.data(), bias64.data(), N, C);
    const std::string shape = " N=" + std::to_string(N) + " C=" + std::to_string(C);
    EXPECT_TRUE(all_close("layernorm out" + shape, out, out64, kNormAtol, kNormRtol));
    EXPECT_TRUE(all_close("layernorm mean" + shape, mean, mean64, 0.0, kNormRtol));
    EXPECT_TRUE(all_close("layernorm rstd" + shape, rstd, rstd64, 0.0, kNormRtol));

    auto dinp = random_vector(N * C, 5), dweight = random_vector(C, 6), dbias = random_vector(C, 7);
    auto dinp64 = to_double(dinp), dweight64 = to_double(dweight), dbias64 = to_double(dbias);
    layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                       weight.data(), mean.data(), rstd.data(), N, C);
    const auto dout64 = to_double(dout);
    layernorm_backward_reference<double>(dinp64.data(), dweight64.data(), dbias64.data(),
                                         dout64.data(), inp64.data(), weight64.data(),
                                         mean64.data(), rstd64.data(), N, C);
    EXPECT_TRUE(dinp_close("layernorm dinp" + shape, dinp, dinp64, rstd64, C));
    // dweight/dbias sum N terms: the absolute error grows like N·u·Σ|terms|.
    const double sum_atol = kNormAtol * static_cast<double>(N + 1);
    EXPECT_TRUE(all_close("layernorm dweight" + shape, dweight, dweight64, sum_atol, kNormRtol));
    EXPECT_TRUE(all_close("layernorm dbias" + shape, dbias, dbias64, sum_atol, kNormRtol));
  }
}

TEST(RMSNorm, FastMatchesTheDoubleReference) {
  for (const auto& [N, C] : kShapes) {
    const auto inp = random_vector(N * C, 11), weight = random_vector(C, 12),
               dout = random_vector(N * C, 13);
    std::vector<float> out(inp.size()), rstd(static_cast<size_t>(N));
    rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C);
    const auto inp64 = to_double(inp), weight64 = to_double(weight), dout64 = to_double(dout);
    std::vector<double> out64(inp.size()), rstd64(rstd.size());
    rmsnorm_forward_reference<double>(out64.data(), rstd64.data(), inp64.data(), weight64.data(), N,
                                      C);
    const std::string shape = " N=" + std::to_string(N) + " C=" + std::to_string(C);
    EXPECT_TRUE(all_close("rmsnorm out" + shape, out, out64, kNormAtol, kNormRtol));
    EXPECT_TRUE(all_close("rmsnorm rstd" + shape, rstd, rstd64, 0.0, kNormRtol));
    auto dinp = random_vector(N * C, 14), dweight = random_vector(C, 15);
    auto dinp64 = to_double(dinp), dweight64 = to_double(dweight);
    rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(),
                     rstd.data(), N, C);
    rmsnorm_backward_reference<double>(dinp64.data(), dweight64.data(), dout64.data(), inp64.data(),
                                       weight64.data(), rstd64.data(), N, C);
    EXPECT_TRUE(dinp_close("rmsnorm dinp" + shape, dinp, dinp64, rstd64, C));
    EXPECT_TRUE(all_close("rmsnorm dweight" + shape, dweight, dweight64,
                          kNormAtol * static_cast<double>(N + 1), kNormRtol));
  }
}

TEST(LayerNorm, ReferenceGradientsMatchCentralDifferences) {
  const int64_t N = 3, C = 6;
  auto inp = random_vector<double>(N * C, 20, -2.0, 2.0), weight = random_vector<double>(C, 21);
  auto bias = random_vector<double>(C, 22);
  const auto w = random_vector<double>(N * C, 23);
  std::vector<double> out(inp.size()), mean(N), rstd(N);
  const auto loss = [&] {
    layernorm_forward_reference<double>(out.data(), mean.data(), rstd.data(), inp.data(),
                                        weight.data(), bias.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();
  std::vector<double> dinp(inp.size()), dweight(C), dbias(C);
  layernorm_backward_reference<double>(dinp.data(), dweight.data(), dbias.data(), w.data(),
                                       inp.data(), weight.data(), mean.data(), rstd.data(), N, C);
  EXPECT_TRUE(gradient_matches("layernorm dinp", inp, dinp, loss));
  EXPECT_TRUE(gradient_matches("layernorm dweight", weight, dweight, loss));
  EXPECT_TRUE(gradient_matches("layernorm dbias", bias, dbias, loss));
}

TEST(RMSNorm, ReferenceGradientsMatchCentralDifferences) {
  const int64_t N = 3, C = 6;
  auto inp = random_vector<double>(N * C, 30, -2.0, 2.0), weight = random_vector<double>(C, 31);
  const auto w = random_vector<double>(N * C, 32);
  std::vector<double> out(inp.size()), rstd(N);
  const auto loss = [&] {
    rmsnorm_forward_reference<double>(out.data(), rstd.data(), inp.data(), weight.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();
  std::vector<double> dinp(inp.size()), dweight(C);
  rmsnorm_backward_reference<double>(dinp.data(), dweight.data(), w.data(), inp.data(),
                                     weight.data(), rstd.data(), N, C);
  EXPECT_TRUE(gradient_matches("rmsnorm dinp", inp, dinp, loss));
  EXPECT_TRUE(gradient_matches("rmsnorm dweight", weight, dweight, loss));
}

TEST(LayerNorm, ConstantRowNormalizesToTheBias) {
  // Variance 0: rstd = 1/√eps and (x - mean) = 0 exactly, so out = bias.
  const std::vector<float> inp(16, 5.0f), weight(16, 2.0f), bias = random_vector(16, 40);
  std::vector<float> out(16), mean(1), rstd(1);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), 1,
                    16);
  EXPECT_EQ(out, bias);
  EXPECT_EQ(mean[0], 5.0f);
}

TEST(Normalization, RejectsNegativeSizes) {
  float x = 0.0f;
  EXPECT_THROW(layernorm_forward(&x, &x, &x, &x, &x, &x, -1, 4), InternalError);
  EXPECT_THROW(rmsnorm_backward(&x, &x, &x, &x, &x, &x, 2, -4), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
