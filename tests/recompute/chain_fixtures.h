// Chains for the planner's tests: random small ones and the brute force over every schedule,
// which the planner's dynamic program must agree with.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/recompute/activation_peak.h"
#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_cost.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::recompute::testing {

// A schedule from its pattern ('.' none, 's' selective, 'F' full starting a span, 'f' full
// continuing one), written independently of the library's reading of patterns.
inline RecomputeSchedule schedule_of(const std::string& pattern) {
  RecomputeSchedule schedule{pattern, {}};
  for (char c : pattern) {
    LayerPlan plan;
    if (c == 's') plan.recompute = LayerRecompute::selective;
    if (c == 'F' || c == 'f') plan.recompute = LayerRecompute::full;
    plan.span_start = c == 'F';
    schedule.layers.push_back(plan);
  }
  return schedule;
}

// Random sizes with 0 ≤ O ≤ S ≤ F (zeros included now and then) and, when integer_costs, small
// integer costs so that equal costs are common and the tie rules are exercised.
inline ChainCosts random_chain(std::mt19937& rng, int layers, bool integer_costs) {
  auto bytes = [&](int64_t high) {
    if (rng() % 8 == 0) return int64_t{0};
    return std::uniform_int_distribution<int64_t>(0, high)(rng);
  };
  auto cost = [&] {
    if (integer_costs) return static_cast<double>(std::uniform_int_distribution<int>(0, 6)(rng));
    return std::uniform_real_distribution<double>(0.0, 3.0)(rng);
  };
  ChainCosts chain;
  chain.before_bytes = bytes(60);
  chain.head_bytes = bytes(150);
  for (int l = 0; l < layers; ++l) {
    LayerCosts layer;
    layer.saved_bytes = bytes(100);
    layer.selective_bytes = std::uniform_int_distribution<int64_t>(0, layer.saved_bytes)(rng);
    layer.output_bytes = std::uniform_int_distribution<int64_t>(0, layer.selective_bytes)(rng);
    layer.forward_cost = cost();
    layer.selective_cost = cost();
    chain.layers.push_back(layer);
  }
  return chain;
}

// One schedule and what the brute force compares.
struct Scored {
  std::string pattern;
  double cost = 0.0;
  int64_t peak = 0;
  int64_t kept_at_head = 0;  // P_L: what the layers keep while the head runs
};

// Every valid schedule of the chain ('f' only after 'F' or 'f'), scored with the library's
// activation_peak_bytes() and recompute_cost() (both checked against hand traces elsewhere).
inline std::vector<Scored> every_schedule(const ChainCosts& chain) {
  std::vector<std::string> patterns{""};
  for (size_t l = 0; l < chain.layers.size(); ++l) {
    std::vector<std::string> next;
    for (const std::string& p : patterns) {
      for (char c : {'.', 's', 'F', 'f'}) {
        if (c == 'f' && (p.empty() || (p.back() != 'F' && p.back() != 'f'))) continue;
        next.push_back(p + c);
      }
    }
    patterns = std::move(next);
  }
  std::vector<Scored> scored;
  for (const std::string& p : patterns) {
    const RecomputeSchedule schedule = schedule_of(p);
    int64_t kept_at_head = -1;
    for (const ActivationEvent& e : activation_timeline(chain, schedule)) {
      if (e.label == "backward head") kept_at_head = e.bytes;
    }
    scored.push_back(
        {p, recompute_cost(chain, schedule), activation_peak_bytes(chain, schedule), kept_at_head});
  }
  return scored;
}

// The brute-force optimum under a budget by the documented order: cost, then peak, then the bytes
// kept while the head runs, then the pattern in byte order. nullptr when nothing fits.
inline const Scored* brute_force_optimal(const std::vector<Scored>& all, int64_t budget) {
  const Scored* best = nullptr;
  for (const Scored& s : all) {
    if (s.peak > budget) continue;
    if (best == nullptr ||
        std::tie(s.cost, s.peak, s.kept_at_head, s.pattern) <
            std::tie(best->cost, best->peak, best->kept_at_head, best->pattern)) {
      best = &s;
    }
  }
  return best;
}

}  // namespace vramlab::recompute::testing
