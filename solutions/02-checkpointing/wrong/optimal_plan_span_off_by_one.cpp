// Known-wrong variant of exercise 02.2 (kept for `vramlab verify`, never linked into a lesson):
// takes a span's re-run bytes from prefix sums with an off-by-one in the span's length:
// prefix[p - 1] - prefix[l] covers layers l..p-2, missing the span's last layer.
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/optimal_plan.h"

namespace vramlab::lesson02 {

namespace {

void validate(const CheckpointChain& chain) {
  if (chain.layers.empty()) throw UsageError("a checkpoint chain needs at least one layer, got 0");
  auto require_non_negative = [](int64_t v, const std::string& what) {
    if (v < 0) throw UsageError(what + " must be >= 0 bytes, got " + std::to_string(v));
  };
  require_non_negative(chain.before_bytes, "bytes before the first layer E");
  require_non_negative(chain.head_bytes, "head bytes H");
  int64_t total = chain.before_bytes;
  auto add = [&total](int64_t v) {
    if (total > std::numeric_limits<int64_t>::max() - v)
      throw UsageError("the chain's bytes overflow int64 (" + std::to_string(total) + " + " +
                       std::to_string(v) + ")");
    total += v;
  };
  add(chain.head_bytes);
  for (size_t l = 0; l < chain.layers.size(); ++l) {
    const LayerCost& c = chain.layers[l];
    const std::string layer = "layer " + std::to_string(l);
    require_non_negative(c.saved_bytes, layer + ": saved bytes F");
    require_non_negative(c.output_bytes, layer + ": output bytes O");
    if (c.output_bytes > c.saved_bytes)
      throw UsageError(layer + ": output bytes O = " + std::to_string(c.output_bytes) +
                       " cannot exceed its saved bytes F = " + std::to_string(c.saved_bytes));
    if (!std::isfinite(c.forward_cost) || c.forward_cost < 0)
      throw UsageError(layer + ": forward cost must be finite and >= 0, got " +
                       std::to_string(c.forward_cost));
    add(c.saved_bytes);
  }
}

// One state of the program: the layers before `position` decided, keeping `kept` bytes.
struct State {
  int64_t kept = 0;
  double cost = 0;    // the cost program's value
  int64_t peak = 0;   // the peak program's value: the highest candidate so far
  int64_t from = -1;  // the position this state was reached from
  size_t parent = 0;  // index of that state in its (pruned) front
  bool span = false;  // layers from..position-1 recompute as one span (else `from` kept)
};

// Keeps the states no other state beats in both kept bytes and `value`.
template <typename Value>
void prune(std::vector<State>& front, Value value) {
  std::stable_sort(front.begin(), front.end(), [&](const State& a, const State& b) {
    return a.kept != b.kept ? a.kept < b.kept : value(a) < value(b);
  });
  std::vector<State> kept;
  for (const State& s : front)
    if (kept.empty() || value(s) < value(kept.back())) kept.push_back(s);
  front = std::move(kept);
}

// The fronts of every position, for a program whose value is cost (minimise_peak false, states
// above the budget dropped) or the peak so far (minimise_peak true, no budget). Position p's front
// is pulled from the earlier ones: p - 1 with layer p - 1 kept, or any l < p with layers l..p-1 as
// one span; pruning it before it is used keeps it small (one state per distinct cost when the
// layers are alike).
std::vector<std::vector<State>> run_program(const CheckpointChain& chain, int64_t budget,
                                            bool minimise_peak) {
  const auto L = static_cast<int64_t>(chain.layers.size());
  auto value = [minimise_peak](const State& s) {
    return minimise_peak ? static_cast<double>(s.peak) : s.cost;
  };
  std::vector<std::vector<State>> fronts;  // (L + 1)
  fronts.reserve(static_cast<size_t>(L + 1));
  fronts.push_back({State{chain.before_bytes, 0.0, chain.before_bytes, -1, 0, false}});
  std::vector<int64_t> prefix(static_cast<size_t>(L + 1), 0);  // (L + 1): F of layers < i
  for (int64_t l = 0; l < L; ++l)
    prefix[static_cast<size_t>(l + 1)] =
        prefix[static_cast<size_t>(l)] + chain.layers[static_cast<size_t>(l)].saved_bytes;
  for (int64_t p = 1; p <= L; ++p) {
    std::vector<State> front;
    const LayerCost& layer = chain.layers[static_cast<size_t>(p - 1)];
    // Keep layer p - 1: its bytes stay until its backward.
    const std::vector<State>& before = fronts[static_cast<size_t>(p - 1)];
    for (size_t i = 0; i < before.size(); ++i) {
      const int64_t kept = before[i].kept + layer.saved_bytes;
      if (kept <= budget)
        front.push_back(
            State{kept, before[i].cost, std::max(before[i].peak, kept), p - 1, i, false});
    }
    // A span l..p-1, re-run in backward on top of what the layers before l keep.
    double cost = 0;
    for (int64_t l = p - 1; l >= 0; --l) {
      // The mistake: layers l..p-2; the span l..p-1 needs prefix[p] - prefix[l].
      const int64_t rerun = prefix[static_cast<size_t>(p - 1)] - prefix[static_cast<size_t>(l)];
      cost += chain.layers[static_cast<size_t>(l)].forward_cost;
      const std::vector<State>& from = fronts[static_cast<size_t>(l)];
      for (size_t i = 0; i < from.size(); ++i) {
        const State& s = from[i];
        if (s.kept + rerun > budget) continue;
        front.push_back(State{s.kept + layer.output_bytes, s.cost + cost,
                              std::max(s.peak, s.kept + rerun), l, i, true});
      }
    }
    prune(front, value);
    fronts.push_back(std::move(front));
  }
  return fronts;
}

CheckpointPlan plan_of(const CheckpointChain& chain, const std::vector<std::vector<State>>& fronts,
                       const State& last) {
  CheckpointPlan plan;
  plan.layers.assign(chain.layers.size(), nn::LayerPolicy{});
  plan.peak_bytes = std::max(last.peak, last.kept + chain.head_bytes);
  plan.recompute_cost = last.cost;
  auto position = static_cast<int64_t>(chain.layers.size());
  const State* s = &last;
  while (s->from >= 0) {
    for (int64_t l = s->from; l < position; ++l)
      plan.layers[static_cast<size_t>(l)] =
          s->span ? nn::LayerPolicy{nn::Recompute::full, l == s->from} : nn::LayerPolicy{};
    position = s->from;
    s = &fronts[static_cast<size_t>(position)][s->parent];
  }
  return plan;
}

}  // namespace

CheckpointPlan optimal_checkpoint_plan(const CheckpointChain& chain, int64_t budget_bytes) {
  validate(chain);
  const auto fronts = run_program(chain, budget_bytes, /*minimise_peak=*/false);
  const State* best = nullptr;
  for (const State& s : fronts.back())
    if (s.kept + chain.head_bytes <= budget_bytes && (best == nullptr || s.cost < best->cost))
      best = &s;
  if (best == nullptr) {
    // Nothing fits: the smallest peak of any plan, by the same program minimising the peak.
    const auto peaks = run_program(chain, std::numeric_limits<int64_t>::max(), true);
    int64_t smallest = std::numeric_limits<int64_t>::max();
    for (const State& s : peaks.back())
      smallest = std::min(smallest, std::max(s.peak, s.kept + chain.head_bytes));
    throw UsageError("no checkpointing plan fits a budget of " + std::to_string(budget_bytes) +
                     " bytes: the smallest activation peak of any plan is " +
                     std::to_string(smallest) + " bytes");
  }
  return plan_of(chain, fronts, *best);
}

}  // namespace vramlab::lesson02
