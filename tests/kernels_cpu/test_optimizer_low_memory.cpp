// Tests of the low-memory optimizers of kernels/cpu/optimizer.h (Lion, Adam-mini, Adafactor) and
// kernels/cpu/optimizer_8bit.h (the dynamic map, block-wise quantization, 8-bit AdamW): each fast
// kernel against its reference, and the properties the papers and PyTorch/bitsandbytes state,
// computed independently here.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
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
                                               {.grad_multiplier = 1.0f});
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
                                           {.grad_multiplier = 1.0f});
  EXPECT_EQ(param, (std::vector<float>{0.75f, 1.25f, 1.0f}));
  // m ← β2·m + (1-β2)·g = g/4.
  EXPECT_EQ(m, (std::vector<float>{0.75f, -0.5f, 0.0f}));
  // c = β1·m + (1-β1)·g cancels to exactly 0 when m = -g (β1 = 1/2): no step.
  std::vector<float> m_cancel = {-3.0f}, p = {2.0f}, g = {3.0f};
  lion_update<float, float, float, bf16_t>(p.data(), g.data(), m_cancel.data(), nullptr, 1, hp,
                                           {.grad_multiplier = 1.0f});
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
                                           {.grad_multiplier = 1.0f});
  EXPECT_EQ(param, (std::vector<float>{4.0f * 0.75f + 0.125f, -4.0f * 0.75f - 0.125f}));
  EXPECT_EQ(m, grad);
  // β1 = 1: the direction is sign(m) whatever the gradient; β2 = 1 keeps m.
  hp.beta1 = 1.0f;
  hp.beta2 = 1.0f;
  hp.weight_decay = 0.0f;
  m = {10.0f, -10.0f};
  param = {0.0f, 0.0f};
  lion_update<float, float, float, bf16_t>(param.data(), grad.data(), m.data(), nullptr, 2, hp,
                                           {.grad_multiplier = 1.0f});
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
                                                      nullptr, block_size, count, hp,
                                                      {.step = step, .grad_multiplier = 1.0f});
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
                                                  nullptr, 1, n, hp,
                                                  {.step = step, .grad_multiplier = 0.5f});
    adamw_update<float, float, float, bf16_t>(p2.data(), grad.data(), m2.data(), v2.data(), nullptr,
                                              n, hp, {.step = step, .grad_multiplier = 0.5f});
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
                                                nullptr, n, 1, hp,
                                                {.step = 1, .grad_multiplier = 1.0f});
  // v = 0.5·0.25 + 0.5·mean: the mean rounded once to f32, then a product and a sum.
  const double expected = 0.125 + 0.5 * static_cast<double>(mean);
  EXPECT_NEAR(v[0], expected, 3 * kFloatEpsilon * expected);
}

// ---- Adafactor -----------------------------------------------------------------------------

TEST(Adafactor, FastMatchesTheDoubleReferenceFactoredAndUnfactored) {
  struct FactoredShape {
    int64_t rows, cols;
    bool factored;
  };
  for (const FactoredShape s :
       {FactoredShape{1, 1, false}, FactoredShape{1, 4099, false}, FactoredShape{1, 17, true},
        FactoredShape{5, 3, true}, FactoredShape{37, 129, true}, FactoredShape{300, 70, true}}) {
    const int64_t n = s.rows * s.cols;
    AdafactorHyperparameters hp;
    hp.weight_decay = 0.1f;
    auto param = random_vector(n, 9);
    auto row = zeros(s.factored ? s.rows : s.cols), col = zeros(s.factored ? s.cols : 0);
    auto param64 = to_double(param), row64 = to_double(row), col64 = to_double(col);
    for (int64_t step = 1; step <= 4; step++) {
      const auto grad = random_vector(n, 400 + static_cast<uint64_t>(step));
      const auto grad64 = to_double(grad);
      adafactor_update<float, float, float, bf16_t>(
          param.data(), grad.data(), row.data(), s.factored ? col.data() : nullptr, nullptr, s.rows,
          s.cols, s.factored, hp, {.step = step, .grad_multiplier = 1.0f});
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
  // Blocks above 4096 take the kernel's path that computes the new moments twice.
  for (const int64_t n : {0, 1, 300, 4097, 9001}) {
    for (const int64_t block : {1, 256, 2048, 4097}) {
      AdamWHyperparameters hp;
      hp.weight_decay = 0.01f;
      auto param = random_vector(n, 13), param_ref = param;
      const int64_t blocks = quantization_block_count(n, block);
      std::vector<uint8_t> qm(static_cast<size_t>(n), 0), qv = qm, qm_ref = qm, qv_ref = qm;
      auto am = zeros(blocks), av = am, am_ref = am, av_ref = am;
      for (int64_t step = 1; step <= 4; step++) {
        const auto grad = random_vector(n, 500 + static_cast<uint64_t>(step));
        adamw_8bit_update<float, float, bf16_t>(param.data(), grad.data(), qm.data(), qv.data(),
                                                am.data(), av.data(), nullptr, n, block, hp,
                                                {.step = step, .grad_multiplier = 1.0f});
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

// ---- Every storage combination, one step at a time ------------------------------------------

template <typename T>
std::vector<T> stored(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (size_t i = 0; i < values.size(); i++) out[i] = narrow<T>(values[i]);
  return out;
}
template <typename T>
std::vector<double> widened(const std::vector<T>& values) {
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); i++) out[i] = static_cast<double>(widen(values[i]));
  return out;
}
// The unit roundoff of a stored type (half an ulp, relative), plus the f32 arithmetic before it
// (a few u). A moment is a sum of two terms of either sign, so its bound is also taken absolute,
// relative to the terms' size.
template <typename T>
double storage_rtol() {
  if constexpr (std::is_same_v<T, float>) return 32 * kFloatEpsilon;
  if constexpr (std::is_same_v<T, bf16_t>) return 0x1p-8 + 32 * kFloatEpsilon;
  return 0x1p-11 + 32 * kFloatEpsilon;  // f16_t
}

// The gradient the kernels see, g = multiplier · widen(grad), for the double references.
template <typename Gr>
std::vector<double> scaled_gradient(const std::vector<Gr>& grad, float multiplier) {
  std::vector<double> g(grad.size());
  for (size_t i = 0; i < grad.size(); i++) g[i] = static_cast<double>(multiplier * widen(grad[i]));
  return g;
}

constexpr float kMultiplier = 0.3f;  // a loss scaler's 1/scale times a clipping coefficient

// One step of every kernel on stored inputs against the double reference fed the same (widened)
// inputs; each stored output within its type's rounding of the exact step.
template <typename P, typename Gr, typename S, typename W>
void check_one_combination() {
  const std::string name = std::string("P ") + (std::is_same_v<P, float> ? "f32" : "bf16") +
                           " Gr " +
                           (std::is_same_v<Gr, float>    ? "f32"
                            : std::is_same_v<Gr, bf16_t> ? "bf16"
                                                         : "f16") +
                           " S " + (std::is_same_v<S, float> ? "f32" : "bf16") + " W " +
                           (std::is_same_v<W, bf16_t> ? "bf16" : "f16");
  const int64_t rows = 7, cols = 45, n = rows * cols;
  auto param = stored<P>(random_vector(n, 21, 0.5, 1.5));
  const auto grad = stored<Gr>(random_vector(n, 22, -2.0, 2.0));
  const auto g64 = scaled_gradient(grad, kMultiplier);
  std::vector<W> working(static_cast<size_t>(n));
  // atol: a state read back from its storage moves the step (Adafactor's V̂ is built from the
  // stored factors: three roundings, ≤ 1.5u_S in U, times a step α·|U| ≤ 0.011·3).
  const auto check_param = [&](const std::string& what, const std::vector<P>& p,
                               const std::vector<double>& expected, double atol) {
    EXPECT_TRUE(
        all_close(name + " " + what + " param", widened(p), expected, atol, storage_rtol<P>()));
    EXPECT_TRUE(all_close(name + " " + what + " working", widened(working), expected, atol,
                          storage_rtol<W>() + storage_rtol<P>()));
  };
  {  // Lion, from a non-zero momentum
    LionHyperparameters hp;
    hp.learning_rate = 0.01f;
    hp.weight_decay = 0.1f;
    auto p = param;
    auto m = stored<S>(random_vector(n, 23));
    auto p64 = widened(p), m64 = widened(m);
    lion_update(p.data(), grad.data(), m.data(), working.data(), n, hp,
                {.grad_multiplier = kMultiplier});
    lion_update_reference<double>(p64.data(), g64.data(), m64.data(), n, hp);
    check_param("lion", p, p64, 1e-30);
    EXPECT_TRUE(all_close(name + " lion m", widened(m), m64, storage_rtol<S>(), storage_rtol<S>()));
  }
  {  // Adam-mini, step 3 from non-zero states
    AdamWHyperparameters hp;
    hp.learning_rate = 0.01f;
    hp.weight_decay = 0.1f;
    auto p = param;
    auto m = stored<S>(random_vector(n, 24, -0.1, 0.1));
    auto v = stored<S>(random_vector(rows, 25, 0.5, 1.0));
    auto p64 = widened(p), m64 = widened(m), v64 = widened(v);
    adam_mini_update(p.data(), grad.data(), m.data(), v.data(), working.data(), cols, rows, hp,
                     {.step = 3, .grad_multiplier = kMultiplier});
    adam_mini_update_reference<double>(p64.data(), g64.data(), m64.data(), v64.data(), cols, rows,
                                       hp, 3);
    check_param("adam-mini", p, p64, 1e-30);
    // |β1·m| + |(1-β1)·g| ≤ 0.09 + 0.06
    EXPECT_TRUE(all_close(name + " adam-mini m", widened(m), m64, 0.15 * storage_rtol<S>(),
                          storage_rtol<S>()));
    EXPECT_TRUE(all_close(name + " adam-mini v", widened(v), v64, 1e-30, storage_rtol<S>()));
  }
  {  // Adafactor factored, step 2 from non-zero factors
    AdafactorHyperparameters hp;
    hp.weight_decay = 0.1f;
    auto p = param;
    auto row = stored<S>(random_vector(rows, 26, 0.5, 1.0));
    auto col = stored<S>(random_vector(cols, 27, 0.5, 1.0));
    auto p64 = widened(p), row64 = widened(row), col64 = widened(col);
    adafactor_update(p.data(), grad.data(), row.data(), col.data(), working.data(), rows, cols,
                     true, hp, {.step = 2, .grad_multiplier = kMultiplier});
    adafactor_update_reference<double>(p64.data(), g64.data(), row64.data(), col64.data(), rows,
                                       cols, true, hp, 2);
    check_param("adafactor", p, p64, 0.033 * 1.5 * storage_rtol<S>());
    EXPECT_TRUE(all_close(name + " adafactor row", widened(row), row64, 1e-30, storage_rtol<S>()));
    EXPECT_TRUE(all_close(name + " adafactor col", widened(col), col64, 1e-30, storage_rtol<S>()));
  }
  if constexpr (std::is_same_v<S, float>) {  // 8-bit AdamW: the same step as adamw_update
    AdamWHyperparameters hp;
    hp.weight_decay = 0.1f;
    const int64_t block = 64, blocks = quantization_block_count(n, block);
    std::vector<uint8_t> qm(static_cast<size_t>(n)), qv(static_cast<size_t>(n));
    auto am = zeros(blocks), av = zeros(blocks);
    const auto m0 = random_vector(n, 28, -0.1, 0.1), v0 = random_vector(n, 29, 0.0, 1.0);
    quantize_blockwise(qm.data(), am.data(), m0.data(), n, block, dynamic_quantization_map(true));
    quantize_blockwise(qv.data(), av.data(), v0.data(), n, block, dynamic_quantization_map(false));
    auto m_f32 = zeros(n), v_f32 = zeros(n);
    dequantize_blockwise(m_f32.data(), qm.data(), am.data(), n, block,
                         dynamic_quantization_map(true));
    dequantize_blockwise(v_f32.data(), qv.data(), av.data(), n, block,
                         dynamic_quantization_map(false));
    auto p = param, p_adamw = param;
    std::vector<W> working_adamw(static_cast<size_t>(n));
    adamw_8bit_update(p.data(), grad.data(), qm.data(), qv.data(), am.data(), av.data(),
                      working.data(), n, block, hp, {.step = 2, .grad_multiplier = kMultiplier});
    adamw_update(p_adamw.data(), grad.data(), m_f32.data(), v_f32.data(), working_adamw.data(), n,
                 hp, {.step = 2, .grad_multiplier = kMultiplier});
    EXPECT_EQ(0, std::memcmp(p.data(), p_adamw.data(), sizeof(P) * p.size()))
        << name << ": 8-bit param differs from adamw_update on the dequantised states";
    EXPECT_EQ(0, std::memcmp(working.data(), working_adamw.data(), sizeof(W) * working.size()))
        << name;
  }
}

TEST(LowMemoryOptimizers, EveryStorageCombinationIsOneRoundingFromTheExactStep) {
  check_one_combination<float, float, float, bf16_t>();
  check_one_combination<float, bf16_t, float, f16_t>();
  check_one_combination<float, f16_t, bf16_t, bf16_t>();
  check_one_combination<float, float, bf16_t, f16_t>();
  check_one_combination<bf16_t, bf16_t, bf16_t, bf16_t>();
  check_one_combination<bf16_t, f16_t, float, f16_t>();
  check_one_combination<bf16_t, float, float, bf16_t>();
  check_one_combination<bf16_t, bf16_t, float, f16_t>();
}

// Runs all four kernels on bf16 parameters with the given rounding and thread count.
std::vector<std::vector<bf16_t>> run_all_bf16(const ParameterRounding& rounding, int threads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  const int64_t rows = 61, cols = 97, n = rows * cols;  // blocks of 97, 3 threads: uneven
  const auto start = stored<bf16_t>(random_vector(n, 31, 0.5, 1.5));
  const auto grad = stored<bf16_t>(random_vector(n, 32));
  std::vector<std::vector<bf16_t>> out;
  for (int kernel = 0; kernel < 4; kernel++) {
    auto p = start;
    std::vector<float> m = zeros(n), v = zeros(n), col = zeros(cols);
    std::vector<uint8_t> qm(static_cast<size_t>(n)), qv(static_cast<size_t>(n));
    std::vector<float> am = zeros(n), av = zeros(n);
    for (int64_t step = 1; step <= 3; step++) {
      ParameterRounding r = rounding;
      r.seed += static_cast<uint64_t>(step);
      if (kernel == 0) {
        lion_update<bf16_t, bf16_t, float, bf16_t>(p.data(), grad.data(), m.data(), nullptr, n, {},
                                                   {.grad_multiplier = kMultiplier, .rounding = r});
      } else if (kernel == 1) {
        adam_mini_update<bf16_t, bf16_t, float, bf16_t>(
            p.data(), grad.data(), m.data(), v.data(), nullptr, cols, rows, {},
            {.step = step, .grad_multiplier = kMultiplier, .rounding = r});
      } else if (kernel == 2) {
        adafactor_update<bf16_t, bf16_t, float, bf16_t>(
            p.data(), grad.data(), v.data(), col.data(), nullptr, rows, cols, true, {},
            {.step = step, .grad_multiplier = kMultiplier, .rounding = r});
      } else {
        adamw_8bit_update<bf16_t, bf16_t, bf16_t>(
            p.data(), grad.data(), qm.data(), qv.data(), am.data(), av.data(), nullptr, n, 97, {},
            {.step = step, .grad_multiplier = kMultiplier, .rounding = r});
      }
    }
    out.push_back(p);
  }
  omp_set_num_threads(saved);
  return out;
}

bool same_bits(const std::vector<bf16_t>& a, const std::vector<bf16_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16_t)) == 0;
}

TEST(LowMemoryOptimizers, ResultsDoNotDependOnTheThreadCount) {
  for (const bool stochastic : {false, true}) {
    const ParameterRounding rounding{stochastic, 1234};
    const auto one = run_all_bf16(rounding, 1);
    for (const int threads : {2, 3}) {
      const auto many = run_all_bf16(rounding, threads);
      for (size_t kernel = 0; kernel < one.size(); kernel++) {
        EXPECT_TRUE(same_bits(one[kernel], many[kernel]))
            << "kernel " << kernel << ", " << threads << " threads, stochastic " << stochastic;
      }
    }
  }
}

TEST(LowMemoryOptimizers, StochasticRoundingLandsOnOneOfTheTwoNeighboursAndDiffersFromNearest) {
  const auto nearest = run_all_bf16({false, 0}, 2);
  const auto stochastic = run_all_bf16({true, 99}, 2);
  for (size_t kernel = 0; kernel < nearest.size(); kernel++) {
    int64_t differ = 0;
    for (size_t i = 0; i < nearest[kernel].size(); i++) {
      // Three steps, each within one bf16 ulp of the nearest-rounded trajectory's.
      const float a = widen(nearest[kernel][i]), b = widen(stochastic[kernel][i]);
      EXPECT_LE(std::fabs(a - b), 3 * 0x1p-7f * std::max(std::fabs(a), std::fabs(b)))
          << "kernel " << kernel << " element " << i;
      differ += a != b;
    }
    EXPECT_GT(differ, 0) << "kernel " << kernel << ": the stochastic path was not taken";
  }
}

// ---- Adafactor, computed by hand --------------------------------------------------------

TEST(Adafactor, RankOneGradientGivesUnitUpdatesScaledByTheParameterRms) {
  // g = [1 2; 2 4] = u·uᵀ, so row means of g² = col means = [2.5, 10], mean(row) = 6.25 and
  // V̂ = r ⊗ c / 6.25 = g² exactly: U = g/|g| = 1 everywhere, RMS(U) = 1, no clipping.
  // α = max(ε2, RMS(p)=1)·min(lr, 1/√1) = 0.01; no decay: p = 1 - 0.01.
  std::vector<float> param(4, 1.0f), grad = {1.0f, 2.0f, 2.0f, 4.0f}, row(2, 0.0f), col(2, 0.0f);
  AdafactorHyperparameters hp;
  adafactor_update<float, float, float, bf16_t>(param.data(), grad.data(), row.data(), col.data(),
                                                nullptr, 2, 2, true, hp,
                                                {.step = 1, .grad_multiplier = 1.0f});
  EXPECT_EQ(row, (std::vector<float>{2.5f, 10.0f}));
  EXPECT_EQ(col, (std::vector<float>{2.5f, 10.0f}));
  for (const float p : param) EXPECT_EQ(p, 0.99f);
  // Weight decay multiplies the old parameter by 1 - lr·wd before the step.
  std::vector<float> decayed(4, 1.0f), row2(2, 0.0f), col2(2, 0.0f);
  hp.weight_decay = 5.0f;  // 1 - 0.05
  adafactor_update<float, float, float, bf16_t>(decayed.data(), grad.data(), row2.data(),
                                                col2.data(), nullptr, 2, 2, true, hp,
                                                {.step = 1, .grad_multiplier = 1.0f});
  for (const float p : decayed) EXPECT_NEAR(p, 0.95 - 0.01, 2 * kFloatEpsilon);
}

TEST(Adafactor, ClipsTheUpdateRmsAtTheThreshold) {
  // Unfactored, one step: v = g², U = sign(g), RMS(U) = 1; with d = 0.25 the step is divided by
  // RMS(U)/d = 4. p = 3 (RMS 3), lr = 0.1: α = 0.3, step 0.3/4 = 0.075 against sign(g).
  std::vector<float> param(5, 3.0f), grad = {1.0f, -2.0f, 0.5f, -0.25f, 8.0f}, var(5, 0.0f);
  AdafactorHyperparameters hp;
  hp.learning_rate = 0.1f;
  hp.clip_threshold = 0.25f;
  adafactor_update<float, float, float, bf16_t>(param.data(), grad.data(), var.data(), nullptr,
                                                nullptr, 1, 5, false, hp,
                                                {.step = 1, .grad_multiplier = 1.0f});
  for (int i = 0; i < 5; i++) {
    EXPECT_NEAR(param[i], 3.0 - 0.075 * (grad[i] > 0 ? 1 : -1), 4 * kFloatEpsilon * 3) << i;
  }
}

TEST(Adafactor, RelativeStepIsParameterRmsTimesMinOfLearningRateAndInverseSqrtStep) {
  // A constant gradient keeps v = g² (the lerp of g² towards g²), so U = sign(g), RMS(U) = 1 and
  // the step's RMS is α_t = RMS(p_{t-1})·min(lr, 1/√t): lr = 0.2 gives 0.2, 0.2, then 0.1 at
  // t = 100.
  const int64_t n = 101;
  auto param = random_vector(n, 41, 1.0, 2.0);
  const auto grad = random_vector(n, 42);
  auto var = zeros(n);
  AdafactorHyperparameters hp;
  hp.learning_rate = 0.2f;
  for (int64_t step = 1; step <= 100; step++) {
    const auto before = param;
    adafactor_update<float, float, float, bf16_t>(param.data(), grad.data(), var.data(), nullptr,
                                                  nullptr, 1, n, false, hp,
                                                  {.step = step, .grad_multiplier = 1.0f});
    if (step != 1 && step != 2 && step != 100) continue;
    double before_squares = 0.0, step_squares = 0.0;
    for (int64_t i = 0; i < n; i++) {
      before_squares += static_cast<double>(before[i]) * before[i];
      const double delta = static_cast<double>(before[i]) - param[i];
      step_squares += delta * delta;
    }
    const double rho = std::min(0.2, 1.0 / std::sqrt(static_cast<double>(step)));
    const double expected = std::sqrt(before_squares / n) * rho;
    // Each delta is the difference of two f32 values near 1.5: ≤ 2u·2 absolute, relative to
    // a step of ≥ 0.1.
    EXPECT_NEAR(std::sqrt(step_squares / n), expected, 4 * kFloatEpsilon * 2 / 0.1 * expected)
        << "t = " << step;
  }
}

TEST(Adafactor, FactoredWithOneRowMatchesUnfactored) {
  // rows = 1: V̂ = row·col / row = col, the unfactored variance, up to the rounding of the
  // product and the quotient (2u), which moves U by ≤ u.
  const int64_t n = 515;
  auto p1 = random_vector(n, 43), p2 = p1, var = zeros(n), row = zeros(1), col = zeros(n);
  AdafactorHyperparameters hp;
  for (int64_t step = 1; step <= 10; step++) {
    const auto grad = random_vector(n, 600 + static_cast<uint64_t>(step));
    adafactor_update<float, float, float, bf16_t>(p1.data(), grad.data(), var.data(), nullptr,
                                                  nullptr, 1, n, false, hp,
                                                  {.step = step, .grad_multiplier = 1.0f});
    adafactor_update<float, float, float, bf16_t>(p2.data(), grad.data(), row.data(), col.data(),
                                                  nullptr, 1, n, true, hp,
                                                  {.step = step, .grad_multiplier = 1.0f});
  }
  // The same lerp of the same g², compiled once vectorized and once not: FMA contraction may
  // differ, ≤ 2u a step over 10 steps.
  EXPECT_TRUE(all_close("col_var vs variance", col, var, 0.0, 20 * kFloatEpsilon));
  // 10 steps of size ≤ α ≈ 0.01·RMS(p): a 2u relative error of each step, plus f32 noise.
  EXPECT_TRUE(all_close("factored rows=1 vs unfactored", p1, p2, 10 * 0.01 * 4 * kFloatEpsilon,
                        4 * kFloatEpsilon));
}

// ---- The dynamic map and the nearest code -----------------------------------------------

// The map built another way: each linspace point rounded once from long double (an FMA),
// the decade scales as f32 literals, the negative half mirrored, the result sorted as a set.
std::vector<float> independent_dynamic_map(bool is_signed) {
  const float scales[7] = {1e-6f, 1e-5f, 1e-4f, 1e-3f, 1e-2f, 1e-1f, 1.0f};
  std::vector<float> codes = {0.0f, 1.0f};
  for (int e = 0; e < 7; e++) {
    const int items = (is_signed ? 1 << e : 1 << (e + 1)) + 1;
    const float step = 0.9f / static_cast<float>(items - 1);  // 1.0f - 0.1f is 0.9f (asserted)
    std::vector<float> b;
    for (int i = 0; i < items; i++) {
      const long double exact =
          i < items / 2 ? static_cast<long double>(0.1f) + static_cast<long double>(step) * i
                        : 1.0L - static_cast<long double>(step) * (items - 1 - i);
      b.push_back(static_cast<float>(exact));
    }
    for (int j = 0; j + 1 < items; j++) {
      const float mean = (b[j] + b[j + 1]) * 0.5f;
      codes.push_back(scales[e] * mean);
      if (is_signed) codes.push_back(-(scales[e] * mean));
    }
  }
  std::sort(codes.begin(), codes.end());
  return codes;
}

TEST(DynamicMap, EqualsAnIndependentConstructionAndBitsandbytesOutput) {
  ASSERT_EQ(1.0f - 0.1f, 0.9f);
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    const auto expected = independent_dynamic_map(is_signed);
    ASSERT_EQ(expected.size(), 256u);
    EXPECT_TRUE(bitwise_equal("map", std::vector<float>(code.begin(), code.end()), expected))
        << "signed " << is_signed;
  }
  // Read from bitsandbytes 0.50.2: create_dynamic_map(signed).tolist(), printed with float.hex.
  const auto& s = dynamic_quantization_map(true);
  EXPECT_EQ(s[0], -0x1.fc6666p-1f);
  EXPECT_EQ(s[1], -0x1.f53334p-1f);
  EXPECT_EQ(s[100], -0x1.e978d4p-8f);
  EXPECT_EQ(s[126], -0x1.27476ep-21f);
  EXPECT_EQ(s[127], 0.0f);
  EXPECT_EQ(s[128], 0x1.27476ep-21f);
  EXPECT_EQ(s[200], 0x1.de6666p-3f);
  EXPECT_EQ(s[254], 0x1.fc6666p-1f);
  EXPECT_EQ(s[255], 1.0f);
  const auto& u = dynamic_quantization_map(false);
  EXPECT_EQ(u[0], 0.0f);
  EXPECT_EQ(u[1], 0x1.5cf754p-22f);
  EXPECT_EQ(u[100], 0x1.00f5c4p-4f);
  EXPECT_EQ(u[126], 0x1.96b852p-4f);
  EXPECT_EQ(u[127], 0x1.a8p-4f);
  EXPECT_EQ(u[128], 0x1.c4ccccp-4f);
  EXPECT_EQ(u[200], 0x1.3bccccp-1f);
  EXPECT_EQ(u[254], 0x1.fe3334p-1f);
  EXPECT_EQ(u[255], 1.0f);
  // The signed map has no -1: its most negative code is -0.99297 (bitsandbytes' too).
  EXPECT_GT(s[0], -1.0f);
}

TEST(NearestCode, TiesGoToTheLowerIndexAndOutsideValuesClampToTheEnds) {
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    int ties = 0;
    for (int k = 0; k + 1 < kQuantizationCodes; k++) {
      const float a = code[k], b = code[k + 1];
      EXPECT_EQ(nearest_code(code, a), k);
      const float mid = a + (b - a) / 2;
      if (std::fabs(mid - a) == std::fabs(b - mid)) {  // a tie in f32
        ties++;
        EXPECT_EQ(nearest_code(code, mid), k) << "tie between " << k << " and " << k + 1;
      }
      EXPECT_EQ(nearest_code(code, std::nextafter(mid, 2.0f)), k + 1) << k;
      EXPECT_EQ(nearest_code(code, std::nextafter(mid, -2.0f)), k) << k;
    }
    EXPECT_GT(ties, 100) << "too few exact midpoints to test the tie rule";
    EXPECT_EQ(nearest_code(code, 1.5f), 255);
    EXPECT_EQ(nearest_code(code, 1e30f), 255);
    EXPECT_EQ(nearest_code(code, -1e30f), 0);
    EXPECT_EQ(nearest_code(code, -1.0f), 0);
    EXPECT_EQ(code[nearest_code(code, 1e-30f)], 0.0f);
    EXPECT_EQ(code[nearest_code(code, -0.0f)], 0.0f);
  }
}

TEST(QuantizeBlockwise, TheMapsTableFindsTheSameCodesAsTheBinarySearch) {
  // A copy of the map has another address, so quantize_blockwise falls back to the binary
  // search; the dynamic map itself goes through the bucket table.
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    const std::array<float, kQuantizationCodes> copy = code;
    std::vector<float> x = random_vector(20000, 51, -1.0, 1.0);
    for (int k = 0; k + 1 < kQuantizationCodes; k++) {  // every code, midpoint and neighbour
      const float mid = code[k] + (code[k + 1] - code[k]) / 2;
      for (const float value : {code[k], mid, std::nextafter(mid, 2.0f), std::nextafter(mid, -2.0f),
                                std::nextafter(code[k], 2.0f)})
        x.push_back(value);
    }
    for (int e = -40; e <= -1; e++) {  // every binade near zero, both signs
      x.push_back(std::ldexp(1.0f, e));
      x.push_back(-std::ldexp(1.3f, e));
    }
    x.push_back(1.0f);  // absmax 1 for the whole block: x / absmax = x
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q_table(x.size()), q_search(x.size()), q_ref(x.size());
    float absmax_table, absmax_search, absmax_ref;
    quantize_blockwise(q_table.data(), &absmax_table, x.data(), n, n, code);
    quantize_blockwise(q_search.data(), &absmax_search, x.data(), n, n, copy);
    quantize_blockwise_reference(q_ref.data(), &absmax_ref, x.data(), n, n, code);
    ASSERT_EQ(absmax_table, 1.0f);
    EXPECT_EQ(q_table, q_search) << "signed " << is_signed;
    EXPECT_EQ(q_table, q_ref) << "signed " << is_signed;
  }
}

TEST(QuantizeBlockwise, RoundTripIsWithinHalfTheLocalCodeGapTimesAbsmax) {
  for (const bool is_signed : {true, false}) {
    const auto& code = dynamic_quantization_map(is_signed);
    for (const int64_t block : {1, 64, 333}) {
      const int64_t n = 2000;  // a partial last block for 64 and 333
      auto x = random_vector(n, 61, is_signed ? -3.0 : 0.0, 3.0);
      for (int64_t i = 0; i < n; i += 7) x[i] *= 1e-4f;  // small values inside big blocks
      std::vector<uint8_t> q(static_cast<size_t>(n));
      auto absmax = zeros(quantization_block_count(n, block)), back = zeros(n);
      quantize_blockwise(q.data(), absmax.data(), x.data(), n, block, code);
      dequantize_blockwise(back.data(), q.data(), absmax.data(), n, block, code);
      EXPECT_TRUE(test_util::within_tolerance(
          "round trip", back.data(), x.data(), n,
          [&](int64_t i) {
            const double scale = absmax[static_cast<size_t>(i / block)];
            const double y = static_cast<double>(x[i]) / scale;
            // The interval [code[k], code[k+1]] holding y (or the end gap beyond the codes).
            const auto upper = std::upper_bound(code.begin(), code.end(), static_cast<float>(y));
            double half_gap;
            if (upper == code.begin()) {
              half_gap = code[0] - y;
            } else if (upper == code.end()) {
              half_gap = y - code[255];
            } else {
              half_gap = (*upper - *(upper - 1)) / 2.0;
            }
            // + the rounding of x / absmax and of code·absmax.
            return (half_gap + 2 * kFloatEpsilon * std::fabs(y)) * scale + 1e-45;
          },
          "half the local code gap × absmax"))
          << "signed " << is_signed << " block " << block;
    }
  }
}

TEST(QuantizeBlockwise, ZeroNanAndEmptyBlocks) {
  const auto& code = dynamic_quantization_map(true);
  const uint8_t zero = nearest_code(code, 0.0f);
  std::vector<float> x = {0.0f, -0.0f, 0.0f, 0.5f, NAN, 0.25f, INFINITY, 1.0f, -2.0f, 4.0f};
  std::vector<uint8_t> q(x.size(), 7);
  std::vector<float> absmax(4, -1.0f), back(x.size());
  quantize_blockwise(q.data(), absmax.data(), x.data(), 10, 3, code);
  EXPECT_EQ(absmax[0], 0.0f);
  EXPECT_TRUE(std::isnan(absmax[1])) << "NaN block";
  EXPECT_TRUE(std::isnan(absmax[2])) << "inf block";
  EXPECT_EQ(absmax[3], 4.0f) << "partial last block of one element";
  for (int i = 0; i < 9; i++) EXPECT_EQ(q[i], zero) << i;
  EXPECT_EQ(q[9], 255);
  dequantize_blockwise(back.data(), q.data(), absmax.data(), 10, 3, code);
  for (int i = 0; i < 3; i++) EXPECT_EQ(back[i], 0.0f);
  for (int i = 3; i < 9; i++) EXPECT_TRUE(std::isnan(back[i])) << i;
  EXPECT_EQ(back[9], 4.0f);
  // n = 0 writes nothing.
  quantize_blockwise(q.data(), absmax.data(), x.data(), 0, 3, code);
  EXPECT_EQ(absmax[0], 0.0f);
  EXPECT_EQ(absmax[3], 4.0f);
}

TEST(QuantizeBlockwise, BlockOfOneKeepsTheMagnitudeAndMapsMinusOneToTheLowestCode) {
  const auto& code = dynamic_quantization_map(true);
  std::vector<float> x = {3.0f, -3.0f, 1e-20f}, absmax(3), back(3);
  std::vector<uint8_t> q(3);
  quantize_blockwise(q.data(), absmax.data(), x.data(), 3, 1, code);
  EXPECT_EQ(absmax, (std::vector<float>{3.0f, 3.0f, 1e-20f}));
  EXPECT_EQ(q[0], 255);
  EXPECT_EQ(q[1], 0);  // -1 is not a code: the nearest is -0.99297
  EXPECT_EQ(q[2], 255);
  dequantize_blockwise(back.data(), q.data(), absmax.data(), 3, 1, code);
  EXPECT_EQ(back[1], code[0] * 3.0f);
}

TEST(QuantizeBlockwise, BlockCountIsCeilWithoutOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(quantization_block_count(0, 5), 0);
  EXPECT_EQ(quantization_block_count(kMax, 1), kMax);
  EXPECT_EQ(quantization_block_count(kMax, 2), (kMax - 1) / 2 + 1);
  EXPECT_EQ(quantization_block_count(kMax, kMax), 1);
  EXPECT_EQ(quantization_block_count(kMax - 1, kMax), 1);
  EXPECT_EQ(quantization_block_count(int64_t{1} << 40, 256), int64_t{1} << 32);
  EXPECT_EQ(quantization_block_count((int64_t{1} << 40) + 1, 256), (int64_t{1} << 32) + 1);
}

TEST(AdamW8bit, EachStepIsDequantiseThenAdamWThenQuantise) {
  // The 8-bit step, composed from the other kernels: dequantize_blockwise, adamw_update on
  // the f32 moments with the same gradient, quantize_blockwise of the new moments. Per step
  // the codes, absmax and parameters must be identical, over 50 steps.
  const int64_t n = 3001, block = 256, blocks = quantization_block_count(n, block);
  const auto& signed_map = dynamic_quantization_map(true);
  const auto& unsigned_map = dynamic_quantization_map(false);
  AdamWHyperparameters hp;
  hp.learning_rate = 1e-2f;
  hp.weight_decay = 0.01f;
  auto param = random_vector(n, 71), param_composed = param;
  std::vector<uint8_t> qm(static_cast<size_t>(n)), qv = qm, qm2 = qm, qv2 = qm;
  auto am = zeros(blocks), av = am, am2 = am, av2 = am, m = zeros(n), v = zeros(n);
  for (int64_t step = 1; step <= 50; step++) {
    auto grad = random_vector(n, 700 + static_cast<uint64_t>(step), -1.0, 1.0);
    for (int64_t i = 0; i < n; i += 11) grad[i] *= 1e-3f;  // a spread of magnitudes
    adamw_8bit_update<float, float, bf16_t>(param.data(), grad.data(), qm.data(), qv.data(),
                                            am.data(), av.data(), nullptr, n, block, hp,
                                            {.step = step, .grad_multiplier = 1.0f});
    dequantize_blockwise(m.data(), qm2.data(), am2.data(), n, block, signed_map);
    dequantize_blockwise(v.data(), qv2.data(), av2.data(), n, block, unsigned_map);
    adamw_update(param_composed.data(), grad.data(), m.data(), v.data(), n, hp, step);
    quantize_blockwise(qm2.data(), am2.data(), m.data(), n, block, signed_map);
    quantize_blockwise(qv2.data(), av2.data(), v.data(), n, block, unsigned_map);
    ASSERT_TRUE(bitwise_equal("param", param, param_composed)) << "step " << step;
    ASSERT_EQ(qm, qm2) << "step " << step;
    ASSERT_EQ(qv, qv2) << "step " << step;
    ASSERT_TRUE(bitwise_equal("absmax m", am, am2)) << "step " << step;
    ASSERT_TRUE(bitwise_equal("absmax v", av, av2)) << "step " << step;
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
      [&] {
        lion_update<float, float, float, bf16_t>(p, p, p, nullptr, -3, {},
                                                 {.grad_multiplier = 1.0f});
      },
      "-3"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adam_mini_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 0, 1, {},
                                                      {.step = 1, .grad_multiplier = 1.0f});
      },
      "block_size = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adam_mini_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 2, 1, {},
                                                      {.step = 0, .grad_multiplier = 1.0f});
      },
      "step = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adafactor_update<float, float, float, bf16_t>(p, p, p, p, nullptr, 2, 0, true, {},
                                                      {.step = 1, .grad_multiplier = 1.0f});
      },
      "cols = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adafactor_update<float, float, float, bf16_t>(p, p, p, nullptr, nullptr, 2, 2, false, {},
                                                      {.step = 1, .grad_multiplier = 1.0f});
      },
      "rows = 2"));
  const auto& code = dynamic_quantization_map(true);
  EXPECT_TRUE(throws_naming([&] { quantize_blockwise(q.data(), p, p, -1, 4, code); }, "-1"));
  EXPECT_TRUE(throws_naming([&] { quantize_blockwise(q.data(), p, p, 4, 0, code); }, "block = 0"));
  EXPECT_TRUE(throws_naming(
      [&] {
        adamw_8bit_update<float, float, bf16_t>(p, p, q.data(), q.data(), p, p, nullptr, 4, 2, {},
                                                {.step = -7, .grad_multiplier = 1.0f});
      },
      "step = -7"));
}

}  // namespace
}  // namespace vramlab::kernels::cpu
