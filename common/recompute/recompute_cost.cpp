// The recompute cost of a schedule.
#include "common/recompute/recompute_cost.h"

namespace vramlab::recompute {

double recompute_cost(const ChainCosts& costs, const RecomputeSchedule& schedule) {
  validate_schedule(schedule, costs.layers.size());
  double cost = 0.0;
  for (size_t l = 0; l < costs.layers.size(); ++l) {
    switch (schedule.layers[l].recompute) {
      case LayerRecompute::none:
        break;
      case LayerRecompute::full:
        cost += costs.layers[l].forward_cost;
        break;
      case LayerRecompute::selective:
        cost += costs.layers[l].selective_cost;
        break;
    }
  }
  return cost;
}

}  // namespace vramlab::recompute
