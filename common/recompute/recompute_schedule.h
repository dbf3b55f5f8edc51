/// \file
/// \brief A recompute schedule (gradient checkpointing): per transformer layer, whether backward
/// finds its saved activations in memory, recomputes all of them from a kept input, or recomputes
/// only the attention probabilities.
///
/// Full recompute works on spans, as torch.utils.checkpoint does on a run of modules: a
/// span [a, b) keeps only its input (the output of layer a−1, kept by that layer anyway) and
/// the output of its last layer; backward re-runs the span's forward before going through it.
/// "Every layer checkpointed" is every layer `full` and each its own span; Chen et al. 2016
/// ("Training Deep Nets with Sublinear Memory Cost") group √L layers per span. They, and
/// checkpoint_sequential's `segments` argument, say "segments"; here a segment is the caching
/// allocator's (common/memory), so a run of recomputed layers is a span.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vramlab::recompute {

/// What backward does about one layer's saved activations.
enum class LayerRecompute {
  none,       ///< The layer keeps everything it saves; nothing is recomputed.
  full,       ///< The layer belongs to a full-recompute span and is re-run entirely.
  selective,  ///< Only the attention probabilities are dropped and recomputed (QKᵀ, softmax), as
              ///< Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
              ///< Transformer Models") §5 propose.
};

/// One layer's part of a schedule.
struct LayerPlan {
  LayerRecompute recompute = LayerRecompute::none;  ///< What backward does for this layer.
  /// Only for `full`: the layer opens a new span. A span is a maximal run of `full`
  /// layers from one span start to the layer before the next start (or the next non-full
  /// layer). A `full` layer after a non-full layer (or first in the chain) must start a span.
  bool span_start = false;

  /// \param other the plan to compare with. \return true when both fields are equal.
  bool operator==(const LayerPlan& other) const = default;
};

/// A schedule for a chain of layers, layer 0 first.
struct RecomputeSchedule {
  std::string name;               ///< How it was made, e.g. "sqrt" or "budget:20GiB".
  std::vector<LayerPlan> layers;  ///< One plan per layer.
};

/// \param recompute a layer's choice. \return "none", "full" or "selective".
std::string to_string(LayerRecompute recompute);

/// Checks the span rule and the length.
/// \param schedule the schedule. \param layer_count the number of layers of the chain it is for.
/// \throws vramlab::InternalError naming the first bad layer: a `full` layer that follows a
/// non-full one (or is layer 0) without starting a span, or a length other than layer_count.
void validate_schedule(const RecomputeSchedule& schedule, size_t layer_count);

/// \param schedule a schedule. \return the number of `full` layers (those re-run entirely).
size_t full_layer_count(const RecomputeSchedule& schedule);

/// One character per layer, layer 0 first: '.' none, 's' selective, 'F' a full layer that
/// starts a span, 'f' one that continues it. Meant for logs, test messages and the CLI, e.g.
/// "F.F.F." for every:2 on six layers.
/// \param schedule a schedule. \return the string, as long as the schedule.
std::string schedule_pattern(const RecomputeSchedule& schedule);

}  // namespace vramlab::recompute
