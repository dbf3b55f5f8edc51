/// \file
/// \brief Exercise 02.2: the checkpointing plan of least recompute cost whose activation peak fits
/// a memory budget.
///
/// The one API shared by the stub (exercises/02-checkpointing/optimal_plan.cpp) and the reference
/// (solutions/02-checkpointing/optimal_plan.cpp). Each layer either keeps everything it saved
/// (nn::Recompute::none) or belongs to a span of consecutive layers that recompute in full
/// (nn::Recompute::full, span_start on the span's first layer), spans of any length.
/// The tests compare your cost with an exhaustive search on small chains and run your plan on
/// the runtime (meta device), whose measured peak must equal the one you report and fit the
/// budget.
///
/// The peak is that of the saved-activations store over one training step, as the runtime
/// produces it (common/nn/decoder_model.cpp; exercise 02.1 walks the same timeline for identical
/// layers): the embedding saves E before the first layer. A layer saves its F_l while it runs
/// forward; a kept layer keeps all of it, a recomputed one then keeps only its output O_l (and,
/// inside a span, releases the previous layer's output, which was only its input). The head
/// saves H after the last layer; its backward releases it. The backward pass reaches a span at
/// its last layer, releases that layer's output, re-runs the span's forward from the output
/// kept before it (each layer saving its whole F_l) and then runs the span's backward, each
/// layer freeing what it saved; a kept layer's backward frees its F_l.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/saved_activations.h"

namespace vramlab::lesson02 {

/// One layer of the chain.
struct LayerCost {
  int64_t saved_bytes = 0;   ///< F_l: all the layer saves during its forward (≥ 0).
  int64_t output_bytes = 0;  ///< O_l: its output, part of F_l (0 ≤ O_l ≤ F_l).
  double forward_cost = 0;   ///< the cost of re-running its forward (finite, ≥ 0; e.g. FLOPs).
};

/// A chain of layers between the embedding and the head, in bytes of the saved-activations store.
struct CheckpointChain {
  std::vector<LayerCost> layers;  ///< in forward order (at least one).
  int64_t before_bytes = 0;       ///< E: saved before the first layer (≥ 0).
  int64_t head_bytes = 0;         ///< H: saved by the head after the last layer (≥ 0).
};

/// A plan and what it costs.
struct CheckpointPlan {
  /// One policy per layer: Recompute::none, or Recompute::full with span_start on the first
  /// layer of each span (a layer after a kept one always starts a span). A valid plan for
  /// nn::SavedActivations::set_plan.
  std::vector<nn::LayerPolicy> layers;
  double recompute_cost = 0;  ///< Σ forward_cost over the recomputed layers.
  int64_t peak_bytes = 0;     ///< the plan's activation peak over one step (see the file comment).
};

/// Exercise 02.2: the plan of least recompute_cost whose peak_bytes ≤ \p budget_bytes, choosing
/// per layer between keeping it and recomputing it in a span of any length. When several plans
/// cost the least, any one of them is accepted.
/// \param chain the layers, E and H. \param budget_bytes the largest activation peak allowed.
/// \return the plan, its cost and its peak.
/// \throws vramlab::UsageError naming the value for an empty chain, a negative size, O_l > F_l, a
///         negative or non-finite cost, bytes whose total overflows int64, and a budget below the
///         smallest peak any plan reaches (the message names the budget and that smallest peak).
CheckpointPlan optimal_checkpoint_plan(const CheckpointChain& chain, int64_t budget_bytes);

}  // namespace vramlab::lesson02
