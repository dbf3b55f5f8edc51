/// \file
/// \brief Gradient accumulation's split of an optimizer batch into micro-batches.
///
/// Accumulation runs K forward/backward passes and one optimizer step: the update of the K
/// micro-batches together with the activations of one. Splitting a batch of B sequences into K
/// gives micro-batches of about B/K; when K does not divide B (or padding is ignored) the
/// micro-batches hold different numbers of tokens, so each micro-batch's mean
/// loss is weighted by its share of the step's tokens (n_i / Σn), not by 1/K: the accumulated
/// gradient is then the gradient of the mean over all B·T tokens, the same as without accumulation.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::train {

/// Splits \p batch sequences into \p micro_batches parts as evenly as possible: the first
/// batch % K hold ⌈B/K⌉, the rest ⌊B/K⌋ (so the first is the largest, and sets the peak).
/// \param batch B ≥ 1. \param micro_batches K in [1, B].
/// \return K sizes summing to B.
/// \throws vramlab::UsageError naming K when it is < 1 or > B (an empty micro-batch).
std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t micro_batches);

}  // namespace vramlab::train
