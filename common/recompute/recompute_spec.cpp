// The `--recompute` forms and the hand schedules they make.
#include "common/recompute/recompute_spec.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/platform/errors.h"
#include "common/recompute/optimal_schedule.h"

namespace vramlab::recompute {

namespace {

// ⌈√n⌉ in integers, exact at perfect squares where std::sqrt may round either way.
int64_t ceil_sqrt(int64_t n) {
  int64_t k = 0;
  while (k * k < n) ++k;
  return k;
}

RecomputeSchedule uniform(std::string name, size_t count, LayerRecompute recompute) {
  RecomputeSchedule schedule{std::move(name), std::vector<LayerPlan>(count)};
  for (LayerPlan& plan : schedule.layers) {
    plan.recompute = recompute;
    plan.span_start = recompute == LayerRecompute::full;
  }
  return schedule;
}

}  // namespace

RecomputeSchedule make_schedule(const RecomputeSpec& spec, const ChainCosts& costs) {
  using Kind = RecomputeSpec::Kind;
  validate_chain_costs(costs);
  const size_t count = costs.layers.size();
  const std::string name = to_string(spec);
  switch (spec.kind) {
    case Kind::none:
      return uniform(name, count, LayerRecompute::none);
    case Kind::full:
      return uniform(name, count, LayerRecompute::full);
    case Kind::selective:
      return uniform(name, count, LayerRecompute::selective);
    case Kind::every: {
      if (spec.every < 1) throw InternalError("every:" + std::to_string(spec.every));
      RecomputeSchedule schedule = uniform(name, count, LayerRecompute::none);
      // A K beyond the chain steps past its end at once (and cannot overflow the index).
      const auto step =
          static_cast<size_t>(std::min<int64_t>(spec.every, 1 + std::ssize(costs.layers)));
      for (size_t l = 0; l < count; l += step) schedule.layers[l] = {LayerRecompute::full, true};
      return schedule;
    }
    case Kind::sqrt: {
      RecomputeSchedule schedule = uniform(name, count, LayerRecompute::full);
      const auto k = static_cast<size_t>(ceil_sqrt(static_cast<int64_t>(count)));
      for (size_t l = 0; l < count; ++l) schedule.layers[l].span_start = l % k == 0;
      return schedule;
    }
    case Kind::budget:
      if (spec.budget_bytes < 1) {
        throw InternalError("budget:" + std::to_string(spec.budget_bytes));
      }
      return optimal_schedule(costs, spec.budget_bytes);
  }
  throw InternalError("RecomputeSpec kind " + std::to_string(static_cast<int>(spec.kind)));
}

}  // namespace vramlab::recompute
