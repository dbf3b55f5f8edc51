// The schedule's own rules: the span rule, counting, the one-line pattern.
#include "common/recompute/recompute_schedule.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::recompute {

std::string to_string(LayerRecompute recompute) {
  switch (recompute) {
    case LayerRecompute::none:
      return "none";
    case LayerRecompute::full:
      return "full";
    case LayerRecompute::selective:
      return "selective";
  }
  throw InternalError("LayerRecompute " + std::to_string(static_cast<int>(recompute)));
}

void validate_schedule(const RecomputeSchedule& schedule, size_t layer_count) {
  if (schedule.layers.size() != layer_count) {
    throw InternalError("schedule '" + schedule.name + "' has " +
                        std::to_string(schedule.layers.size()) + " layers, the chain " +
                        std::to_string(layer_count));
  }
  bool previous_full = false;
  for (size_t l = 0; l < layer_count; ++l) {
    const LayerPlan& plan = schedule.layers[l];
    const bool full = plan.recompute == LayerRecompute::full;
    if (full && !previous_full && !plan.span_start) {
      // Without a start the span would have no kept input to re-run from.
      throw InternalError("schedule '" + schedule.name + "': layer " + std::to_string(l) +
                          " is full after a " + (l == 0 ? "chain start" : "non-full layer") +
                          " but does not start a span");
    }
    if (plan.recompute != LayerRecompute::none && plan.recompute != LayerRecompute::full &&
        plan.recompute != LayerRecompute::selective) {
      throw InternalError("schedule '" + schedule.name + "': layer " + std::to_string(l) +
                          " has recompute " + std::to_string(static_cast<int>(plan.recompute)));
    }
    previous_full = full;
  }
}

size_t full_layer_count(const RecomputeSchedule& schedule) {
  size_t count = 0;
  for (const LayerPlan& plan : schedule.layers) count += plan.recompute == LayerRecompute::full;
  return count;
}

std::string schedule_pattern(const RecomputeSchedule& schedule) {
  std::string pattern;
  pattern.reserve(schedule.layers.size());
  for (const LayerPlan& plan : schedule.layers) {
    switch (plan.recompute) {
      case LayerRecompute::none:
        pattern += '.';
        break;
      case LayerRecompute::selective:
        pattern += 's';
        break;
      case LayerRecompute::full:
        pattern += plan.span_start ? 'F' : 'f';
        break;
    }
  }
  return pattern;
}

}  // namespace vramlab::recompute
