// Pure bf16's stochastic rounding of the parameters an optimizer step writes: an update below
// half a bf16 ulp is lost with nearest rounding and survives on average with stochastic rounding,
// every stored value is one of the two bf16 neighbours of the f32 result, the CUDA kernels under
// the emulator give the CPU kernels' bits, and an f32 parameter refuses it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/dtype/convert.h"
#include "common/memory/device.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"

namespace vramlab::nn {
namespace {

constexpr int64_t kN = 1 << 16;

struct Step {
  std::vector<uint16_t> param;  // (kN) bf16 bits after one SGD step
};

// One SGD step (lr·g = `update`) of kN bf16 parameters all equal to `start`.
Step sgd_step(KernelKind kernels, float start, float update, bool stochastic, uint64_t seed) {
  Runtime runtime(memory::parse_device("cpu"), kernels);
  const Tensor param = runtime.allocate({kN}, DType::bf16, memory::MemoryCategory::parameter, "p");
  const Tensor grad = runtime.allocate({kN}, DType::f32, memory::MemoryCategory::gradient, "g");
  std::vector<uint16_t> bits(kN, f32_to_bf16_bits(start));  // (kN)
  std::vector<float> g(kN, update);                          // (kN): lr = 1
  runtime.copy_to_device(param, bits.data());
  runtime.copy_to_device(grad, g.data());
  runtime.kernels().sgd_update(
      param.view(), grad.view(), {}, {},
      {.learning_rate = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f, .nesterov = false},
      {.grad_multiplier = 1.0f, .rounding = ParameterRounding{stochastic, seed}});
  runtime.copy_to_host(bits.data(), param);
  return {bits};
}

TEST(OptimizerStochasticRounding, AnUpdateBelowHalfAnUlpSurvivesOnAverageOnly) {
  // bf16 keeps 7 mantissa bits: ulp(1.5) = 2^-7, and an update of 2^-10 is an eighth of it, so
  // nearest rounding gives 1.5 back every time (both neighbours lie in the same binade).
  const float start = 1.5f, update = 0x1p-10f;
  const Step nearest = sgd_step(KernelKind::cpu, start, update, false, 1);
  for (const uint16_t b : nearest.param) ASSERT_EQ(bf16_bits_to_f32(b), start);
  const Step stochastic = sgd_step(KernelKind::cpu, start, update, true, 1);
  const float lower = 1.5f - 0x1p-7f, exact = start - update;
  double mean = 0;
  for (const uint16_t b : stochastic.param) {
    const float v = bf16_bits_to_f32(b);
    ASSERT_TRUE(v == start || v == lower) << v << " is not a neighbour of " << exact;
    mean += v;
  }
  mean /= kN;
  // Down with probability 1/8: the mean is exact to within 5 binomial standard deviations.
  const double sigma = 0x1p-7 * std::sqrt(0.125 * 0.875 / kN);
  EXPECT_NEAR(mean, exact, 5 * sigma) << "mean " << mean << " vs " << exact;
}

TEST(OptimizerStochasticRounding, TheSeedChoosesTheBitsAndTheCudaKernelsAgreeBitwise) {
  const Step a = sgd_step(KernelKind::cpu, 0.3f, 0x1p-12f, true, 7);
  const Step b = sgd_step(KernelKind::cpu, 0.3f, 0x1p-12f, true, 8);
  const Step emulated = sgd_step(KernelKind::cuda_emulated, 0.3f, 0x1p-12f, true, 7);
  EXPECT_NE(a.param, b.param) << "another seed must give other random bits";
  EXPECT_EQ(a.param, emulated.param) << "the CUDA kernel must draw the CPU kernel's bits";
}

TEST(OptimizerStochasticRounding, AnF32ParameterRefusesIt) {
  Runtime runtime(memory::parse_device("cpu"));
  const Tensor p = runtime.zeros({4}, memory::MemoryCategory::parameter, "p");
  const Tensor g = runtime.zeros({4}, memory::MemoryCategory::gradient, "g");
  EXPECT_THROW(
      runtime.kernels().sgd_update(
          p.view(), g.view(), {}, {},
          {.learning_rate = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f, .nesterov = false},
          {.grad_multiplier = 1.0f, .rounding = ParameterRounding{true, 1}}),
      InternalError);
}

}  // namespace
}  // namespace vramlab::nn
