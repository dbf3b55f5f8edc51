// Tests of the low-memory optimizers of kernels/cpu/optimizer.h (Lion, Adam-mini, Adafactor) and
// kernels/cpu/optimizer_8bit.h (the dynamic map, block-wise quantization, 8-bit AdamW): each fast
// kernel against its reference, and the properties the papers and PyTorch/bitsandbytes state,
// computed independently here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/optimizer_8bit.h"
#include "kernels/cpu/storage.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::all_close;
using test_util::bitwise_equal;
using test_util::random_vector;
using test_util::to_double;

constexpr double kFloatEpsilon = 0x1p-24;  // unit roundoff of f32

std::vector<float> zeros(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), 0.0f);
}

// ---- Lion ----------------------------------------------------------------------------------

TEST(Lion, FastMatchesTheFloatReferenceBitwiseAndTheDoubleReferenceOverSeveralSteps) {
  for (const int64_t n : {0, 1, 13, 4097}) {
    LionHyperparameters hp;
    hp.learning_rate = 1e-2f;
    hp.weight_decay = 0.5f;
    auto param = random_vector(n, 1), m = zeros(n);
    auto param32 = param, m32 = m;
    auto param64 = to_double(param), m64 = to_double(m);
    for (int step = 1; step <= 5; step++) {
      const auto grad = random_vector(n, 100 + static_cast<uint64_t>(step));
      const auto grad64 = to_double(grad);
      lion_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), nullptr, n, hp,
                                               1.0f);
      lion_update_reference<float>(param32.data(), grad.data(), m32.data(), n, hp);
      lion_update_reference<double>(param64.data(), grad64.data(), m64.data(), n, hp);
    }
    EXPECT_TRUE(bitwise_equal("lion param vs float reference", param, param32)) << "n=" << n;
    EXPECT_TRUE(bitwise_equal("lion m vs float reference", m, m32)) << "n=" << n;
    // m: each step rounds two products and a sum, ≤ 3u·(|β2·m| + |(1-β2)·g|) ≤ 3u (|m|, |g| ≤ 1),
    // absolute since m is a sum of both signs: 15u over 5 steps. param: decay·p and the
    // subtraction of the exact lr·sign(c) round twice, ≤ 2u·1.05 a step (|p| ≤ 1 + 5·lr), as
    // long as sign(c) agrees (c is far from 0 for these random inputs).
    EXPECT_TRUE(all_close("lion m vs double", m, m64, 15 * kFloatEpsilon, 0.0));
    EXPECT_TRUE(all_close("lion param vs double", param, param64, 11 * kFloatEpsilon, 0.0));
  }
}

TEST(Lion, SignOfZeroIsZeroAndTheStepIsLearningRateTimesSign) {
  LionHyperparameters hp;
  hp.learning_rate = 0.25f;
  hp.beta1 = 0.5f;
  hp.beta2 = 0.75f;
  std::vector<float> param = {1.0f, 1.0f, 1.0f}, grad = {3.0f, -2.0f, 0.0f}, m(3, 0.0f);
  lion_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), nullptr, 3, hp,
                                           1.0f);
  EXPECT_EQ(param, (std::vector<float>{0.75f, 1.25f, 1.0f}));
  // m ← β2·m + (1-β2)·g = g/4.
  EXPECT_EQ(m, (std::vector<float>{0.75f, -0.5f, 0.0f}));
  // c = β1·m + (1-β1)·g cancels to exactly 0 when m = -g (β1 = 1/2): no step.
  std::vector<float> m_cancel = {-3.0f}, p = {2.0f}, g = {3.0f};
  lion_update<float, float, float, bf16_t>(p.data(), g.data(), m_cancel.data(), nullptr, 1, hp,
                                           1.0f);
  EXPECT_EQ(p[0], 2.0f) << "sign(0) must be 0";
}

TEST(Lion, WeightDecayIsDecoupledAndBetaEdgesSelectGradientOrMomentum) {
  LionHyperparameters hp;
  hp.learning_rate = 0.125f;
  hp.weight_decay = 2.0f;  // decay 1 - 0.25
  // β1 = 0: the direction is sign(g); β2 = 0: m becomes g.
  hp.beta1 = 0.0f;
  hp.beta2 = 0.0f;
  std::vector<float> param = {4.0f, -4.0f}, grad = {-0.5f, 0.5f}, m = {10.0f, -10.0f};
  lion_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), nullptr, 2, hp,
                                           1.0f);
  EXPECT_EQ(param, (std::vector<float>{4.0f * 0.75f + 0.125f, -4.0f * 0.75f - 0.125f}));
  EXPECT_EQ(m, grad);
  // β1 = 1: the direction is sign(m) whatever the gradient; β2 = 1 keeps m.
  hp.beta1 = 1.0f;
  hp.beta2 = 1.0f;
  hp.weight_decay = 0.0f;
  m = {10.0f, -10.0f};
  param = {0.0f, 0.0f};
  lion_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), nullptr, 2, hp,
                                           1.0f);
  EXPECT_EQ(param, (std::vector<float>{-0.125f, 0.125f}));
  EXPECT_EQ(m, (std::vector<float>{10.0f, -10.0f}));
}

// ---- Adam-mini -----------------------------------------------------------------------------

TEST(AdamMini, FastMatchesTheDoubleReferenceOverSeveralSteps) {
  for (const int64_t block_size : {1, 2, 7, 300, 1031}) {
    for (const int64_t count : {1, 3, 8}) {
      const int64_t n = block_size * count;
      AdamWHyperparameters hp;
      hp.learning_rate = 1e-2f;
      hp.weight_decay = 0.1f;
      auto param = random_vector(n, 3), m = zeros(n), v = zeros(count);
      auto param64 = to_double(param), m64 = to_double(m), v64 = to_double(v);
      for (int64_t step = 1; step <= 5; step++) {
        const auto grad = random_vector(n, 200 + static_cast<uint64_t>(step));
        const auto grad64 = to_double(grad);
        adam_mini_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), v.data(),
                                                      nullptr, block_size, count, hp, step, 1.0f);
        adam_mini_update_reference<double>(param64.data(), grad64.data(), m64.data(), v64.data(),
                                           block_size, count, hp, step);
      }
      // v: the mean is summed in double (exact to 2^-53·block), rounded once, then 3 f32
      // roundings per step; m as AdamW's. The parameter moves by ≤ lr per step with a relative
      // error of a few u; v ≥ mean(g²) ≈ 1/3 here, so m/√v is well conditioned.
      EXPECT_TRUE(all_close("adam-mini v", v, v64, 0.0, 20 * kFloatEpsilon))
          << "block " << block_size << " count " << count;
      EXPECT_TRUE(all_close("adam-mini m", m, m64, 1e-7, 20 * kFloatEpsilon));
      EXPECT_TRUE(all_close("adam-mini param", param, param64, 2e-7, 20 * kFloatEpsilon));
    }
  }
}

TEST(AdamMini, BlockSizeOneIsAdamWBitForBit) {
  const int64_t n = 1001;
  AdamWHyperparameters hp;
  hp.weight_decay = 0.01f;
  auto p1 = random_vector(n, 5), p2 = p1, m1 = zeros(n), m2 = m1, v1 = zeros(n), v2 = v1;
  for (int64_t step = 1; step <= 3; step++) {
    const auto grad = random_vector(n, 300 + static_cast<uint64_t>(step));
    adam_mini_update<float, float, float, bf16_t>(p1.data(), grad.data(), m1.data(), v1.data(),
                                                  nullptr, 1, n, hp, step, 0.5f);
    adamw_update<float, float, float, bf16_t>(p2.data(), grad.data(), m2.data(), v2.data(), nullptr,
                                              n, hp, step, 0.5f);
  }
  EXPECT_TRUE(bitwise_equal("param", p1, p2));
  EXPECT_TRUE(bitwise_equal("m", m1, m2));
  EXPECT_TRUE(bitwise_equal("v", v1, v2));
}

TEST(AdamMini, OneBlockKeepsOneVWhoseUpdateIsTheMeanOfTheSquaredGradients) {
  const int64_t n = 777;
  AdamWHyperparameters hp;
  hp.beta2 = 0.5f;
  auto param = random_vector(n, 7), m = zeros(n), grad = random_vector(n, 8, -3.0, 3.0);
  std::vector<float> v = {0.25f};
  long double mean = 0.0L;  // independently: in long double, in reverse order
  for (int64_t i = n - 1; i >= 0; i--) mean += static_cast<long double>(grad[i]) * grad[i];
  mean /= n;
  adam_mini_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), v.data(),
                                                nullptr, n, 1, hp, 1, 1.0f);
  // v = 0.5·0.25 + 0.5·mean: the mean rounded once to f32, then a product and a sum.
  const double expected = 0.125 + 0.5 * static_cast<double>(mean);
  EXPECT_NEAR(v[0], expected, 3 * kFloatEpsilon * expected);
}

// ---- Adafactor -----------------------------------------------------------------------------

TEST(Adafactor, FastMatchesTheDoubleReferenceFactoredAndUnfactored) {
  struct Shape {
    int64_t rows, cols;
    bool factored;
  };
  for (const Shape s : {Shape{1, 1, false}, Shape{1, 4099, false}, Shape{1, 17, true},
                        Shape{5, 3, true}, Shape{37, 129, true}, Shape{300, 70, true}}) {
    const int64_t n = s.rows * s.cols;
    AdafactorHyperparameters hp;
    hp.weight_decay = 0.1f;
    auto param = random_vector(n, 9);
    auto row = zeros(s.factored ? s.rows : s.cols), col = zeros(s.factored ? s.cols : 0);
    auto param64 = to_double(param), row64 = to_double(row), col64 = to_double(col);
    for (int64_t step = 1; step <= 4; step++) {
      const auto grad = random_vector(n, 400 + static_cast<uint64_t>(step));
      const auto grad64 = to_double(grad);
      adafactor_update<float, float, float, bf16_t>(param.data(), grad.data(), row.data(),
                                                    s.factored ? col.data() : nullptr, nullptr,
                                                    s.rows, s.cols, s.factored, hp, step, 1.0f);
      adafactor_update_reference<double>(param64.data(), grad64.data(), row64.data(),
                                         s.factored ? col64.data() : nullptr, s.rows, s.cols,
                                         s.factored, hp, step);
    }
    // Row and column means summed in double and rounded once, lerped in f32 (3 roundings a
    // step); U = g / √V̂ a few roundings; α and the clip in double. 4 steps of lr ≤ 1e-2.
    EXPECT_TRUE(all_close("adafactor row_var", row, row64, 0.0, 16 * kFloatEpsilon))
        << s.rows << "x" << s.cols;
    if (s.factored) {
      EXPECT_TRUE(all_close("adafactor col_var", col, col64, 0.0, 16 * kFloatEpsilon));
    }
    EXPECT_TRUE(all_close("adafactor param", param, param64, 1e-7, 16 * kFloatEpsilon))
        << s.rows << "x" << s.cols;
  }
}

// ---- 8-bit ---------------------------------------------------------------------------------

TEST(DynamicMap, HasTwoHundredFiftySixSortedCodesWithZeroAndOne) {
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    EXPECT_TRUE(std::is_sorted(code.begin(), code.end()));
    EXPECT_EQ(std::count(code.begin(), code.end(), 0.0f), 1);
    EXPECT_EQ(code.back(), 1.0f);
    EXPECT_EQ(std::adjacent_find(code.begin(), code.end()), code.end()) << "duplicate codes";
  }
}

TEST(QuantizeBlockwise, FastMatchesTheReferenceBitwise) {
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    for (const int64_t n : {0, 1, 255, 4097}) {
      for (const int64_t block : {1, 64, 256}) {
        auto x = random_vector(n, 11, is_signed ? -2.0 : 0.0, 2.0);
        const int64_t blocks = quantization_block_count(n, block);
        std::vector<uint8_t> q(static_cast<size_t>(n)), q_ref = q;
        auto absmax = zeros(blocks), absmax_ref = absmax;
        quantize_blockwise(q.data(), absmax.data(), x.data(), n, block, code);
        quantize_blockwise_reference(q_ref.data(), absmax_ref.data(), x.data(), n, block, code);
        EXPECT_EQ(q, q_ref) << "n " << n << " block " << block << " signed " << is_signed;
        EXPECT_TRUE(bitwise_equal("absmax", absmax, absmax_ref));
      }
    }
  }
}

TEST(AdamW8bit, FastMatchesTheReferenceBitwiseOverSeveralSteps) {
  for (const int64_t n : {0, 1, 300, 4097}) {
    for (const int64_t block : {1, 256, 2048}) {
      AdamWHyperparameters hp;
      hp.weight_decay = 0.01f;
      auto param = random_vector(n, 13), param_ref = param;
      const int64_t blocks = quantization_block_count(n, block);
      std::vector<uint8_t> qm(static_cast<size_t>(n), 0), qv = qm, qm_ref = qm, qv_ref = qm;
      auto am = zeros(blocks), av = am, am_ref = am, av_ref = am;
      for (int64_t step = 1; step <= 4; step++) {
        const auto grad = random_vector(n, 500 + static_cast<uint64_t>(step));
        adamw_8bit_update<float, float, bf16_t>(param.data(), grad.data(), qm.data(), qv.data(),
                                                am.data(), av.data(), nullptr, n, block, hp, step,
                                                1.0f);
        adamw_8bit_update_reference(param_ref.data(), grad.data(), qm_ref.data(), qv_ref.data(),
                                    am_ref.data(), av_ref.data(), n, block, hp, step);
      }
      EXPECT_TRUE(bitwise_equal("param", param, param_ref)) << "n " << n << " block " << block;
      EXPECT_EQ(qm, qm_ref);
      EXPECT_EQ(qv, qv_ref);
      EXPECT_TRUE(bitwise_equal("absmax m", am, am_ref));
      EXPECT_TRUE(bitwise_equal("absmax v", av, av_ref));
    }
  }
}

TEST(LowMemoryOptimizers, BadSizesAndStepsThrowNamingTheValue) {
  std::vector<float> x(4, 0.0f);
  std::vector<uint8_t> q(4);
  const auto throws_naming = [](const auto& call, const std::string& value) {
    try {
      call();
    } catch (const InternalError& error) {
      return std::string(error.what()).find(value) != std::string::npos;
    }
    return false;
  };
  float* p = x.data();
  EXPECT_TRUE(throws_naming(
      [&] { lion_update<float, float, float, bf16_t>(p, p, p, nullptr, -3, {}, 1.0f); }, "-3"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adam_mini_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 0, 1, {}, 1, 1.0f);
      },
      "block_size = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adam_mini_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 2, 1, {}, 0, 1.0f);
      },
      "step = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adafactor_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 2, 0, true, {}, 1, 1.0f);
      },
      "cols = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adafactor_update<float, float, float, bf16_t>(p, p, p, nullptr, nullptr, 2, 2, false, {}, 1,
                                                      1.0f);
      },
      "rows = 2"));
  const auto& code = dynamic_quantization_map(true);
  EXPECT_TRUE(throws_naming([&] { quantize_blockwise(q.data(), p, p, -1, 4, code); }, "-1"));
  EXPECT_TRUE(throws_naming([&] { quantize_blockwise(q.data(), p, p, 4, 0, code); }, "block = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adamw_8bit_update<float, float, bf16_t>(p, p, q.data(), q.data(), p, p, nullptr, 4, 2, {},
                                                -7, 1.0f);
      },
      "step = -7"));
}

}  // namespace
}  // namespace vramlab::kernels::cpu
