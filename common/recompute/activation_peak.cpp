// One walk over a step's saved-activation store (the file comment of activation_peak.h), shared
// by the labelled timeline and the peak so the two cannot disagree.
#include "common/recompute/activation_peak.h"

#include <algorithm>
#include <string>

namespace vramlab::recompute {

namespace {

enum class EventKind {
  start,
  forward_layer,
  layer_kept,
  forward_head,
  backward_head,
  recompute_span,
  backward_layer,
};

// Calls sink(kind, first layer, last layer, A) after every change of A.
template <typename Sink>
void walk(const ChainCosts& costs, const RecomputeSchedule& schedule, Sink&& sink) {
  validate_chain_costs(costs);
  validate_schedule(schedule, costs.layers.size());
  const std::vector<LayerCosts>& layers = costs.layers;
  const std::vector<LayerPlan>& plans = schedule.layers;
  const auto count = static_cast<int64_t>(layers.size());
  // What layer l holds once its forward is done, counting a span's running output once.
  auto kept = [&](int64_t l) {
    switch (plans[l].recompute) {
      case LayerRecompute::none:
        return layers[l].saved_bytes;
      case LayerRecompute::selective:
        return layers[l].selective_bytes;
      case LayerRecompute::full:
        break;
    }
    return layers[l].output_bytes;
  };
  int64_t bytes = costs.before_bytes;
  sink(EventKind::start, 0, 0, bytes);
  for (int64_t l = 0; l < count; ++l) {
    bytes += layers[l].saved_bytes;
    sink(EventKind::forward_layer, l, l, bytes);
    bytes -= layers[l].saved_bytes - kept(l);
    // Inside a span the previous output was only this layer's input: the span's start
    // keeps the input that re-running needs.
    if (plans[l].recompute == LayerRecompute::full && !plans[l].span_start) {
      bytes -= layers[l - 1].output_bytes;
    }
    sink(EventKind::layer_kept, l, l, bytes);
  }
  bytes += costs.head_bytes;
  sink(EventKind::forward_head, 0, 0, bytes);
  bytes -= costs.head_bytes;
  sink(EventKind::backward_head, 0, 0, bytes);
  for (int64_t l = count - 1; l >= 0;) {
    if (plans[l].recompute != LayerRecompute::full) {
      bytes -= kept(l);
      sink(EventKind::backward_layer, l, l, bytes);
      --l;
      continue;
    }
    int64_t first = l;
    while (!plans[first].span_start) --first;
    bytes -= layers[l].output_bytes;
    for (int64_t k = first; k <= l; ++k) bytes += layers[k].saved_bytes;
    sink(EventKind::recompute_span, first, l, bytes);
    for (int64_t k = l; k >= first; --k) {
      bytes -= layers[k].saved_bytes;
      sink(EventKind::backward_layer, k, k, bytes);
    }
    l = first - 1;
  }
}

std::string label(EventKind kind, int64_t first, int64_t last) {
  // Appended piece by piece: g++ 12 at -O3 warns (-Wrestrict) on chains of string operator+.
  std::string text;
  switch (kind) {
    case EventKind::start:
      return "start";
    case EventKind::forward_head:
      return "forward head";
    case EventKind::backward_head:
      return "backward head";
    case EventKind::forward_layer:
      text = "forward layer ";
      break;
    case EventKind::layer_kept:
      text = "layer ";
      break;
    case EventKind::recompute_span:
      text = "recompute span ";
      break;
    case EventKind::backward_layer:
      text = "backward layer ";
      break;
  }
  text.append(std::to_string(first));
  if (kind == EventKind::layer_kept) text.append(" kept");
  if (kind == EventKind::recompute_span && first != last) {
    text.append(1, '-').append(std::to_string(last));
  }
  return text;
}

}  // namespace

std::vector<ActivationEvent> activation_timeline(const ChainCosts& costs,
                                                 const RecomputeSchedule& schedule) {
  std::vector<ActivationEvent> events;
  walk(costs, schedule, [&](EventKind kind, int64_t first, int64_t last, int64_t bytes) {
    events.push_back({label(kind, first, last), bytes});
  });
  return events;
}

int64_t activation_peak_bytes(const ChainCosts& costs, const RecomputeSchedule& schedule) {
  int64_t peak = 0;
  walk(costs, schedule,
       [&](EventKind, int64_t, int64_t, int64_t bytes) { peak = std::max(peak, bytes); });
  return peak;
}

}  // namespace vramlab::recompute
