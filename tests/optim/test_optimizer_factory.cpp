// The optimizer factory: each kind the runtime implements is built with its own update rule and
// state size (told apart by two steps on the same gradient), the settings reach the optimizer,
// and every kind the estimator knows but the runtime does not is refused with its name.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/estimate/model_state_memory.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer_factory.h"
#include "common/platform/errors.h"

namespace vramlab::optim {
namespace {

using Kind = estimate::Optimizer;

struct TwoSteps {
  std::vector<double> p0, g, p2;  // (numel) before, the gradient of both steps, after
  int64_t state_bytes = 0;
  int64_t numel = 0;
};

// Two steps with the same random gradient on random parameters (odd sizes).
TwoSteps two_steps(Kind kind, const OptimizerSettings& settings, uint32_t seed) {
  nn::Runtime runtime(memory::parse_device("cpu"));
  nn::ParameterStore params(runtime, {{"w", {7, 3}, 0}, {"b", {5}, -1}});
  params.ensure_grads();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  TwoSteps out;
  out.numel = params.numel();
  for (int64_t i = 0; i < params.numel(); ++i) {
    params.values().f32()[i] = u(rng);
    params.grads().f32()[i] = u(rng);
    out.p0.push_back(params.values().f32()[i]);
    out.g.push_back(params.grads().f32()[i]);
  }
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(runtime, kind, settings);
  optimizer->step(params);
  optimizer->step(params);
  for (int64_t i = 0; i < params.numel(); ++i) out.p2.push_back(params.values().f32()[i]);
  out.state_bytes = optimizer->state_bytes();
  return out;
}

template <typename Rule>
void expect_update(const TwoSteps& r, Rule rule, const char* what) {
  for (size_t i = 0; i < r.p0.size(); ++i)
    ASSERT_NEAR(r.p2[i], rule(r.p0[i], r.g[i]), 2e-6) << what << ", element " << i;
}

TEST(MakeOptimizer, BuildsEachImplementedKindWithItsRuleAndState) {
  OptimizerSettings s;
  s.learning_rate = 0.1f;
  s.momentum = 0.5f;
  const double lr = 0.1;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const TwoSteps sgd = two_steps(Kind::sgd, s, seed);
    expect_update(
        sgd, [&](double p, double g) { return p - 2 * lr * g; }, "sgd");
    EXPECT_EQ(sgd.state_bytes, 0);
    // Momentum buffer g after step 1, (1 + μ)·g after step 2 (torch.optim.SGD, dampening 0).
    const TwoSteps momentum = two_steps(Kind::sgd_momentum, s, seed);
    expect_update(
        momentum, [&](double p, double g) { return p - lr * g - lr * 1.5 * g; }, "sgd-momentum");
    EXPECT_EQ(momentum.state_bytes, 4 * momentum.numel);
    // With a constant gradient the bias-corrected moments are g and g², so each step moves by
    // lr·g/(|g| + ε).
    const TwoSteps adamw = two_steps(Kind::adamw, s, seed);
    expect_update(
        adamw, [&](double p, double g) { return p - 2 * lr * g / (std::fabs(g) + 1e-8); }, "adamw");
    EXPECT_EQ(adamw.state_bytes, 8 * adamw.numel);
  }
}

TEST(MakeOptimizer, PassesTheWeightDecay) {
  OptimizerSettings s;
  s.learning_rate = 0.1f;
  s.weight_decay = 0.5f;
  const double lr = 0.1, wd = 0.5;
  // SGD's weight decay is L2: the gradient becomes g + wd·p.
  const TwoSteps sgd = two_steps(Kind::sgd, s, 9);
  expect_update(
      sgd,
      [&](double p, double g) {
        const double p1 = p - lr * (g + wd * p);
        return p1 - lr * (g + wd * p1);
      },
      "sgd with weight decay");
  // AdamW's is decoupled: p ← p·(1 - lr·wd) before the Adam step.
  const TwoSteps adamw = two_steps(Kind::adamw, s, 9);
  expect_update(
      adamw,
      [&](double p, double g) {
        const double step = lr * g / (std::fabs(g) + 1e-8);
        return (p * (1 - lr * wd) - step) * (1 - lr * wd) - step;
      },
      "adamw with weight decay");
}

TEST(MakeOptimizer, BuildsEveryKindTheEstimatorNames) {
  const ModelConfig model = gpt2_config("tiny", 2, 64, 4, 96, 32);
  for (const Kind kind : {Kind::sgd, Kind::sgd_momentum, Kind::adamw, Kind::adamw_8bit, Kind::lion,
                          Kind::adam_mini, Kind::adafactor}) {
    const std::string name(estimate::optimizer_name(kind));
    nn::Runtime runtime(memory::parse_device("cpu"));
    EXPECT_NE(make_optimizer(runtime, kind, {}, {}, &model), nullptr) << name;
    if (needs_model(kind)) {
      EXPECT_THROW((void)make_optimizer(runtime, kind), std::invalid_argument) << name;
    } else {
      EXPECT_NE(make_optimizer(runtime, kind), nullptr) << name;
    }
  }
}

// Mixed precision makes the fp32 master before the states: an out-of-memory error on any state
// allocation of the first step must release the master too (it leaked before), count no step, and
// leave the next step to start clean and succeed.
TEST(Optimizer, AFirstStepThatRunsOutOfMemoryLeavesNoStateBehind) {
  const ModelConfig model = gpt2_config("tiny", 2, 16, 2, 24, 8);
  const amp::PrecisionPolicy precision = amp::precision_policy(amp::Precision::mixed_bf16);
  for (const Kind kind : {Kind::sgd, Kind::sgd_momentum, Kind::adamw, Kind::adamw_8bit, Kind::lion,
                          Kind::adam_mini, Kind::adafactor}) {
    const std::string name(estimate::optimizer_name(kind));
    nn::Runtime runtime(memory::parse_device("sim:256MiB"));
    memory::CachingAllocator& allocator = runtime.allocator();
    nn::ParameterStore params(runtime, model.parameters(), precision.parameters,
                              precision.gradients);
    params.ensure_grads();
    const auto allocated = [&] {
      return allocator.stats().allocated_bytes[memory::kAggregate].current;
    };
    const auto allocations = [&] {
      return allocator.stats().allocation[memory::kAggregate].allocated;
    };
    int64_t n = 0;  // allocations of a first step
    {
      const std::unique_ptr<Optimizer> twin = make_optimizer(runtime, kind, {}, precision, &model);
      const int64_t before = allocations();
      twin->step(params);
      n = allocations() - before;
    }
    ASSERT_GE(n, 1) << name << ": the master at least";
    const std::unique_ptr<Optimizer> optimizer =
        make_optimizer(runtime, kind, {}, precision, &model);
    const int64_t bytes_before = allocated();
    for (int64_t k = 1; k <= n; ++k) {
      allocator.inject_out_of_memory(static_cast<uint64_t>(k));
      EXPECT_THROW(optimizer->step(params), memory::OutOfMemoryError) << name << ", k " << k;
      EXPECT_EQ(allocated(), bytes_before) << name << ": allocation " << k << " of " << n;
      EXPECT_EQ(optimizer->state_bytes(), 0) << name << ": allocation " << k << " of " << n;
      EXPECT_EQ(optimizer->steps(), 0) << name << ": allocation " << k << " of " << n;
      allocator.check_invariants();
    }
    optimizer->step(params);
    EXPECT_EQ(optimizer->steps(), 1) << name;
    EXPECT_GT(optimizer->state_bytes(), 0) << name;
  }
}

TEST(MakeOptimizer, BadSettingsAreUsageErrors) {
  nn::Runtime runtime(memory::parse_device("cpu"));
  OptimizerSettings s;
  s.learning_rate = 0.0f;
  EXPECT_THROW(make_optimizer(runtime, Kind::adamw, s), UsageError);
  EXPECT_THROW(make_optimizer(runtime, Kind::sgd, s), UsageError);
  s.learning_rate = 1e-3f;
  s.momentum = 1.0f;
  EXPECT_THROW(make_optimizer(runtime, Kind::sgd_momentum, s), UsageError);
  EXPECT_NO_THROW(make_optimizer(runtime, Kind::sgd, s)) << "plain SGD has no momentum to check";
}

}  // namespace
}  // namespace vramlab::optim
