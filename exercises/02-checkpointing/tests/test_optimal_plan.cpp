// Tests of exercise 02.2 (the least-cost checkpointing plan under a peak budget). They run against
// your code (`vramlab check 02.2`) and against the reference (ctest: test_ex_02_2_ref).
// Expectations: an exhaustive search over every plan of small random chains, with the test's own
// event-by-event timeline of the step for each plan's peak; and the runtime itself, which runs
// your plans for real models on the meta device: its measured peak must be the one you report and
// fit the budget; and, on chains too long to search, the runtime's own planner (common/recompute).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/tensor_view.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/chain_costs.h"
#include "common/recompute/optimal_schedule.h"
#include "common/recompute/recompute_cost.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/02-checkpointing/api/optimal_plan.h"

namespace vramlab::lesson02 {
namespace {

using nn::LayerPolicy;
using nn::Recompute;
using workbook::Comparison;
using workbook::Unit;

std::string describe(const CheckpointChain& c) {
  std::string s = "E=" + std::to_string(c.before_bytes) + " H=" + std::to_string(c.head_bytes);
  s += " layers";
  for (size_t l = 0; l < c.layers.size() && l < 10; ++l) {
    s += " (";
    s += std::to_string(c.layers[l].saved_bytes);
    s += ',';
    s += std::to_string(c.layers[l].output_bytes);
    s += ',';
    s += std::to_string(c.layers[l].forward_cost);
    s += ')';
  }
  if (c.layers.size() > 10) s += " ... " + std::to_string(c.layers.size()) + " in all";
  return s;
}

std::string describe(const std::vector<LayerPolicy>& plan) {
  std::string s;  // K kept, S span start, s inside a span, ? anything else
  for (const LayerPolicy& p : plan)
    s += p.recompute == Recompute::none   ? 'K'
         : p.recompute == Recompute::full ? (p.span_start ? 'S' : 's')
                                          : '?';
  return s;
}

// "" when the plan is one the runtime accepts and the exercise allows, else what is wrong.
std::string plan_problem(const std::vector<LayerPolicy>& plan, size_t layers) {
  if (plan.size() != layers)
    return std::to_string(plan.size()) + " policies for " + std::to_string(layers) + " layers";
  for (size_t l = 0; l < plan.size(); ++l) {
    if (plan[l].recompute == Recompute::selective)
      return "layer " + std::to_string(l) + " is selective";
    const bool after_full = l > 0 && plan[l - 1].recompute == Recompute::full;
    if (plan[l].recompute == Recompute::full && !after_full && !plan[l].span_start)
      return "layer " + std::to_string(l) + " follows a kept layer without starting a span";
  }
  return "";
}

struct Evaluated {
  int64_t peak = 0;
  double cost = 0;
};

// The test's own model: the store's total after every event of the step, and its maximum.
Evaluated evaluate(const CheckpointChain& c, const std::vector<LayerPolicy>& plan) {
  const auto L = static_cast<int64_t>(c.layers.size());
  auto F = [&](int64_t l) { return c.layers[static_cast<size_t>(l)].saved_bytes; };
  auto O = [&](int64_t l) { return c.layers[static_cast<size_t>(l)].output_bytes; };
  auto full = [&](int64_t l) { return plan[static_cast<size_t>(l)].recompute == Recompute::full; };
  auto start = [&](int64_t l) { return plan[static_cast<size_t>(l)].span_start; };
  Evaluated e;
  int64_t live = c.before_bytes;
  e.peak = live;
  for (int64_t l = 0; l < L; ++l) {
    live += F(l);
    e.peak = std::max(e.peak, live);
    if (full(l)) {
      live -= F(l) - O(l);
      if (!start(l)) live -= O(l - 1);
      e.cost += c.layers[static_cast<size_t>(l)].forward_cost;
    }
  }
  live += c.head_bytes;
  e.peak = std::max(e.peak, live);
  live -= c.head_bytes;
  for (int64_t l = L - 1; l >= 0; --l) {
    if (full(l) && (l == L - 1 || !full(l + 1) || start(l + 1))) {
      int64_t first = l;
      while (!start(first)) --first;
      live -= O(l);  // the checkpoint goes, the re-run saves it again
      for (int64_t r = first; r <= l; ++r) live += F(r);
      e.peak = std::max(e.peak, live);
    }
    live -= F(l);  // the layer's backward frees what it saved
  }
  EXPECT_EQ(live, c.before_bytes) << "the test's timeline must end where it started";
  return e;
}

// Every plan: each layer kept, starting a span, or (after a recomputed layer) continuing one.
void for_every_plan(size_t layers, const std::function<void(const std::vector<LayerPolicy>&)>& f) {
  std::vector<LayerPolicy> plan(layers);
  std::function<void(size_t)> visit = [&](size_t l) {
    if (l == layers) return f(plan);
    plan[l] = LayerPolicy{Recompute::none, true};
    visit(l + 1);
    plan[l] = LayerPolicy{Recompute::full, true};
    visit(l + 1);
    if (l > 0 && plan[l - 1].recompute == Recompute::full) {
      plan[l] = LayerPolicy{Recompute::full, false};
      visit(l + 1);
    }
  };
  visit(0);
}

struct Exhaustive {
  int64_t smallest_peak = std::numeric_limits<int64_t>::max();
  double least_cost = std::numeric_limits<double>::infinity();  // under the budget
};

Exhaustive search(const CheckpointChain& c, int64_t budget) {
  Exhaustive best;
  for_every_plan(c.layers.size(), [&](const std::vector<LayerPolicy>& plan) {
    const Evaluated e = evaluate(c, plan);
    best.smallest_peak = std::min(best.smallest_peak, e.peak);
    if (e.peak <= budget) best.least_cost = std::min(best.least_cost, e.cost);
  });
  return best;
}

// The checks every returned plan must pass: valid, within the budget, and reporting its own
// peak and cost.
struct PlanChecks {
  Comparison reported_peak{"reported peak_bytes vs the plan's peak", Unit::kBytes};
  Comparison reported_cost{"reported recompute_cost vs the plan's cost", Unit::kNumber, 1e-9,
                           1e-12};
  Comparison over_budget{"bytes over the budget (peak - budget when positive)", Unit::kBytes};
  void add(const std::string& where, const CheckpointChain& c, int64_t budget,
           const CheckpointPlan& got) {
    const std::string problem = plan_problem(got.layers, c.layers.size());
    if (!problem.empty()) {
      ADD_FAILURE() << where << ": not a valid plan (" << describe(got.layers) << "): " << problem;
      return;
    }
    const Evaluated e = evaluate(c, got.layers);
    reported_peak.add(where + " plan " + describe(got.layers), static_cast<double>(e.peak),
                      static_cast<double>(got.peak_bytes));
    reported_cost.add(where + " plan " + describe(got.layers), e.cost, got.recompute_cost);
    over_budget.add(where + " plan " + describe(got.layers), 0.0,
                    static_cast<double>(std::max<int64_t>(0, e.peak - budget)));
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(reported_peak);
    VRAMLAB_EXPECT_PASSES(reported_cost);
    VRAMLAB_EXPECT_PASSES(over_budget);
  }
};

CheckpointChain random_chain(std::mt19937_64& rng, int64_t max_layers, bool integer_costs) {
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  CheckpointChain c;
  const int64_t L = pick(1, max_layers);
  const int64_t scale = pick(0, 4) == 0 ? (int64_t{1} << 34) : 1;  // sometimes tens of GiB
  for (int64_t l = 0; l < L; ++l) {
    LayerCost layer;
    layer.saved_bytes = scale * pick(0, 1000);
    layer.output_bytes = pick(0, 3) == 0 ? layer.saved_bytes : pick(0, layer.saved_bytes);
    layer.forward_cost = integer_costs ? static_cast<double>(pick(0, 9))
                                       : std::uniform_real_distribution<double>(0.0, 5.0)(rng);
    c.layers.push_back(layer);
  }
  c.before_bytes = scale * pick(0, 300);
  c.head_bytes = pick(0, 2) == 0 ? 0 : scale * pick(0, 3000);
  return c;
}

//! [test]
TEST(OptimalPlan, CostsWhatTheExhaustiveSearchFindsOnRandomSmallChains) {
  std::mt19937_64 rng(0x0221);
  Comparison cost("least recompute cost (exhaustive search vs yours)", Unit::kNumber, 1e-9, 1e-12);
  PlanChecks checks;
  for (int trial = 0; trial < 300; ++trial) {
    const CheckpointChain chain = random_chain(rng, 8, trial % 2 == 0);
    // Budgets between the smallest peak and keeping everything, some exactly at a plan's peak.
    const int64_t smallest = search(chain, 0).smallest_peak;
    const int64_t everything = evaluate(chain, std::vector<LayerPolicy>(chain.layers.size())).peak;
    std::vector<int64_t> budgets = {smallest, everything};
    for (int k = 0; k < 3; ++k)
      budgets.push_back(std::uniform_int_distribution<int64_t>(smallest, everything)(rng));
    for (int64_t budget : budgets) {
      const std::string where = describe(chain) + " budget " + std::to_string(budget);
      const CheckpointPlan got = optimal_checkpoint_plan(chain, budget);
      cost.add(where, search(chain, budget).least_cost, got.recompute_cost);
      checks.add(where, chain, budget, got);
    }
  }
  VRAMLAB_EXPECT_PASSES(cost);
  checks.expect_passes();
}
//! [test]

TEST(OptimalPlan, ABudgetBelowEveryPlanThrowsNamingTheSmallestPeak) {
  std::mt19937_64 rng(0x0222);
  for (int trial = 0; trial < 200; ++trial) {
    const CheckpointChain chain = random_chain(rng, 7, true);
    const int64_t smallest = search(chain, 0).smallest_peak;
    for (int64_t budget : {smallest - 1, smallest / 2 - 1}) {
      if (budget < 0) continue;
      try {
        const CheckpointPlan got = optimal_checkpoint_plan(chain, budget);
        ADD_FAILURE() << describe(chain) << ": no plan peaks at " << budget
                      << " bytes or less (the smallest peak is " << smallest
                      << "), yet you returned " << describe(got.layers) << " reporting "
                      << got.peak_bytes << " bytes";
        return;
      } catch (const UsageError& e) {
        const std::string message = e.what();
        if (message.find(std::to_string(smallest)) == std::string::npos ||
            message.find(std::to_string(budget)) == std::string::npos) {
          ADD_FAILURE() << describe(chain) << ": the message should name the budget " << budget
                        << " and the smallest feasible peak " << smallest << ": " << message;
          return;
        }
      }
    }
  }
}

// The runtime's chain for a model: per layer F (what it saved) and O (its output), E and H, read
// from the store after a forward pass that keeps everything; per-layer costs from the seed.
CheckpointChain measured_chain(const ModelConfig& config, int64_t B, int64_t T, uint64_t seed) {
  nn::Runtime runtime(memory::parse_device("meta"));
  nn::DecoderModel model(runtime, config, 1);
  nn::SavedActivations store(runtime, config.layers);
  std::vector<int32_t> tokens(static_cast<size_t>(B * T), 0);  // (B, T); meta reads none
  const memory::TensorView view(tokens.data(), DType::i32, {B, T});
  model.forward(store, view, view, B, T);
  CheckpointChain chain;
  chain.layers.resize(static_cast<size_t>(config.layers));
  for (const nn::SavedActivationInfo& info : store.list()) {
    if (info.layer < 0) {
      (info.name == saved::encoded ? chain.before_bytes : chain.head_bytes) += info.bytes;
    } else {
      LayerCost& layer = chain.layers[static_cast<size_t>(info.layer)];
      layer.saved_bytes += info.bytes;
      if (info.name == saved::residual3) layer.output_bytes = info.bytes;
    }
  }
  store.clear();
  std::mt19937_64 rng(seed);
  for (LayerCost& layer : chain.layers)
    layer.forward_cost = seed == 0 ? 1.0 : std::uniform_real_distribution<double>(0.5, 2.0)(rng);
  return chain;
}

int64_t measured_peak(const ModelConfig& config, int64_t B, int64_t T,
                      const std::vector<LayerPolicy>& plan) {
  nn::Runtime runtime(memory::parse_device("meta"));
  nn::DecoderModel model(runtime, config, 1);
  nn::SavedActivations store(runtime, config.layers);
  store.set_plan(plan);
  std::vector<int32_t> tokens(static_cast<size_t>(B * T), 0);  // (B, T)
  const memory::TensorView view(tokens.data(), DType::i32, {B, T});
  model.forward(store, view, view, B, T);
  model.backward(store, view, view, B, T);
  return store.peak_bytes();
}

std::vector<LayerPolicy> spans_of(size_t layers, size_t k, size_t kept_first = 0) {
  std::vector<LayerPolicy> plan(layers);
  for (size_t l = kept_first; l < layers; ++l)
    plan[l] = LayerPolicy{Recompute::full, (l - kept_first) % k == 0};
  return plan;
}

// Hand plans: keep everything; spans of k for every k; the first quarter or half kept and
// the rest in spans of k.
std::vector<std::vector<LayerPolicy>> hand_plans(size_t layers) {
  std::vector<std::vector<LayerPolicy>> plans = {std::vector<LayerPolicy>(layers)};
  for (size_t kept : {size_t{0}, layers / 4, layers / 2})
    for (size_t k = 1; k <= layers; ++k)
      if (kept < layers) plans.push_back(spans_of(layers, k, kept));
  return plans;
}

// Budgets at hand plans' peaks and between them; the plan must fit, report what the runtime
// measures, and cost no more than any hand plan that fits the same budget.
void expect_runtime_agrees(const ModelConfig& config, int64_t B, int64_t T, uint64_t seed) {
  const CheckpointChain chain = measured_chain(config, B, T, seed);
  const auto plans = hand_plans(chain.layers.size());
  std::vector<Evaluated> hand;
  for (const auto& plan : plans) hand.push_back(evaluate(chain, plan));
  std::vector<int64_t> peaks;
  for (const Evaluated& e : hand) peaks.push_back(e.peak);
  std::sort(peaks.begin(), peaks.end());
  const std::vector<int64_t> budgets = {peaks.front(), peaks[peaks.size() / 4],
                                        (peaks[peaks.size() / 3] + peaks[peaks.size() / 2]) / 2,
                                        peaks[peaks.size() * 3 / 4] + 12345, peaks.back()};
  Comparison measured("peak_bytes you report vs the runtime's measured peak", Unit::kBytes);
  Comparison over("bytes over the budget, measured on the runtime", Unit::kBytes);
  Comparison no_worse("recompute cost above the best hand plan that fits (0 or less)",
                      Unit::kNumber, 1e-9, 0);
  for (int64_t budget : budgets) {
    const std::string where = config.name + " B=" + std::to_string(B) + " T=" + std::to_string(T) +
                              " budget " + std::to_string(budget);
    const CheckpointPlan got = optimal_checkpoint_plan(chain, budget);
    const std::string problem = plan_problem(got.layers, chain.layers.size());
    if (!problem.empty()) {
      ADD_FAILURE() << where << ": not a valid plan (" << describe(got.layers) << "): " << problem;
      continue;
    }
    const int64_t peak = measured_peak(config, B, T, got.layers);
    measured.add(where + " plan " + describe(got.layers), static_cast<double>(peak),
                 static_cast<double>(got.peak_bytes));
    over.add(where + " plan " + describe(got.layers), 0.0,
             static_cast<double>(std::max<int64_t>(0, peak - budget)));
    double best_hand = std::numeric_limits<double>::infinity();
    for (const Evaluated& e : hand)
      if (e.peak <= budget) best_hand = std::min(best_hand, e.cost);
    no_worse.add(where, 0.0, std::max(0.0, got.recompute_cost - best_hand));
  }
  VRAMLAB_EXPECT_PASSES(measured);
  VRAMLAB_EXPECT_PASSES(over);
  VRAMLAB_EXPECT_PASSES(no_worse);
}

TEST(OptimalPlan, TheRuntimeMeasuresYourPeakForGpt2_124M) {
  expect_runtime_agrees(model_config_by_name("gpt2-124m"), 4, 1024, 0);
  expect_runtime_agrees(model_config_by_name("gpt2-124m"), 2, 333, 0x0223);
}

TEST(OptimalPlan, TheRuntimeMeasuresYourPeakForLlama2_7BAtT4096) {
  expect_runtime_agrees(model_config_by_name("llama2-7b"), 1, 4096, 0);
}

TEST(OptimalPlan, TheRuntimeMeasuresYourPeakForRandomSmallModels) {
  std::mt19937_64 rng(0x0224);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t heads = pick(1, 4), hidden = heads * 8 * pick(1, 4), seq = pick(1, 64);
    const int64_t layers = pick(1, 12), vocab = pick(17, 3000);
    const ModelConfig config =
        trial % 2 == 0
            ? gpt2_config("gpt2-random", layers, hidden, heads, vocab, seq)
            : llama_config("llama-random", layers, hidden, heads, heads, 3 * hidden, vocab, seq);
    expect_runtime_agrees(config, pick(1, 5), seq, 0x0224'0000 + static_cast<uint64_t>(trial));
  }
}

TEST(OptimalPlan, NinetySixLayersOfSeventyBSizesNoWorseThanAnyHandPlan) {
  // 96 layers of 10 GiB each (a 70B-like model at long context): far too many plans to search,
  // so every hand plan that fits is a bound your plan must meet. A program that enumerates plans
  // never ends here; the test's timeout is two minutes.
  CheckpointChain chain;
  const int64_t gib = int64_t{1} << 30;
  for (int l = 0; l < 96; ++l) chain.layers.push_back(LayerCost{10 * gib, gib / 4, 1.0});
  chain.before_bytes = gib / 4;
  chain.head_bytes = 3 * gib;
  const auto plans = hand_plans(chain.layers.size());
  std::vector<Evaluated> hand;
  for (const auto& plan : plans) hand.push_back(evaluate(chain, plan));
  Comparison no_worse("recompute cost above the best hand plan that fits (0 or less)",
                      Unit::kNumber, 1e-9, 0);
  PlanChecks checks;
  for (int64_t budget : {int64_t{60} * gib, int64_t{100} * gib, int64_t{250} * gib,
                         int64_t{500} * gib, int64_t{900} * gib}) {
    const std::string where = "96 x 10 GiB budget " + std::to_string(budget);
    const CheckpointPlan got = optimal_checkpoint_plan(chain, budget);
    checks.add(where, chain, budget, got);
    double best_hand = std::numeric_limits<double>::infinity();
    for (const Evaluated& e : hand)
      if (e.peak <= budget) best_hand = std::min(best_hand, e.cost);
    no_worse.add(where, 0.0, std::max(0.0, got.recompute_cost - best_hand));
  }
  checks.expect_passes();
  VRAMLAB_EXPECT_PASSES(no_worse);
}

// The same chain for the runtime's planner (common/recompute), with selective recompute made
// useless (it would keep all of F and cost more than recomputing the whole layer), so that both
// choose among the same plans.
recompute::ChainCosts planner_chain(const CheckpointChain& c) {
  recompute::ChainCosts costs;
  for (const LayerCost& layer : c.layers)
    costs.layers.push_back(recompute::LayerCosts{layer.saved_bytes, layer.saved_bytes,
                                                 layer.output_bytes, layer.forward_cost,
                                                 layer.forward_cost + 1.0});
  costs.before_bytes = c.before_bytes;
  costs.head_bytes = c.head_bytes;
  return costs;
}

recompute::RecomputeSchedule planner_schedule(const std::vector<LayerPolicy>& plan) {
  recompute::RecomputeSchedule schedule;
  schedule.name = "yours";
  for (const LayerPolicy& p : plan)
    schedule.layers.push_back(
        p.recompute == Recompute::full
            ? recompute::LayerPlan{recompute::LayerRecompute::full, p.span_start}
            : recompute::LayerPlan{recompute::LayerRecompute::none, false});
  return schedule;
}

TEST(OptimalPlan, CostsWhatTheRuntimesPlannerFindsOnLongerRandomChains) {
  // Chains of up to 40 layers, beyond any exhaustive search: the planner of `vramlab train
  // --recompute budget:...` is the reference, and its peak model judges your plan's peak.
  std::mt19937_64 rng(0x0225);
  Comparison cost("least recompute cost (runtime's planner vs yours)", Unit::kNumber, 1e-9, 1e-12);
  Comparison peak("your plan's peak (runtime's peak model vs reported)", Unit::kBytes);
  Comparison over("bytes over the budget (runtime's peak model)", Unit::kBytes);
  for (int trial = 0; trial < 120; ++trial) {
    const CheckpointChain chain = random_chain(rng, 40, trial % 2 == 0);
    const recompute::ChainCosts costs = planner_chain(chain);
    const int64_t smallest = recompute::least_activation_peak_bytes(costs);
    const int64_t everything = evaluate(chain, std::vector<LayerPolicy>(chain.layers.size())).peak;
    for (int64_t budget :
         {smallest, std::uniform_int_distribution<int64_t>(smallest, everything)(rng),
          everything}) {
      const std::string where = describe(chain) + " budget " + std::to_string(budget);
      const CheckpointPlan got = optimal_checkpoint_plan(chain, budget);
      const std::string problem = plan_problem(got.layers, chain.layers.size());
      if (!problem.empty()) {
        ADD_FAILURE() << where << ": not a valid plan (" << describe(got.layers)
                      << "): " << problem;
        continue;
      }
      const recompute::RecomputeSchedule best = recompute::optimal_schedule(costs, budget);
      cost.add(where, recompute::recompute_cost(costs, best), got.recompute_cost);
      const int64_t model_peak =
          recompute::activation_peak_bytes(costs, planner_schedule(got.layers));
      peak.add(where + " plan " + describe(got.layers), static_cast<double>(model_peak),
               static_cast<double>(got.peak_bytes));
      over.add(where + " plan " + describe(got.layers), 0.0,
               static_cast<double>(std::max<int64_t>(0, model_peak - budget)));
    }
    if (smallest > 0) {
      try {
        optimal_checkpoint_plan(chain, smallest - 1);
        ADD_FAILURE() << describe(chain) << ": no plan fits " << smallest - 1
                      << " bytes (the runtime's planner's smallest peak is " << smallest << ")";
      } catch (const UsageError& e) {
        if (std::string(e.what()).find(std::to_string(smallest)) == std::string::npos)
          ADD_FAILURE() << describe(chain) << ": the message should name the smallest peak "
                        << smallest << ": " << e.what();
      }
    }
  }
  VRAMLAB_EXPECT_PASSES(cost);
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(over);
}

TEST(OptimalPlan, RejectsBadChainsNamingTheValue) {
  struct Bad {
    CheckpointChain chain;
    std::string named;
  };
  const LayerCost ok{100, 10, 1.0};
  std::vector<Bad> cases;
  auto bad_chain = [&](std::vector<LayerCost> layers, int64_t E, int64_t H, std::string named) {
    Bad bad;
    bad.chain.layers = std::move(layers);
    bad.chain.before_bytes = E;
    bad.chain.head_bytes = H;
    bad.named = std::move(named);
    cases.push_back(std::move(bad));
  };
  const int64_t half = std::numeric_limits<int64_t>::max() / 2;
  bad_chain({}, 5, 5, "0");
  bad_chain({ok, LayerCost{-100, 0, 1.0}}, 5, 5, "-100");
  bad_chain({ok, LayerCost{100, -10, 1.0}}, 5, 5, "-10");
  bad_chain({ok, LayerCost{100, 101, 1.0}}, 5, 5, "101");
  bad_chain({ok, ok}, -5, 5, "-5");
  bad_chain({ok, ok}, 5, -50, "-50");
  bad_chain({ok, LayerCost{100, 10, -2.0}}, 5, 5, "-2");
  bad_chain({ok, LayerCost{100, 10, std::numeric_limits<double>::quiet_NaN()}}, 5, 5, "nan");
  bad_chain({LayerCost{half, 0, 1.0}, LayerCost{half, 0, 1.0}}, 5, 5, "overflow");
  for (const Bad& bad : cases) {
    try {
      optimal_checkpoint_plan(bad.chain, std::numeric_limits<int64_t>::max());
      ADD_FAILURE() << "no vramlab::UsageError for " << describe(bad.chain);
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(bad.named) == std::string::npos)
        ADD_FAILURE() << "the message should name " << bad.named << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson02
