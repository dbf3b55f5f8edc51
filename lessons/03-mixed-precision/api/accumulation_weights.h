/// \file
/// \brief Exercise 03.3: gradient accumulation over micro-batches of unequal size: the weight of
/// each micro-batch's mean loss, and the split of a batch into micro-batches.
///
/// The one API shared by the stub (exercises/03-mixed-precision/accumulation_weights.cpp) and the
/// reference (solutions/03-mixed-precision/accumulation_weights.cpp). An optimizer step that
/// accumulates gradients runs K micro-batches one after the other, each with its own forward and
/// backward, and adds their gradients before the step. Micro-batch i holds n_i tokens that count
/// in the loss (its padding and ignored positions excluded; the last micro-batch may be short),
/// and its backward starts from w_i times the MEAN loss over its own n_i tokens, as
/// `torch.nn.functional.cross_entropy(..., reduction="mean", ignore_index=...)` returns it. The
/// weights must make the accumulated gradient equal the gradient of the mean loss over all
/// n_1 + … + n_K tokens of the batch, the gradient one large batch would give.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::lesson03 {

/// Exercise 03.3: the weight of each micro-batch's mean loss.
/// \param tokens (K) n_i, the tokens counted in micro-batch i's mean loss (≥ 0 each, at least one
///        > 0; a micro-batch with no counted token gets weight 0 and should run no backward: its
///        mean loss is 0/0). Counts and their sum may exceed 2^32 (they must fit in int64).
/// \return (K) w_i, so that Σ w_i · ∇(mean loss of micro-batch i) = ∇(mean loss over all
///         tokens).
/// \throws vramlab::UsageError naming the value for an empty list, a negative count, a sum of 0
///         or a sum that overflows int64.
std::vector<double> accumulation_loss_weights(const std::vector<int64_t>& tokens);

/// Exercise 03.3: splits a batch of \p sequences sequences into \p micro_batches micro-batches of
/// consecutive sequences, as evenly as possible: sizes differ by at most one and the larger ones
/// come first (10 in 4: 3, 3, 2, 2). The runtime's `--grad-accum` splits its batch this way.
/// \param sequences B (≥ 1). \param micro_batches K (1 ≤ K ≤ B: no micro-batch is empty).
/// \return (K) the number of sequences of each micro-batch, summing to B.
/// \throws vramlab::UsageError naming the value for B < 1, K < 1 or K > B.
std::vector<int64_t> split_micro_batches(int64_t sequences, int64_t micro_batches);

}  // namespace vramlab::lesson03
