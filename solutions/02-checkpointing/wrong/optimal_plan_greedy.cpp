// Known-wrong variant of exercise 02.2, kept whole: it rewrites most of the function.
// Mistake: greedy: recomputes the layer that frees the most bytes per cost, one layer at a
//   time, until the plan fits
// Caught by: OptimalPlan.CostsWhatTheExhaustiveSearchFindsOnRandomSmallChains
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/optimal_plan.h"

namespace vramlab::lesson02 {

namespace {

void validate(const CheckpointChain& chain) {
  if (chain.layers.empty()) throw UsageError("a checkpoint chain needs at least one layer, got 0");
  if (chain.before_bytes < 0 || chain.head_bytes < 0)
    throw UsageError("E and H must be >= 0 bytes, got " + std::to_string(chain.before_bytes) +
                     " and " + std::to_string(chain.head_bytes));
  for (size_t l = 0; l < chain.layers.size(); ++l) {
    const LayerCost& c = chain.layers[l];
    if (c.saved_bytes < 0 || c.output_bytes < 0 || c.output_bytes > c.saved_bytes)
      throw UsageError("layer " + std::to_string(l) + ": bad sizes F = " +
                       std::to_string(c.saved_bytes) + ", O = " + std::to_string(c.output_bytes));
    if (!std::isfinite(c.forward_cost) || c.forward_cost < 0)
      throw UsageError("layer " + std::to_string(l) +
                       ": forward cost must be finite and >= 0, got " +
                       std::to_string(c.forward_cost));
  }
}

// The peak of a plan of kept layers and one-layer spans.
int64_t peak_of(const CheckpointChain& chain, const std::vector<bool>& recomputed) {
  int64_t kept = chain.before_bytes, peak = kept;
  for (size_t l = 0; l < chain.layers.size(); ++l) {
    const LayerCost& c = chain.layers[l];
    if (recomputed[l]) {
      peak = std::max(peak, kept + c.saved_bytes);
      kept += c.output_bytes;
    } else {
      kept += c.saved_bytes;
    }
  }
  return std::max(peak, kept + chain.head_bytes);
}

}  // namespace

CheckpointPlan optimal_checkpoint_plan(const CheckpointChain& chain, int64_t budget_bytes) {
  validate(chain);
  std::vector<bool> recomputed(chain.layers.size(), false);
  int64_t peak = peak_of(chain, recomputed);
  while (peak > budget_bytes) {
    size_t best = chain.layers.size();
    double best_ratio = -1;
    for (size_t l = 0; l < chain.layers.size(); ++l) {
      if (recomputed[l]) continue;
      const LayerCost& c = chain.layers[l];
      const double freed = static_cast<double>(c.saved_bytes - c.output_bytes);
      const double ratio =
          c.forward_cost > 0 ? freed / c.forward_cost : std::numeric_limits<double>::infinity();
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = l;
      }
    }
    if (best == chain.layers.size())
      throw UsageError("no checkpointing plan fits a budget of " + std::to_string(budget_bytes) +
                       " bytes: the smallest activation peak of any plan is " +
                       std::to_string(peak) + " bytes");
    recomputed[best] = true;
    peak = peak_of(chain, recomputed);
  }
  CheckpointPlan plan;
  plan.peak_bytes = peak;
  for (size_t l = 0; l < chain.layers.size(); ++l) {
    plan.layers.push_back(recomputed[l] ? nn::LayerPolicy{nn::Recompute::full, true}
                                        : nn::LayerPolicy{});
    if (recomputed[l]) plan.recompute_cost += chain.layers[l].forward_cost;
  }
  return plan;
}

}  // namespace vramlab::lesson02
