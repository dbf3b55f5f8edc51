// Tests of kernels/cpu/matmul_low_precision.h: bf16/f16-storage matmul equals the f32 matmul of the
// rounded operands (within the f32 dot-product bound), and stays within the storage format's
// rounding bound of the f32 matmul of the unrounded operands.
#include <gtest/gtest.h>

#include <cmath>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_low_precision.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::gamma;
using test_util::random_vector;
using test_util::within_tolerance;

std::vector<bf16_t> round_to(const std::vector<float>& values, bf16_t) {
  std::vector<bf16_t> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = to_bf16(values[i]);
  return result;
}
std::vector<f16_t> round_to(const std::vector<float>& values, f16_t) {
  std::vector<f16_t> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = to_f16(values[i]);
  return result;
}
template <typename Storage>
std::vector<double> widen_to_double(const std::vector<Storage>& values) {
  std::vector<double> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = to_f32(values[i]);
  return result;
}
std::vector<double> absolute(const std::vector<double>& values) {
  std::vector<double> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = std::fabs(values[i]);
  return result;
}

// Unit roundoff of the storage formats: bf16 keeps 8 significant bits, f16 keeps 11.
double unit_roundoff(bf16_t) {
  return std::ldexp(1.0, -8);
}
double unit_roundoff(f16_t) {
  return std::ldexp(1.0, -11);
}

template <typename Storage>
class LowPrecisionMatmul : public ::testing::Test {};
using StorageTypes = ::testing::Types<bf16_t, f16_t>;
TYPED_TEST_SUITE(LowPrecisionMatmul, StorageTypes);

TYPED_TEST(LowPrecisionMatmul, ForwardEqualsTheF32MatmulOfTheRoundedOperands) {
  for (const auto& [N, C, OC] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 13, 5}, {33, 129, 67}, {0, 4, 4}}) {
    const auto inp = random_vector(N * C, 1), weight = random_vector(OC * C, 2),
               bias = random_vector(OC, 3);
    const auto inp_low = round_to(inp, TypeParam{}), weight_low = round_to(weight, TypeParam{});
    std::vector<float> out(static_cast<size_t>(N * OC), NAN);
    matmul_forward(out.data(), inp_low.data(), weight_low.data(), bias.data(), N, C, OC);

    const auto inp64 = widen_to_double(inp_low), weight64 = widen_to_double(weight_low);
    const std::vector<double> bias64(bias.begin(), bias.end());
    std::vector<double> expected(out.size()), bound(out.size());
    matmul_forward_reference<double>(expected.data(), inp64.data(), weight64.data(), bias64.data(),
                                     N, C, OC);
    const auto abs_inp = absolute(inp64), abs_weight = absolute(weight64),
               abs_bias = absolute(bias64);
    matmul_forward_reference<double>(bound.data(), abs_inp.data(), abs_weight.data(),
                                     abs_bias.data(), N, C, OC);
    EXPECT_TRUE(within_tolerance(
        "low-precision forward vs rounded operands", out.data(), expected.data(), N * OC,
        [&, C = C](int64_t i) { return gamma(C + 2) * bound[static_cast<size_t>(i)] + 1e-300; },
        "γ_{C+2}·|inp|·|W|ᵀ"));

    // Against the unrounded operands: each product a·b is off by at most (2u + u²)·|a·b|.
    const std::vector<double> exact_inp(inp.begin(), inp.end()),
        exact_weight(weight.begin(), weight.end());
    std::vector<double> exact(out.size());
    matmul_forward_reference<double>(exact.data(), exact_inp.data(), exact_weight.data(),
                                     bias64.data(), N, C, OC);
    const double u = unit_roundoff(TypeParam{});
    EXPECT_TRUE(within_tolerance(
        "low-precision forward vs f32 operands", out.data(), exact.data(), N * OC,
        [&, C = C](int64_t i) {
          return (2 * u + u * u + gamma(C + 2)) * bound[static_cast<size_t>(i)] + 1e-300;
        },
        "(2u + u² + γ)·|inp|·|W|ᵀ"));
  }
}

TYPED_TEST(LowPrecisionMatmul, BackwardEqualsTheF32BackwardOfTheRoundedOperands) {
  const int64_t N = 19, C = 37, OC = 23;
  const auto inp = random_vector(N * C, 4), weight = random_vector(OC * C, 5),
             dout = random_vector(N * OC, 6);
  const auto inp_low = round_to(inp, TypeParam{}), weight_low = round_to(weight, TypeParam{});
  std::vector<float> dinp(static_cast<size_t>(N * C)), dweight(static_cast<size_t>(OC * C)),
      dbias(static_cast<size_t>(OC));
  matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp_low.data(),
                  weight_low.data(), N, C, OC);
  // The f32 kernel on the widened operands must give the very same bits: the widening is exact
  // and the same sgemm calls run.
  std::vector<float> inp32(inp.size()), weight32(weight.size());
  widen_to_f32(inp32.data(), inp_low.data(), N * C);
  widen_to_f32(weight32.data(), weight_low.data(), OC * C);
  for (size_t i = 0; i < inp32.size(); i++) ASSERT_EQ(inp32[i], to_f32(inp_low[i]));
  std::vector<float> dinp32(dinp.size()), dweight32(dweight.size()), dbias32(dbias.size());
  matmul_backward(dinp32.data(), dweight32.data(), dbias32.data(), dout.data(), inp32.data(),
                  weight32.data(), N, C, OC);
  EXPECT_TRUE(test_util::bitwise_equal("dinp", dinp, dinp32));
  EXPECT_TRUE(test_util::bitwise_equal("dweight", dweight, dweight32));
  EXPECT_TRUE(test_util::bitwise_equal("dbias", dbias, dbias32));
}

TEST(LowPrecisionMatmulArguments, RejectsNegativeSizes) {
  const bf16_t b{0};
  const f16_t h{0};
  float x = 0.0f;
  EXPECT_THROW(matmul_forward(&x, &b, &b, nullptr, -1, 1, 1), InternalError);
  EXPECT_THROW(matmul_backward(&x, &x, nullptr, &x, &h, &h, 1, 1, -1), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
