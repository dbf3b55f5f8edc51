// 8-bit AdamW: the CUDA kernels under the SIMT emulator (v1 and v2 under the three thread
// schedules, and the emulated backend on typed views) against the CPU kernel. The op harness
// compares f32 buffers with a double reference; the u8 codes have neither, so, as for int8
// quantisation (test_quantize_emulated.cpp), the CPU kernel (tested against its f32 reference in
// tests/kernels_cpu) is the reference here.
//
// What must hold, and why:
// - v1 and v2 run the same per-element arithmetic and a maximum does not depend on the order:
//   every buffer bit for bit equal between them.
// - Against the CPU kernel, which is compiled with FMA contraction (x86-64-v3) while the
//   emulated kernels are not: β·s + (1 − β)·g rounds once or twice, so m and v may differ by an
//   ulp of their terms. The parameter and absmax are then within the elementwise tolerance, and a
//   code may differ only where the new value lies within that error of the midpoint between two
//   codes: |x − midpoint| <= 8·2^-24·(|β·s| + |(1 − β)·t| + |x·absmax|)/absmax, x and the terms
//   recomputed in double (8 ulps: one per rounding of either side, and the absmax's). Any other
//   code difference is a bug.
// Run: build/tests/bin/test_ops --gtest_filter='Adamw8bit*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/memory/tensor_view.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/platform/errors.h"
#include "kernels/cpu/optimizer_8bit.h"
#include "kernels/cuda/ops.h"
#include "kernels/simt/launch_options.h"
#include "tests/ops/op_harness.h"

namespace vramlab::ops_test {
namespace {

namespace cpu = kernels::cpu;
namespace cuda = kernels::cuda;
using cuda::KernelVersion;

constexpr double kRoundingsAllowed = 8.0;
constexpr double kUnitRoundoff = 0x1p-24;

// The 8-bit state and parameter of one tensor.
struct State {
  std::vector<float> param;     // (n)
  std::vector<uint8_t> qm, qv;  // (n)
  std::vector<float> absmax_m;  // (blocks)
  std::vector<float> absmax_v;  // (blocks)
};

// A state several steps into training (random codes, absmax of varied magnitude per block) and a
// gradient; with a NaN gradient in block 2 and an all-zero block 3 when there are enough blocks.
struct OptimizerCase {
  int64_t n, block, step;
  State state;
  std::vector<float> grad;  // (n)
};

OptimizerCase make_case(int64_t n, int64_t block, int64_t step, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> code(0, 255);
  std::uniform_real_distribution<double> exponent(-4.0, 0.0);
  const int64_t blocks = cpu::quantization_block_count(n, block);
  OptimizerCase c{n, block, step, {}, std::vector<float>(static_cast<size_t>(n))};
  c.state.param.resize(static_cast<size_t>(n));
  c.state.qm.resize(static_cast<size_t>(n));
  c.state.qv.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    c.state.param[static_cast<size_t>(i)] = static_cast<float>(normal(generator));
    c.grad[static_cast<size_t>(i)] = static_cast<float>(normal(generator));
    c.state.qm[static_cast<size_t>(i)] = static_cast<uint8_t>(code(generator));
    c.state.qv[static_cast<size_t>(i)] = static_cast<uint8_t>(code(generator));
  }
  for (int64_t b = 0; b < blocks; b++) {
    c.state.absmax_m.push_back(static_cast<float>(std::pow(10.0, exponent(generator))));
    c.state.absmax_v.push_back(static_cast<float>(std::pow(10.0, 2.0 * exponent(generator))));
  }
  if (blocks >= 4) {
    c.grad[static_cast<size_t>(2 * block + 1)] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 3 * block; i < std::min(n, 4 * block); i++) {
      c.grad[static_cast<size_t>(i)] = 0.0f;
      c.state.qm[static_cast<size_t>(i)] =
          cpu::nearest_code(cpu::dynamic_quantization_map(true), 0.0f);
    }
    c.state.absmax_v[3] = 0.0f;
  }
  return c;
}

cpu::AdamWHyperparameters hyperparameters() {
  cpu::AdamWHyperparameters hp;
  hp.learning_rate = 0.01f;
  hp.weight_decay = 0.1f;
  return hp;
}

constexpr float kMultiplier = 1.0f / 8.0f;

State run_cpu(const OptimizerCase& c) {
  State s = c.state;
  std::vector<float> grad = c.grad;
  for (float& g : grad) g *= 8.0f;  // undone by kMultiplier (a power of two: exact)
  cpu::adamw_8bit_update<float, float, bf16_t>(
      s.param.data(), grad.data(), s.qm.data(), s.qv.data(), s.absmax_m.data(), s.absmax_v.data(),
      nullptr, c.n, c.block, hyperparameters(), {.step = c.step, .grad_multiplier = kMultiplier});
  return s;
}

State run_emulated(const OptimizerCase& c, KernelVersion version) {
  State s = c.state;
  std::vector<float> grad = c.grad;
  for (float& g : grad) g *= 8.0f;
  cuda::adamw_8bit_update<float, float>(s.param.data(), grad.data(), s.qm.data(), s.qv.data(),
                                        s.absmax_m.data(), s.absmax_v.data(), nullptr, DType::bf16,
                                        c.n, c.block, hyperparameters(),
                                        {.step = c.step, .grad_multiplier = kMultiplier}, version);
  return s;
}

State run_backend(const OptimizerCase& c) {
  State s = c.state;
  std::vector<float> grad = c.grad;
  for (float& g : grad) g *= 8.0f;
  const auto backend = nn::make_emulated_cuda_kernel_backend();
  using memory::TensorView;
  const int64_t blocks = static_cast<int64_t>(s.absmax_m.size());
  backend->adamw_8bit_update(
      TensorView(s.param.data(), DType::f32, {c.n}), TensorView(grad.data(), DType::f32, {c.n}),
      TensorView(s.qm.data(), DType::u8, {c.n}), TensorView(s.qv.data(), DType::u8, {c.n}),
      TensorView(s.absmax_m.data(), DType::f32, {blocks}),
      TensorView(s.absmax_v.data(), DType::f32, {blocks}), TensorView{}, c.block, hyperparameters(),
      {.step = c.step, .grad_multiplier = kMultiplier});
  return s;
}

::testing::AssertionResult same_state(const std::string& what, const State& a, const State& b) {
  const auto same = [](const auto& x, const auto& y) {
    return x.size() == y.size() &&
           (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
  };
  if (same(a.param, b.param) && same(a.qm, b.qm) && same(a.qv, b.qv) &&
      same(a.absmax_m, b.absmax_m) && same(a.absmax_v, b.absmax_v))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": not bit for bit equal (tolerance: bitwise)";
}

// Normalized max error of f32 values (NaN must match NaN), as the op harness measures it.
::testing::AssertionResult close(const std::string& what, const std::vector<float>& actual,
                                 const std::vector<float>& expected) {
  double max_expected = 0.0, max_diff = 0.0;
  int64_t worst = -1;
  for (size_t i = 0; i < actual.size(); i++) {
    if (std::isnan(expected[i]) || std::isnan(actual[i])) {
      if (std::isnan(expected[i]) && std::isnan(actual[i])) continue;
      return ::testing::AssertionFailure()
             << what << "[" << i << "] = " << actual[i] << ", the CPU kernel has " << expected[i];
    }
    max_expected = std::max(max_expected, std::fabs(double{expected[i]}));
    const double diff = std::fabs(double{actual[i]} - double{expected[i]});
    if (diff > max_diff) max_diff = diff, worst = static_cast<int64_t>(i);
  }
  const double error = max_diff / std::max(max_expected, 1e-30);
  if (error <= kElementwiseTolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": normalized max error " << error << " = "
         << 100.0 * error / kElementwiseTolerance << "% of the tolerance " << kElementwiseTolerance
         << "; max |diff| " << max_diff << " at index " << worst;
}

// Codes equal, or adjacent at a near-tie (see the file comment). moment 0: m, 1: v.
::testing::AssertionResult same_codes(const std::string& what, int moment, const OptimizerCase& c,
                                      const State& actual, const State& expected) {
  const bool is_m = moment == 0;
  const auto& map = cpu::dynamic_quantization_map(is_m);
  const cpu::AdamWHyperparameters hp = hyperparameters();
  const double beta = is_m ? hp.beta1 : hp.beta2;
  const std::vector<uint8_t>& got = is_m ? actual.qm : actual.qv;
  const std::vector<uint8_t>& want = is_m ? expected.qm : expected.qv;
  int64_t near_ties = 0;
  for (int64_t i = 0; i < c.n; i++) {
    const auto at = static_cast<size_t>(i);
    if (got[at] == want[at]) continue;
    const auto b = static_cast<size_t>(i / c.block);
    const double absmax = is_m ? expected.absmax_m[b] : expected.absmax_v[b];
    const double old_absmax = is_m ? c.state.absmax_m[b] : c.state.absmax_v[b];
    const double old = double{map[is_m ? c.state.qm[at] : c.state.qv[at]]} * old_absmax;
    const double g = c.grad[at];
    const double term = is_m ? g : g * g;
    const double value = beta * old + (1.0 - beta) * term;
    const double x = value / absmax;
    const double low = std::min(map[got[at]], map[want[at]]);
    const double high = std::max(map[got[at]], map[want[at]]);
    const double midpoint = 0.5 * (low + high);
    const double bound =
        kRoundingsAllowed * kUnitRoundoff *
        (std::fabs(beta * old) + std::fabs((1.0 - beta) * term) + std::fabs(value)) / absmax;
    const bool adjacent = std::abs(int{got[at]} - int{want[at]}) == 1;
    if (!adjacent || std::fabs(x - midpoint) > bound) {
      return ::testing::AssertionFailure()
             << what << (is_m ? " qm[" : " qv[") << i << "] = " << int{got[at]} << ", the CPU has "
             << int{want[at]} << ": x = " << x << " is " << std::fabs(x - midpoint)
             << " from the midpoint " << midpoint << ", " << 100.0 * std::fabs(x - midpoint) / bound
             << "% of the near-tie bound " << bound;
    }
    near_ties++;
  }
  if (near_ties > 0) std::cout << what << ": " << near_ties << " codes differ at near-ties\n";
  return ::testing::AssertionSuccess();
}

void expect_like_cpu(const std::string& what, const OptimizerCase& c, const State& actual,
                     const State& expected) {
  EXPECT_TRUE(close(what + " param", actual.param, expected.param));
  EXPECT_TRUE(close(what + " absmax_m", actual.absmax_m, expected.absmax_m));
  EXPECT_TRUE(close(what + " absmax_v", actual.absmax_v, expected.absmax_v));
  EXPECT_TRUE(same_codes(what, 0, c, actual, expected));
  EXPECT_TRUE(same_codes(what, 1, c, actual, expected));
}

std::string optimizer_case_name(const OptimizerCase& c) {
  std::ostringstream name;
  name << "n" << c.n << " block" << c.block << " step" << c.step;
  return name.str();
}

std::vector<OptimizerCase> cases() {
  std::vector<OptimizerCase> all;
  uint64_t seed = 31;
  // n = 1; a partial last block; block 1; bitsandbytes' 256 and 2048 (more than the 256 threads
  // of v2's thread block); blocks with a NaN and an all-zero block.
  for (auto [n, block, step] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 256, 1},
                                                          {33, 7, 2},
                                                          {1000 + 7, 256, 3},
                                                          {40, 1, 1},
                                                          {4096 + 5, 2048, 10},
                                                          {2300, 256, 1000}}) {
    all.push_back(make_case(n, block, step, seed++));
  }
  return all;
}

TEST(Adamw8bitEmulated, V1AndV2AreBitwiseEqualUnderEverySchedule) {
  for (const OptimizerCase& c : cases()) {
    const State reference = run_emulated(c, KernelVersion::v1);
    for (simt::Schedule schedule :
         {simt::Schedule::kInOrder, simt::Schedule::kReverse, simt::Schedule::kRandom}) {
      simt::LaunchOptions options = simt::launch_options();
      options.schedule = schedule;
      options.seed = 20261123;
      const simt::ScopedLaunchOptions scoped(options);
      for (KernelVersion version : {KernelVersion::v1, KernelVersion::v2}) {
        EXPECT_TRUE(same_state(optimizer_case_name(c) + " " +
                                   kernels::cuda::kernel_version_name(version) + " " +
                                   simt::schedule_name(schedule),
                               run_emulated(c, version), reference));
      }
    }
  }
}

TEST(Adamw8bitEmulated, MatchesTheCpuKernelUpToNearTies) {
  for (const OptimizerCase& c : cases()) {
    const State expected = run_cpu(c);
    for (KernelVersion version : {KernelVersion::v1, KernelVersion::v2}) {
      expect_like_cpu(optimizer_case_name(c) + " " + kernels::cuda::kernel_version_name(version), c,
                      run_emulated(c, version), expected);
    }
    expect_like_cpu(optimizer_case_name(c) + " emulated backend", c, run_backend(c), expected);
  }
}

// A NaN gradient makes its block's absmax NaN and every code of the block the code of 0.0; an
// all-zero block keeps absmax 0 (v) and the code of 0.0 (m and v).
TEST(Adamw8bitEmulated, NanAndAllZeroBlocks) {
  const OptimizerCase c = make_case(1027, 256, 4, 77);
  const uint8_t zero_m = cpu::nearest_code(cpu::dynamic_quantization_map(true), 0.0f);
  const uint8_t zero_v = cpu::nearest_code(cpu::dynamic_quantization_map(false), 0.0f);
  for (KernelVersion version : {KernelVersion::v1, KernelVersion::v2}) {
    const State s = run_emulated(c, version);
    EXPECT_TRUE(std::isnan(s.absmax_m[2]) && std::isnan(s.absmax_v[2]));
    for (int64_t i = 512; i < 768; i++) {
      ASSERT_EQ(s.qm[static_cast<size_t>(i)], zero_m) << "NaN block, qm[" << i << "]";
      ASSERT_EQ(s.qv[static_cast<size_t>(i)], zero_v) << "NaN block, qv[" << i << "]";
    }
    EXPECT_EQ(s.absmax_m[3], 0.0f);
    EXPECT_EQ(s.absmax_v[3], 0.0f);
    for (int64_t i = 768; i < 1024; i++) {
      ASSERT_EQ(s.qm[static_cast<size_t>(i)], zero_m) << "zero block, qm[" << i << "]";
      ASSERT_EQ(s.qv[static_cast<size_t>(i)], zero_v) << "zero block, qv[" << i << "]";
    }
  }
}

TEST(Adamw8bitEmulated, BadSizesNameTheValue) {
  State s = make_case(8, 4, 1, 5).state;
  std::vector<float> grad(8, 1.0f);
  const auto call = [&](int64_t n, int64_t block, int64_t step) {
    cuda::adamw_8bit_update<float, float>(
        s.param.data(), grad.data(), s.qm.data(), s.qv.data(), s.absmax_m.data(), s.absmax_v.data(),
        nullptr, DType::bf16, n, block, hyperparameters(), {.step = step, .grad_multiplier = 1.0f});
  };
  const auto message = [&](int64_t n, int64_t block, int64_t step) {
    try {
      call(n, block, step);
    } catch (const InternalError& error) {  // kernel_checks.h: a bad size is a bug upstream
      return std::string(error.what());
    }
    return std::string("no InternalError");
  };
  EXPECT_NE(message(-1, 4, 1).find("-1"), std::string::npos) << message(-1, 4, 1);
  EXPECT_NE(message(8, 0, 1).find("block = 0"), std::string::npos) << message(8, 0, 1);
  EXPECT_NE(message(8, 4, 0).find("step = 0"), std::string::npos) << message(8, 4, 0);
}

}  // namespace
}  // namespace vramlab::ops_test
