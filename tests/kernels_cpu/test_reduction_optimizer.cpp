// Tests of kernels/cpu/reduction.h and optimizer.h: chunked double sums against Kahan sums,
// AdamW and SGD against their references and against hand-derived first steps.
#include <gtest/gtest.h>

#include <cmath>

#include "common/platform/errors.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/reduction.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::random_vector;
using test_util::to_double;

TEST(Reduction, ChunkedDoubleSumsMatchTheKahanReference) {
  for (const int64_t n : {0, 1, 7, 4095, 4096, 4097, 100003}) {
    auto x = random_vector(n, 1, -1.0, 1.0);
    if (n > 3) x[1] = 1e30f, x[2] = -1e30f;  // cancels exactly in double, loses all of float
    // Sums of n doubles each exact (float -> double, squares exact in double): error ≤
    // n·2^-53·Σ|x|.
    const double bound = static_cast<double>(n) * std::ldexp(1.0, -53);
    double abs_sum = 0.0, square_sum = 0.0;
    for (const float value : x) {
      abs_sum += std::fabs(value);
      square_sum += static_cast<double>(value) * value;
    }
    EXPECT_NEAR(sum(x.data(), n), sum_reference<float>(x.data(), n), bound * abs_sum + 1e-300)
        << "n=" << n;
    EXPECT_NEAR(sum_of_squares(x.data(), n), sum_of_squares_reference<float>(x.data(), n),
                bound * square_sum + 1e-300)
        << "n=" << n;
    EXPECT_NEAR(l2_norm(x.data(), n), l2_norm_reference<float>(x.data(), n),
                bound * std::sqrt(square_sum) + 1e-300)
        << "n=" << n;
  }
}

TEST(Reduction, KnownValues) {
  const std::vector<float> x = {3.0f, 4.0f};
  EXPECT_EQ(l2_norm(x.data(), 2), 5.0);
  EXPECT_EQ(sum(x.data(), 2), 7.0);
  EXPECT_EQ(sum(x.data(), 0), 0.0);
  const std::vector<double> ones(1000001, 0.1);
  EXPECT_NEAR(sum_reference<double>(ones.data(), 1000001), 100000.1, 1e-9);
  EXPECT_THROW(sum(x.data(), -1), InternalError);
}

TEST(AdamW, FastMatchesTheDoubleReferenceOverSeveralSteps) {
  for (const int64_t n : {0, 1, 13, 4097}) {
    AdamWHyperparameters hp;
    hp.learning_rate = 1e-2f;
    hp.weight_decay = 0.1f;
    auto param = random_vector(n, 1), m = std::vector<float>(static_cast<size_t>(n), 0.0f), v = m;
    auto param64 = to_double(param), m64 = to_double(m), v64 = to_double(v);
    for (int64_t step = 1; step <= 5; step++) {
      const auto grad = random_vector(n, 10 + static_cast<uint64_t>(step));
      const auto grad64 = to_double(grad);
      adamw_update(param.data(), grad.data(), m.data(), v.data(), n, hp, step);
      adamw_update_reference<double>(param64.data(), grad64.data(), m64.data(), v64.data(), n, hp,
                                     step);
    }
    // m and v are a few float roundings per step (relative 1e-6 over 5 steps); each step moves
    // the parameter by about lr = 1e-2 with a relative error of a few ulp, and v ≈ g² can be
    // tiny, so m/√v is error-prone where the gradients are small: 5 steps · 1e-2 · 1e-4.
    EXPECT_TRUE(all_close("adamw m", m, m64, 1e-7, 1e-6));
    EXPECT_TRUE(all_close("adamw v", v, v64, 1e-9, 1e-6));
    EXPECT_TRUE(all_close("adamw param", param, param64, 5e-6, 1e-6));
  }
}

TEST(AdamW, FirstStepMovesEachParameterByTheLearningRateAgainstItsGradientSign) {
  // Step 1: m̂ = g and v̂ = g², so the update is lr·g/(|g| + eps) ≈ lr·sign(g).
  AdamWHyperparameters hp;
  hp.learning_rate = 0.5f;
  std::vector<float> param = {1.0f, 1.0f, 1.0f}, grad = {0.3f, -2.0f, 0.0f}, m(3), v(3);
  adamw_update(param.data(), grad.data(), m.data(), v.data(), 3, hp, 1);
  EXPECT_NEAR(param[0], 0.5f, 1e-6);
  EXPECT_NEAR(param[1], 1.5f, 1e-6);
  EXPECT_EQ(param[2], 1.0f);
  EXPECT_THROW(adamw_update(param.data(), grad.data(), m.data(), v.data(), 3, hp, 0),
               InternalError);
}

TEST(SGD, FastMatchesTheReferenceWithAndWithoutMomentum) {
  for (const bool nesterov : {false, true}) {
    for (const float momentum : {0.0f, 0.9f}) {
      const int64_t n = 1031;
      auto param = random_vector(n, 1), buffer = std::vector<float>(n, 0.0f);
      auto param_ref = param, buffer_ref = buffer;
      for (int step = 0; step < 4; step++) {
        const auto grad = random_vector(n, 20 + static_cast<uint64_t>(step));
        sgd_update(param.data(), grad.data(), buffer.data(), n,
                   {.learning_rate = 0.1f,
                    .momentum = momentum,
                    .weight_decay = 0.01f,
                    .nesterov = nesterov});
        sgd_update_reference<float>(param_ref.data(), grad.data(), buffer_ref.data(), n, 0.1f,
                                    momentum, 0.01f, nesterov);
      }
      // Same float operations in the same order up to FMA contraction: 2 ulp per step.
      EXPECT_TRUE(all_close("sgd param", param, param_ref, 1e-6, 1e-6));
      EXPECT_TRUE(all_close("sgd buffer", buffer, buffer_ref, 1e-6, 1e-6));
    }
  }
}

TEST(SGD, PlainStepIsParamMinusLearningRateTimesGradient) {
  std::vector<float> param = {1.0f, -2.0f}, grad = {0.5f, 0.25f};
  sgd_update(param.data(), grad.data(), nullptr, 2,
             {.learning_rate = 0.5f, .momentum = 0.0f, .weight_decay = 0.0f, .nesterov = false});
  EXPECT_EQ(param, (std::vector<float>{0.75f, -2.125f}));
  EXPECT_THROW(
      sgd_update(
          param.data(), grad.data(), nullptr, 2,
          {.learning_rate = 0.5f, .momentum = 0.9f, .weight_decay = 0.0f, .nesterov = false}),
      InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
