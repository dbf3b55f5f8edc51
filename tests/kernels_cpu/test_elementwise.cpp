// Tests of kernels/cpu/elementwise.h and activation.h: fast paths against the double reference,
// reference gradients against central differences, edge values.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/elementwise.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::gradient_matches;
using test_util::random_vector;
using test_util::to_double;
using test_util::weighted_sum;
using test_util::within_tolerance;

// Sizes: empty, one element, odd, not a multiple of the 8/16-lane vectors, and large enough to be
// split between threads.
const int64_t kSizes[] = {0, 1, 7, 13, 129, 1000, 65537};

// Inputs spanning the interesting range of the activations, plus exact edge values at the front.
std::vector<float> activation_inputs(int64_t n, uint64_t seed) {
  auto x = random_vector(n, seed, -12.0, 12.0);
  const float edges[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 80.0f, -80.0f, 1.0f, -1.0f};
  for (int64_t i = 0; i < n && i < 8; i++) x[static_cast<size_t>(i)] = edges[i];
  return x;
}

// The fast activations evaluate the same formula in float with an exp accurate to 1 ulp and the
// sigmoid complement computed without cancellation: measured worst case 2.4 ulp relative (about
// 1.4e-7). Tolerance: 4 ulp relative (2.5e-7), and 4 ulp of 1 absolute for results near a zero
// (the derivatives are differences of O(1) terms there).
constexpr double kActivationAtol = 2.5e-7, kActivationRtol = 2.5e-7;

TEST(Elementwise, ResidualBiasAndScaleMatchTheReferenceExactly) {
  for (const int64_t n : kSizes) {
    const auto a = random_vector(n, 1), b = random_vector(n, 2), dout = random_vector(n, 3);
    std::vector<float> out(a.size()), expected(a.size());
    residual_forward(out.data(), a.data(), b.data(), n);
    residual_forward_reference<float>(expected.data(), a.data(), b.data(), n);
    // One rounding per element in both paths: identical results.
    EXPECT_TRUE(all_close("residual_forward n=" + std::to_string(n), out, expected, 0.0, 0.0));
    auto da = random_vector(n, 4), db = random_vector(n, 5);
    auto da_ref = da, db_ref = db;
    residual_backward(da.data(), db.data(), dout.data(), n);
    residual_backward_reference<float>(da_ref.data(), db_ref.data(), dout.data(), n);
    EXPECT_TRUE(all_close("residual da", da, da_ref, 0.0, 0.0));
    EXPECT_TRUE(all_close("residual db", db, db_ref, 0.0, 0.0));
    scale_forward(out.data(), a.data(), 0.37f, n);
    scale_forward_reference<float>(expected.data(), a.data(), 0.37f, n);
    EXPECT_TRUE(all_close("scale_forward", out, expected, 0.0, 0.0));
  }
}

TEST(Elementwise, BiasAddAndItsBackwardMatchTheReference) {
  for (const auto& [N, C] :
       {std::pair<int64_t, int64_t>{0, 5}, {1, 1}, {7, 13}, {129, 67}, {64, 200}}) {
    const auto bias = random_vector(C, 1), dout = random_vector(N * C, 2);
    auto x = random_vector(N * C, 3);
    auto x_ref = x;
    bias_add_forward(x.data(), bias.data(), N, C);
    bias_add_forward_reference<float>(x_ref.data(), bias.data(), N, C);
    EXPECT_TRUE(all_close("bias_add_forward", x, x_ref, 0.0, 0.0));
    auto dbias = random_vector(C, 4);
    auto dbias64 = to_double(dbias);
    bias_add_backward(dbias.data(), dout.data(), N, C);
    const auto dout64 = to_double(dout);
    bias_add_backward_reference<double>(dbias64.data(), dout64.data(), N, C);
    // A float sum of N + 1 terms in [-1, 1]: at most (N + 1)·u·Σ|terms| ≤ (N + 1)²·u.
    const double atol = static_cast<double>((N + 1) * (N + 1)) * std::ldexp(1.0, -24);
    EXPECT_TRUE(all_close("bias_add_backward N=" + std::to_string(N), dbias, dbias64, atol, 0.0));
  }
}

TEST(Elementwise, ReferenceGradientsMatchCentralDifferences) {
  const int64_t N = 3, C = 4, n = N * C;
  auto a = random_vector<double>(n, 1), b = random_vector<double>(n, 2);
  auto bias = random_vector<double>(C, 3);
  const auto w = random_vector<double>(n, 4);
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<double> da(a.size()), db(b.size()), dbias(bias.size());
  residual_backward_reference<double>(da.data(), db.data(), w.data(), n);
  const auto residual_loss = [&] {
    residual_forward_reference<double>(out.data(), a.data(), b.data(), n);
    return weighted_sum(out, w);
  };
  EXPECT_TRUE(gradient_matches("residual da", a, da, residual_loss));
  EXPECT_TRUE(gradient_matches("residual db", b, db, residual_loss));
  bias_add_backward_reference<double>(dbias.data(), w.data(), N, C);
  EXPECT_TRUE(gradient_matches("dbias", bias, dbias, [&] {
    out = a;
    bias_add_forward_reference<double>(out.data(), bias.data(), N, C);
    return weighted_sum(out, w);
  }));
  std::vector<double> dscaled(a.size());
  scale_backward_reference<double>(dscaled.data(), w.data(), 0.37, n);
  EXPECT_TRUE(gradient_matches("scale dinp", a, dscaled, [&] {
    scale_forward_reference<double>(out.data(), a.data(), 0.37, n);
    return weighted_sum(out, w);
  }));
}

TEST(Elementwise, ScaleBackwardMatchesTheReference) {
  const auto dout = random_vector(1001, 1);
  auto dinp = random_vector(1001, 2);
  auto dinp_ref = dinp;
  scale_backward(dinp.data(), dout.data(), -1.5f, 1001);
  scale_backward_reference<float>(dinp_ref.data(), dout.data(), -1.5f, 1001);
  // The compiler may fuse multiply and add in either path: within 1 ulp of the larger term.
  EXPECT_TRUE(all_close("scale_backward", dinp, dinp_ref, 4e-7, 2.4e-7));
}

using ForwardFast = void (*)(float*, const float*, int64_t);
using ForwardReference = void (*)(double*, const double*, int64_t);
using BackwardFast = void (*)(float*, const float*, const float*, int64_t);
using BackwardReference = void (*)(double*, const double*, const double*, int64_t);

struct UnaryActivation {
  const char* name;
  ForwardFast forward;
  ForwardReference forward_reference;
  BackwardFast backward;
  BackwardReference backward_reference;
};

const UnaryActivation kUnaryActivations[] = {
    {"gelu", gelu_forward, gelu_forward_reference<double>, gelu_backward,
     gelu_backward_reference<double>},
    {"silu", silu_forward, silu_forward_reference<double>, silu_backward,
     silu_backward_reference<double>},
};

TEST(Activation, FastUnaryActivationsMatchTheDoubleReference) {
  for (const auto& op : kUnaryActivations) {
    for (const int64_t n : kSizes) {
      const auto x = activation_inputs(n, 10), dout = random_vector(n, 11);
      std::vector<float> out(x.size(), NAN);
      op.forward(out.data(), x.data(), n);
      const auto x64 = to_double(x), dout64 = to_double(dout);
      std::vector<double> expected(x.size());
      op.forward_reference(expected.data(), x64.data(), n);
      EXPECT_TRUE(all_close(std::string(op.name) + "_forward n=" + std::to_string(n), out, expected,
                            kActivationAtol, kActivationRtol));
      auto dinp = random_vector(n, 12);
      auto dinp64 = to_double(dinp);
      op.backward(dinp.data(), x.data(), dout.data(), n);
      op.backward_reference(dinp64.data(), x64.data(), dout64.data(), n);
      EXPECT_TRUE(all_close(std::string(op.name) + "_backward n=" + std::to_string(n), dinp, dinp64,
                            kActivationAtol, kActivationRtol));
    }
  }
}

TEST(Activation, UnaryReferenceGradientsMatchCentralDifferences) {
  for (const auto& op : kUnaryActivations) {
    auto x = random_vector<double>(40, 20, -6.0, 6.0);
    const auto w = random_vector<double>(40, 21);
    std::vector<double> out(x.size()), dinp(x.size());
    op.backward_reference(dinp.data(), x.data(), w.data(), 40);
    EXPECT_TRUE(gradient_matches(std::string(op.name), x, dinp, [&] {
      op.forward_reference(out.data(), x.data(), 40);
      return weighted_sum(out, w);
    }));
  }
}

// Fixed values, independent of the kernels' own constants (the fast path and the reference share
// √(2/π) and 0.044715, so comparing them cannot catch a wrong constant). Computed with mpmath at
// 40 significant digits, every x exactly representable in f32:
//   GELU_tanh(x) = x/2·(1 + tanh(u)), u = sqrt(2/pi)·(x + 0.044715·x³)
//   GELU_tanh'(x) = (1 + tanh(u))/2 + x/2·sech²(u)·sqrt(2/pi)·(1 + 3·0.044715·x²)
//   SiLU(x) = x·σ(x), SiLU'(x) = σ(x)·(1 + x·(1 − σ(x))), σ(x) = 1/(1 + exp(−x))
// e.g. `from mpmath import *; mp.dps = 40; x = mpf('0.75'); u = sqrt(2/pi)*(x +
// mpf('0.044715')*x**3)`.
struct ActivationValue {
  double x, value, derivative;
};
constexpr ActivationValue kGeluTanhValues[] = {
    {-6, -8.4396467007622971e-11, -7.7099739309536955e-10},
    {-3.5, -0.00061619765537366331, -0.002422643760116431},
    {-1.25, -0.1322857970302854, -0.12249263224964863},
    {-0.5, -0.15428599017485608, 0.13263009646535769},
    {-0.0625, -0.029692650693718542, 0.45019741000875209},
    {0.125, 0.068717198624223388, 0.59921540616279144},
    {0.75, 0.5799605551656203, 0.9989382561374143},
    {1, 0.8411919906082767, 1.0829640838457826},
    {2, 1.954597694087775, 1.0860992566236184},
    {3, 2.996362607918227, 1.0115841666309697},
    {5.5, 5.4999999940723597, 1.0000000467655281},
};
constexpr ActivationValue kSiluValues[] = {
    {-6, -0.014835738939808646, -0.012326432591525513},
    {-3.5, -0.10259280762974712, -0.070273352827718141},
    {-1.25, -0.27837517353163607, 0.0063191550846875812},
    {-0.5, -0.18877033439907272, 0.26003881269734819},
    {-0.0625, -0.030273755267311523, 0.468770333137434},
    {0.125, 0.066401171671719532, 0.56233762025045844},
    {0.75, 0.50938402438154473, 0.8425999444967535},
    {1, 0.73105857863000488, 0.92767051187148673},
    {2, 1.7615941559557649, 1.0907842487848955},
    {3, 2.8577223804672997, 1.0881041060151696},
    {5.5, 5.4776142425625713, 1.0182245066058876},
};

// Tolerances, relative with no floor but rounding's own (GELU(−6) ≈ −8e−11 must be right too).
// The double reference computes x/2·(1 + tanh u): near tanh u = −1 the sum cancels, so its error
// is a few double roundings of the terms, absolute: 16·2⁻⁵²·(1 + |x|³) (|x|³ from the cubic in u
// and in the derivative), on top of 1e−14 relative. The f32 fast path avoids the cancellation
// (x·σ(2u)); its error is f32 rounding of u (|u| up to 11 here) through exp: 1e−6 relative. Its
// derivatives add terms of up to ~1.1 that cancel (SiLU'(−1.25) ≈ 0.006): 4 f32 roundings of
// such a term, absolute, on top.
constexpr double kReferenceFixedRtol = 1e-14, kFastFixedRtol = 1e-6, kFastBackwardAtol = 0x1p-22;

::testing::AssertionResult matches_fixed(const std::string& what, const double* actual,
                                         const std::vector<double>& expected,
                                         const std::vector<double>& x) {
  return within_tolerance(
      what, actual, expected.data(), static_cast<int64_t>(expected.size()),
      [&](int64_t i) {
        const double ax = std::fabs(x[static_cast<std::size_t>(i)]);
        return kReferenceFixedRtol * std::fabs(expected[static_cast<std::size_t>(i)]) +
               16 * std::ldexp(1.0, -52) * (1 + ax * ax * ax);
      },
      "1e-14 relative + 16 eps (1 + |x|^3)");
}

TEST(Activation, GeluAndSiluEqualIndependentlyComputedValues) {
  const struct {
    const char* name;
    const UnaryActivation& op;
    const ActivationValue* values;
  } cases[] = {{"gelu", kUnaryActivations[0], kGeluTanhValues},
               {"silu", kUnaryActivations[1], kSiluValues}};
  constexpr std::size_t n = std::size(kGeluTanhValues);
  static_assert(std::size(kSiluValues) == n);
  for (const auto& c : cases) {
    std::vector<double> x64(n), expected(n), dexpected(n), one64(n, 1.0);
    for (std::size_t i = 0; i < n; i++) {
      x64[i] = c.values[i].x;
      expected[i] = c.values[i].value;
      dexpected[i] = c.values[i].derivative;
    }
    std::vector<double> out64(n), dinp64(n, 0.0);
    c.op.forward_reference(out64.data(), x64.data(), static_cast<int64_t>(n));
    c.op.backward_reference(dinp64.data(), x64.data(), one64.data(), static_cast<int64_t>(n));
    EXPECT_TRUE(
        matches_fixed(std::string(c.name) + " reference forward", out64.data(), expected, x64));
    EXPECT_TRUE(
        matches_fixed(std::string(c.name) + " reference backward", dinp64.data(), dexpected, x64));
    const std::vector<float> x(x64.begin(), x64.end()), one(n, 1.0f);
    std::vector<float> out(n, NAN), dinp(n, 0.0f);
    c.op.forward(out.data(), x.data(), static_cast<int64_t>(n));
    c.op.backward(dinp.data(), x.data(), one.data(), static_cast<int64_t>(n));
    EXPECT_TRUE(
        all_close(std::string(c.name) + " fast forward", out, expected, 0.0, kFastFixedRtol));
    EXPECT_TRUE(all_close(std::string(c.name) + " fast backward", dinp, dexpected,
                          kFastBackwardAtol, kFastFixedRtol));
  }
}

TEST(Activation, GeluAndSiluHaveTheirKnownLimits) {
  // GELU(x) and SiLU(x) → x for large x, both are 0 at 0; GELU(-80) underflows to -0 while
  // SiLU(-80) = -80·e^-80/(1 + e^-80) is still a normal float.
  const std::vector<float> x = {0.0f, 80.0f, -80.0f, 1e30f, -1e30f};
  std::vector<float> gelu(x.size()), silu(x.size());
  gelu_forward(gelu.data(), x.data(), 5);
  silu_forward(silu.data(), x.data(), 5);
  for (const auto& out : {gelu, silu}) {
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 80.0f);
    EXPECT_EQ(out[3], 1e30f);
    EXPECT_EQ(out[4], 0.0f);
  }
  EXPECT_EQ(gelu[2], 0.0f);
  EXPECT_NEAR(silu[2], -80.0 * std::exp(-80.0), 1e-6 * 80.0 * std::exp(-80.0));
}

TEST(Activation, NaNPropagatesInsteadOfBeingClampedAway) {
  const std::vector<float> x = {std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> out(1), dinp(1, 0.0f);
  const std::vector<float> one = {1.0f};
  gelu_forward(out.data(), x.data(), 1);
  EXPECT_TRUE(std::isnan(out[0]));
  silu_forward(out.data(), x.data(), 1);
  EXPECT_TRUE(std::isnan(out[0]));
  gelu_backward(dinp.data(), x.data(), one.data(), 1);
  EXPECT_TRUE(std::isnan(dinp[0]));
}

TEST(Activation, SwigluFastMatchesTheDoubleReferenceAndItsGradientsMatchCentralDifferences) {
  for (const int64_t n : kSizes) {
    const auto gate = activation_inputs(n, 30), up = random_vector(n, 31, -3.0, 3.0);
    const auto dout = random_vector(n, 32);
    std::vector<float> out(gate.size());
    swiglu_forward(out.data(), gate.data(), up.data(), n);
    const auto gate64 = to_double(gate), up64 = to_double(up), dout64 = to_double(dout);
    std::vector<double> expected(gate.size());
    swiglu_forward_reference<double>(expected.data(), gate64.data(), up64.data(), n);
    // |up| <= 3 scales the SiLU error: 3x the activation tolerance.
    EXPECT_TRUE(all_close("swiglu_forward", out, expected, 3 * kActivationAtol, kActivationRtol));
    auto dgate = random_vector(n, 33), dup = random_vector(n, 34);
    auto dgate64 = to_double(dgate), dup64 = to_double(dup);
    swiglu_backward(dgate.data(), dup.data(), dout.data(), gate.data(), up.data(), n);
    swiglu_backward_reference<double>(dgate64.data(), dup64.data(), dout64.data(), gate64.data(),
                                      up64.data(), n);
    EXPECT_TRUE(all_close("swiglu dgate", dgate, dgate64, 3 * kActivationAtol, kActivationRtol));
    EXPECT_TRUE(all_close("swiglu dup", dup, dup64, kActivationAtol, kActivationRtol));
  }
  auto gate = random_vector<double>(30, 40, -6.0, 6.0), up = random_vector<double>(30, 41);
  const auto w = random_vector<double>(30, 42);
  std::vector<double> out(30), dgate(30), dup(30);
  swiglu_backward_reference<double>(dgate.data(), dup.data(), w.data(), gate.data(), up.data(), 30);
  const auto loss = [&] {
    swiglu_forward_reference<double>(out.data(), gate.data(), up.data(), 30);
    return weighted_sum(out, w);
  };
  EXPECT_TRUE(gradient_matches("swiglu dgate", gate, dgate, loss));
  EXPECT_TRUE(gradient_matches("swiglu dup", up, dup, loss));
}

TEST(Activation, RejectsANegativeSize) {
  float x = 0.0f;
  EXPECT_THROW(gelu_forward(&x, &x, -1), InternalError);
  EXPECT_THROW(swiglu_backward(&x, &x, &x, &x, &x, -5), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
