// Tests of exercise 09.2 (one Lion step). They run against your code (`vramlab check 09.2`) and
// against the reference (ctest: test_ex_09_2_ref).
// Expectations: the runtime's kernel (kernels::cpu::lion_update, f32) over five steps on seeded
// random data of odd sizes, with weight decay off and on and β1 ≠ β2, so that the order of the
// direction and the momentum update shows; exact cancellations (β1 = 1/2, g = −m) where the
// direction is sign(0) = 0; NaN and infinite gradients. Tolerances: two f32 ulps of the largest
// |value| (param starts in [-1, 1] and stays below 2, m and g lie in [-1, 1]): the order of the f32
// operations may differ from the kernel's by a rounding or two, the direction may not: a wrong sign
// moves a parameter by 2·lr ≥ 2e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "kernels/cpu/optimizer.h"
#include "lessons/09-optimizer-memory/api/lion_step.h"

namespace vramlab::lesson09 {
namespace {

using kernels::cpu::LionHyperparameters;
using workbook::Comparison;
using workbook::Unit;

// A value as printf's %.9g prints it: every f32 digit, and small values not shown as 0.000000.
std::string g9(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

constexpr double kParamTolerance = 2 * 0x1p-22;     // two ulps of an f32 in [1, 2)
constexpr double kMomentumTolerance = 2 * 0x1p-23;  // two ulps of an f32 in [0.5, 1)

struct State {
  std::vector<float> param, momentum;
};

State runtime_step(State s, const std::vector<float>& grad, const LionHyperparameters& hp) {
  kernels::cpu::lion_update<float, float, float, bf16_t>(
      s.param.data(), grad.data(), s.momentum.data(), nullptr, static_cast<int64_t>(grad.size()),
      hp, {.grad_multiplier = 1.0f});
  return s;
}

State learner_step(State s, const std::vector<float>& grad, const LionHyperparameters& hp) {
  lion_step(s.param, grad, s.momentum, hp);
  return s;
}

std::string describe(const LionHyperparameters& hp) {
  return "lr=" + g9(hp.learning_rate) + " beta1=" + g9(hp.beta1) + " beta2=" + g9(hp.beta2) +
         " wd=" + g9(hp.weight_decay);
}

struct StepChecks {
  Comparison param{"parameter after the step", Unit::kNumber, kParamTolerance};
  Comparison momentum{"momentum m after the step", Unit::kNumber, kMomentumTolerance};

  // Every element; the where string is built only for the worst one of each array.
  void add(const std::string& where, const State& expected, const State& got) {
    add_array(param, where, expected.param, got.param);
    add_array(momentum, where, expected.momentum, got.momentum);
  }
  static void add_array(Comparison& c, const std::string& where, const std::vector<float>& expected,
                        const std::vector<float>& got) {
    if (got.size() != expected.size()) {
      c.add(where + ": number of elements", static_cast<double>(expected.size()),
            static_cast<double>(got.size()));
      return;
    }
    size_t worst = 0;
    double worst_diff = -1.0;
    for (size_t i = 0; i < expected.size(); ++i) {
      // NaN against NaN matches; NaN against a number is the worst mismatch there is.
      const bool both_nan = std::isnan(expected[i]) && std::isnan(got[i]);
      double diff = both_nan || got[i] == expected[i]
                        ? 0.0
                        : std::fabs(static_cast<double>(got[i]) - static_cast<double>(expected[i]));
      if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();
      if (diff > worst_diff) {
        worst_diff = diff;
        worst = i;
      }
    }
    if (!expected.empty())
      c.add(where + " element " + std::to_string(worst), expected[worst], got[worst]);
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(param);
    VRAMLAB_EXPECT_PASSES(momentum);
  }
};

std::vector<float> uniform(std::mt19937_64& rng, int64_t n, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  return x;
}

//! [test]
TEST(LionStep, FiveStepsEqualTheRuntimeKernelWithAndWithoutWeightDecay) {
  std::mt19937_64 rng(921);
  const LionHyperparameters settings[] = {
      {1e-4f, 0.9f, 0.99f, 0.0f},    // the paper's defaults
      {3e-3f, 0.9f, 0.99f, 1.0f},    // strong decoupled decay
      {1e-3f, 0.95f, 0.98f, 0.1f},   // the paper's language-model betas
      {5e-4f, 0.5f, 0.999f, 0.01f},  // β1 far from β2
  };
  StepChecks checks;
  for (const LionHyperparameters& hp : settings)
    for (const int64_t n : {1, 7, 1023, 100003}) {
      State expected{uniform(rng, n, 1.0f), std::vector<float>(static_cast<size_t>(n), 0.0f)};
      State got = expected;
      for (int step = 1; step <= 5; ++step) {
        // Gradients of a few scales: most elements small, a few as large as the parameters.
        std::vector<float> grad = uniform(rng, n, step % 2 == 0 ? 1.0f : 0.05f);
        expected = runtime_step(expected, grad, hp);
        got = learner_step(got, grad, hp);
        checks.add(describe(hp) + " n=" + std::to_string(n) + " step " + std::to_string(step),
                   expected, got);
        got = expected;  // each step from the same state: a wrong step is not compounded
      }
    }
  checks.expect_passes();
}
//! [test]

TEST(LionStep, AnExactlyCancellingDirectionHasSignZeroSoOnlyTheDecayMoves) {
  std::mt19937_64 rng(922);
  StepChecks checks;
  Comparison decay_only("parameter after a step whose direction is 0: param·(1 − lr·wd)",
                        Unit::kNumber, kParamTolerance);
  for (const float weight_decay : {0.0f, 0.5f}) {
    // β1 = 1/2 makes β1·m + (1 − β1)·g = m/2 − m/2 = 0 exactly when g = −m.
    const LionHyperparameters hp{1e-3f, 0.5f, 0.99f, weight_decay};
    for (const int64_t n : {1, 9, 4097}) {
      const State before{uniform(rng, n, 1.0f), uniform(rng, n, 0.5f)};
      std::vector<float> grad = uniform(rng, n, 0.5f);
      for (size_t i = 0; i < grad.size(); i += 2) grad[i] = -before.momentum[i];
      const std::string where = describe(hp) + " n=" + std::to_string(n) + " (g = -m at even i)";
      const State got = learner_step(before, grad, hp);
      checks.add(where, runtime_step(before, grad, hp), got);
      for (size_t i = 0; i < grad.size(); i += 2)
        decay_only.add(where + " element " + std::to_string(i),
                       before.param[i] * (1.0f - hp.learning_rate * hp.weight_decay), got.param[i]);
    }
    // The first step of a parameter with a zero gradient: m = 0 and g = 0.
    const State zero{{0.25f, -0.75f}, {0.0f, 0.0f}};
    const std::vector<float> no_grad = {0.0f, 0.0f};
    checks.add(describe(hp) + " first step, g = 0", runtime_step(zero, no_grad, hp),
               learner_step(zero, no_grad, hp));
  }
  checks.expect_passes();
  VRAMLAB_EXPECT_PASSES(decay_only);
}

TEST(LionStep, NaNAndInfiniteGradientsReachTheParameterAsTheKernelsDo) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const LionHyperparameters hp{1e-3f, 0.9f, 0.99f, 0.1f};
  const State before{{0.5f, -0.5f, 0.25f, 0.125f, 1.0f}, {0.1f, -0.2f, 0.0f, 0.3f, 0.0f}};
  const std::vector<float> grad = {nan, 0.5f, inf, -inf, nan};
  StepChecks checks;
  const State got = learner_step(before, grad, hp);
  checks.add("g = {NaN, 0.5, +inf, -inf, NaN}", runtime_step(before, grad, hp), got);
  checks.expect_passes();
  EXPECT_TRUE(std::isnan(got.param[0]) && std::isnan(got.param[4]))
      << "sign(NaN) must be NaN: a NaN gradient may not become a step of -lr, 0 or +lr (got "
      << got.param[0] << " and " << got.param[4] << ")";
}

TEST(LionStep, RejectsSpansOfDifferentLengthsNamingThem) {
  std::vector<float> param(5), momentum(5), short_momentum(4);
  const std::vector<float> grad(5), long_grad(6);
  const LionHyperparameters hp;
  try {
    lion_step(param, long_grad, momentum, hp);
    ADD_FAILURE() << "lion_step accepted a grad of 6 elements for 5 parameters";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find('6'), std::string::npos) << e.what();
  }
  try {
    lion_step(param, grad, short_momentum, hp);
    ADD_FAILURE() << "lion_step accepted a momentum of 4 elements for 5 parameters";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find('4'), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vramlab::lesson09
