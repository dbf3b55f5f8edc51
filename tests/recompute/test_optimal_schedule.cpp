// The optimal schedule: equal to a brute force over every schedule of random small chains at
// many budgets (infeasible ones, ones exactly at a schedule's peak), never dearer than a hand
// schedule that fits the same budget, refusing budgets nothing fits with the least peak, and
// fast on 96 layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/optimal_schedule.h"
#include "common/recompute/recompute_cost.h"
#include "common/recompute/recompute_spec.h"
#include "tests/recompute/chain_fixtures.h"
#include "tests/sanitized_build.h"

namespace vramlab::recompute {
namespace {

using testing::brute_force_optimal;
using testing::every_schedule;
using testing::random_chain;
using testing::Scored;

// Chains up to this many layers are compared with every schedule (4 choices a layer, about 3.4^L
// schedules): one layer fewer under the sanitizers, where the brute force is most of the time.
constexpr int kBruteForceLayers = test_build::kSanitized ? 7 : 8;

// Budgets worth trying on a chain: around the least peak, exactly at every distinct peak some
// schedule has (and one below), random ones in between and one far above.
std::vector<int64_t> budgets_for(const std::vector<Scored>& all, std::mt19937& rng) {
  std::set<int64_t> peaks;
  for (const Scored& s : all) peaks.insert(s.peak);
  std::vector<int64_t> budgets;
  for (int64_t peak : peaks) {
    budgets.push_back(peak);
    budgets.push_back(peak - 1);
  }
  const int64_t low = *peaks.begin();
  const int64_t high = *peaks.rbegin();
  for (int i = 0; i < 4; ++i) {
    budgets.push_back(std::uniform_int_distribution<int64_t>(low, high + 1)(rng));
  }
  budgets.push_back(high * 3 + 1000);
  budgets.push_back(0);
  return budgets;
}

void expect_matches_brute_force(const ChainCosts& chain, const std::vector<Scored>& all,
                                int64_t budget, bool compare_ties) {
  const Scored* expected = brute_force_optimal(all, budget);
  int64_t least = all.front().peak;
  for (const Scored& s : all) least = std::min(least, s.peak);
  if (expected == nullptr) {
    try {
      optimal_schedule(chain, budget);
      ADD_FAILURE() << "budget " << budget << " accepted below the least peak " << least;
    } catch (const UsageError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(std::to_string(budget)), std::string::npos) << message;
      EXPECT_NE(message.find(" " + std::to_string(least) + " bytes"), std::string::npos)
          << "least peak " << least << " missing from: " << message;
    }
    return;
  }
  const RecomputeSchedule got = optimal_schedule(chain, budget);
  const std::string pattern = schedule_pattern(got);
  const int64_t peak = activation_peak_bytes(chain, got);
  EXPECT_LE(peak, budget) << pattern;
  EXPECT_EQ(recompute_cost(chain, got), expected->cost)
      << "budget " << budget << ": got " << pattern << ", brute force " << expected->pattern;
  if (compare_ties) {
    EXPECT_EQ(pattern, expected->pattern) << "budget " << budget;
    EXPECT_EQ(peak, expected->peak) << "budget " << budget;
  }
}

// Integer costs: equal costs are frequent, so the whole order (cost, peak, bytes kept while the
// head runs, pattern) is compared, schedule for schedule.
TEST(OptimalSchedule, EqualsBruteForceWithTies) {
  std::mt19937 rng(2024);
  int compared = 0;
  for (int layers = 1; layers <= kBruteForceLayers; ++layers) {
    for (int trial = 0; trial < (layers <= 6 ? 40 : 12); ++trial) {
      const ChainCosts chain = random_chain(rng, layers, true);
      const std::vector<Scored> all = every_schedule(chain);
      for (int64_t budget : budgets_for(all, rng)) {
        SCOPED_TRACE("layers " + std::to_string(layers) + " trial " + std::to_string(trial));
        expect_matches_brute_force(chain, all, budget, true);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// Fractional costs: the least cost is exact (both sum the same doubles in the same order).
TEST(OptimalSchedule, EqualsBruteForceWithFractionalCosts) {
  std::mt19937 rng(77);
  for (int layers = 1; layers <= kBruteForceLayers; ++layers) {
    for (int trial = 0; trial < 12; ++trial) {
      const ChainCosts chain = random_chain(rng, layers, false);
      const std::vector<Scored> all = every_schedule(chain);
      for (int64_t budget : budgets_for(all, rng)) {
        SCOPED_TRACE("layers " + std::to_string(layers) + " trial " + std::to_string(trial));
        expect_matches_brute_force(chain, all, budget, false);
      }
    }
  }
}

TEST(OptimalSchedule, LeastPeakEqualsBruteForce) {
  std::mt19937 rng(5);
  for (int layers = 0; layers <= kBruteForceLayers; ++layers) {
    for (int trial = 0; trial < 25; ++trial) {
      const ChainCosts chain = random_chain(rng, layers, true);
      int64_t least = -1;
      for (const Scored& s : every_schedule(chain)) {
        least = least < 0 ? s.peak : std::min(least, s.peak);
      }
      EXPECT_EQ(least_activation_peak_bytes(chain), least) << layers << " layers";
      EXPECT_NO_THROW(optimal_schedule(chain, least));
      EXPECT_THROW(optimal_schedule(chain, least - 1), UsageError);
    }
  }
}

// Longer chains than the brute force reaches: whatever hand schedule fits a budget, the planner
// is no dearer, and its schedule fits.
TEST(OptimalSchedule, NeverDearerThanAHandScheduleThatFits) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 60; ++trial) {
    const int layers = 9 + static_cast<int>(rng() % 40);
    const ChainCosts chain = random_chain(rng, layers, trial % 2 == 0);
    for (const char* spec :
         {"none", "full", "every:2", "every:3", "every:5", "sqrt", "selective"}) {
      const RecomputeSchedule hand = make_schedule(parse_recompute_spec(spec), chain);
      const int64_t peak = activation_peak_bytes(chain, hand);
      for (const int64_t budget : {peak, peak + static_cast<int64_t>(rng() % 50)}) {
        const RecomputeSchedule best = optimal_schedule(chain, budget);
        EXPECT_LE(activation_peak_bytes(chain, best), budget) << spec;
        EXPECT_LE(recompute_cost(chain, best), recompute_cost(chain, hand))
            << spec << " on " << layers << " layers: " << schedule_pattern(best) << " vs "
            << schedule_pattern(hand);
      }
    }
  }
}

TEST(OptimalSchedule, NamedByItsBudget) {
  std::mt19937 rng(3);
  const ChainCosts chain = random_chain(rng, 4, true);
  EXPECT_EQ(optimal_schedule(chain, int64_t{1} << 40).name, "budget:1TiB");
  EXPECT_EQ(optimal_schedule(chain, 1000000).name, "budget:1000000");
  EXPECT_EQ(make_schedule(parse_recompute_spec("budget:3GiB"), chain).name, "budget:3GiB");
  // A budget everything fits needs no recompute that costs anything.
  EXPECT_EQ(recompute_cost(chain, optimal_schedule(chain, int64_t{1} << 40)), 0.0);
}

TEST(OptimalSchedule, RefusalNamesTheBudgetAndTheLeastPeak) {
  ChainCosts chain;
  chain.before_bytes = 1 << 20;
  chain.head_bytes = 3 << 20;
  chain.layers.assign(6, LayerCosts{8 << 20, 6 << 20, 1 << 20, 1.0, 0.25});
  // Every layer its own span: E + 5 O + F = 14 MiB is the least peak (any longer span
  // re-runs two layers of F = 8 MiB each on top of E, none keeps F).
  EXPECT_EQ(least_activation_peak_bytes(chain), int64_t{14} << 20);
  try {
    make_schedule(parse_recompute_spec("budget:12MiB"), chain);
    ADD_FAILURE() << "12 MiB accepted";
  } catch (const UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("budget:12MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("14680064 bytes (14.00 MiB)"), std::string::npos) << message;
  }
}

// A 70B-like chain: 80 layers of about 10 GiB saved each, all sums beyond 32 bits.
TEST(OptimalSchedule, SeventyBLikeChain) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  ChainCosts chain;
  chain.before_bytes = kGiB / 4;
  chain.head_bytes = 4 * kGiB;
  for (int64_t l = 0; l < 80; ++l) {
    chain.layers.push_back(
        {10 * kGiB + 4096 * l, 3 * kGiB + 4096 * l, 128 << 20, 1.0 + 0.001 * l, 0.3});
  }
  const int64_t least = least_activation_peak_bytes(chain);
  const int64_t sqrt_peak =
      activation_peak_bytes(chain, make_schedule(parse_recompute_spec("sqrt"), chain));
  EXPECT_GT(least, 10 * kGiB);
  EXPECT_LE(least, sqrt_peak);
  for (const int64_t budget : {least, sqrt_peak, 100 * kGiB, 300 * kGiB, 900 * kGiB}) {
    const RecomputeSchedule best = optimal_schedule(chain, budget);
    EXPECT_LE(activation_peak_bytes(chain, best), budget);
    if (sqrt_peak <= budget) {
      EXPECT_LE(recompute_cost(chain, best),
                recompute_cost(chain, make_schedule(parse_recompute_spec("sqrt"), chain)));
    }
  }
  EXPECT_EQ(recompute_cost(chain, optimal_schedule(chain, 900 * kGiB)), 0.0);
}

// 96 layers with GPT-3 175B's per-layer sizes at s = 2048, b = 1, fp16 (Korthikanti et al.
// 2022: sbh(34 + 5as/h) bytes, 34 sbh under selective, 2 sbh output; a = 96, h = 12288), costs
// in FLOPs: 24 sh² + 4 s²h for the layer's forward, 2 s²h for QKᵀ. Every budget from the least
// feasible to no recompute gets a plan that fits (how long it takes: bench_optimal_schedule).
TEST(OptimalSchedule, NinetySixLayersGetAPlanThatFitsAtEveryBudget) {
  const int64_t s = 2048, h = 12288, a = 96;
  const int64_t sbh = s * h;
  ChainCosts chain;
  chain.before_bytes = 2 * sbh;
  chain.head_bytes = 4 * s * 50257;
  const LayerCosts layer{sbh * 34 + 5 * a * s * s, sbh * 34, 2 * sbh,
                         24.0 * s * h * h + 4.0 * s * s * h, 2.0 * s * s * h};
  chain.layers.assign(96, layer);
  const int64_t least = least_activation_peak_bytes(chain);
  const int64_t none =
      activation_peak_bytes(chain, make_schedule(parse_recompute_spec("none"), chain));
  for (int i = 0; i <= 10; ++i) {
    const int64_t budget = least + (none - least) / 10 * i;
    EXPECT_LE(activation_peak_bytes(chain, optimal_schedule(chain, budget)), budget) << i;
  }
}

}  // namespace
}  // namespace vramlab::recompute
