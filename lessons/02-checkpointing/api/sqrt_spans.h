/// \file
/// \brief Exercise 02.1: Chen et al.'s √N spans of a layer chain, and the activation peak a
/// split into spans gives when every layer is recomputed in full.
///
/// The one API shared by the stub (exercises/02-checkpointing/sqrt_spans.cpp) and the
/// reference (solutions/02-checkpointing/sqrt_spans.cpp). The tests run one training step of
/// real models on the meta device with the plan your span starts describe (every layer
/// nn::Recompute::full, a span starting at each start) and compare your peak with the
/// runtime's measured nn::SavedActivations::peak_bytes().
///
/// What the runtime does (common/nn/decoder_model.cpp), in the bytes of the saved-activations
/// store: the embedding saves E bytes before the first layer. Each layer saves its F bytes while
/// it runs forward; because it recomputes in full, it then keeps only its output (O bytes), and
/// inside a span the previous layer's output is released, since it was only this layer's
/// input. So each span ends the forward pass holding the output of its last layer, its
/// checkpoint. After the layers the head (final norm, probabilities, losses) saves H bytes, which
/// its backward releases. The backward pass reaches each span at its last layer: it releases
/// the span's checkpoint, re-runs the span's forward from the previous checkpoint (every
/// layer saving all of its F), then runs the span's backward layer by layer, each freeing what
/// it saved.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::lesson02 {

/// A chain of identical layers, in bytes of the saved-activations store.
struct ChainShape {
  int64_t layers = 0;        ///< L, the number of layers (> 0).
  int64_t layer_bytes = 0;   ///< F, all one layer saves during its forward (≥ 0).
  int64_t output_bytes = 0;  ///< O, the layer's output, part of F (0 ≤ O ≤ F).
  int64_t before_bytes = 0;  ///< E, saved before the first layer (the embedding's output, ≥ 0).
  int64_t head_bytes = 0;    ///< H, saved by the head after the last layer (≥ 0).
};

/// Exercise 02.1, part 1: Chen et al. 2016's √N split ("Training Deep Nets with Sublinear
/// Memory Cost", §4.1): spans of k = ⌈√L⌉ consecutive layers (the paper's "segments"), the last
/// one possibly shorter.
/// \param layers L (> 0, any int64 value whose ⌈L / k⌉ starts fit in memory).
/// \return the first layer of each span: 0, k, 2k, … (ascending, all < L).
/// \throws vramlab::UsageError naming the value for L ≤ 0.
std::vector<int64_t> sqrt_span_starts(int64_t layers);

/// Exercise 02.1, part 2: the peak of the saved-activations store over one training step when
/// every layer recomputes in full and a span starts at each of \p span_starts (the runtime's
/// plan: nn::LayerPolicy{Recompute::full, span_start = l ∈ span_starts}).
/// \param chain the chain's sizes. \param span_starts ascending, without repeats, in [0, L),
/// the first one 0 (layer 0 always starts a span).
/// \return the peak in bytes, exact for chains of real models (tens of GiB per layer).
/// \throws vramlab::UsageError naming the value for L ≤ 0, a negative size, O > F, an empty
///         list, a first start other than 0, a start outside [0, L) or not above the one before
///         it, or a peak that overflows int64.
int64_t checkpointed_activation_peak(const ChainShape& chain,
                                     const std::vector<int64_t>& span_starts);

}  // namespace vramlab::lesson02
