/// \file
/// \brief What the recompute planner knows about a model: per layer, the bytes it saves for
/// backward under each choice and what recomputing it costs, plus what is saved outside the
/// layers.
///
/// The byte counts are what the runtime's saved-activation store really holds, in
/// allocator-rounded bytes, so that activation_peak_bytes() predicts the runtime's measured peak
/// exactly. The costs only have to be comparable between layers (seconds or FLOPs).
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::recompute {

/// One layer of the chain.
struct LayerCosts {
  int64_t saved_bytes = 0;      ///< F: everything the layer saves under `none`.
  int64_t selective_bytes = 0;  ///< S: what it keeps under `selective` (F minus the attention
                                ///< probabilities).
  int64_t output_bytes = 0;     ///< O: its output, the next layer's input; part of F and of S.
  double forward_cost = 0.0;    ///< Recomputing the whole layer (seconds or FLOPs).
  double selective_cost = 0.0;  ///< Recomputing only the attention probabilities (QKᵀ, softmax).
};

/// A chain of layers between an embedding and a head, as a decoder-only transformer is.
struct ChainCosts {
  std::vector<LayerCosts> layers;  ///< Layer 0 first.
  int64_t before_bytes = 0;        ///< E: saved before the first layer (the embedding output); live
                                   ///< for the whole step.
  int64_t head_bytes = 0;  ///< H: saved by the head (final norm, probabilities, losses), live
                           ///< from the end of the layers' forward until the head's backward.
};

/// Checks what the planner relies on: 0 ≤ O ≤ S ≤ F per layer, E ≥ 0, H ≥ 0, finite costs
/// ≥ 0, and E + H + Σ F small enough that no sum the planner forms overflows int64.
/// \param costs the chain.
/// \throws vramlab::InternalError naming the layer and the value for a negative or inconsistent
/// size or cost (a bug in whoever measured them).
/// \throws vramlab::UsageError when the total does not fit in int64 (the user's model is too
/// large to describe in bytes).
void validate_chain_costs(const ChainCosts& costs);

}  // namespace vramlab::recompute
