/// \file
/// \brief Exercise 04.3: how many bytes of gathered (full) parameters ZeRO-3 holds at each phase of
/// a training step, and the peak, with FSDP's per-block units, a tied embedding and prefetch.
///
/// The one API shared by the stub (exercises/04-zero/zero3_schedule.cpp) and the reference
/// (solutions/04-zero/zero3_schedule.cpp).
///
/// **Units.** FSDP wraps the model into units in store order: the embedding, blocks 0..L−1 and
/// the head (the final norm, and the LM head unless it is tied to the token embedding). Under
/// ZeRO-3 each rank keeps 1/N of every unit; before a unit is used its N shards are all-gathered
/// into the full, padded unit of p_u = ⌈n_u/N⌉·N elements, and the full copy is freed after use.
///
/// **Phases**, in order: forward_embedding, forward_layer 0..L−1, forward_head, (the loss),
/// backward_head, backward_layer L−1..0, backward_embedding: 2L + 4 phases.
///
/// **The schedule** (the runtime's, common/dist): in each pass (forward, backward) a unit is
/// gathered before the first phase of that pass that uses it and released after the last one:
///   - forward: the embedding is used by forward_embedding, and by forward_head too when tied
///     (the LM head's matmul reads the token embedding); block l by forward_layer l; the head by
///     forward_head;
///   - backward: the head by backward_head; block l by backward_layer l; the embedding by
///     backward_embedding, and by backward_head too when tied.
/// With prefetch (FSDP's forward_prefetch and BACKWARD_PRE), before the phase of block l the next
/// block of the pass (l+1 in the forward, l−1 in the backward) is gathered too, if there is one
/// and it is not already gathered; a prefetched block is released after its own phase, as any
/// other. Gathers happen before a phase and releases after it, so what a phase holds is every
/// unit gathered at or before it and not yet released. Activation recomputation is left out (a
/// recomputed block would be gathered once more for its recompute).
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::lesson04 {

/// What the schedule depends on.
struct Zero3Schedule {
  /// n_u of each unit in store order: embedding, blocks 0..L−1, head ((L + 2) entries, L ≥ 0).
  std::vector<int64_t> unit_numel;
  int64_t element_bytes = 2;     ///< bytes of one gathered parameter (2 for bf16, 4 for fp32)
  int64_t world_size = 1;        ///< N, the data-parallel ranks the units are sharded over
  bool tied_embeddings = false;  ///< the LM head reads the embedding unit's token table
  bool prefetch = false;         ///< gather the pass's next block with the current one
};

/// Exercise 04.3: bytes of gathered parameter units held during each phase (see the file
/// comment for the phases and the schedule).
/// \param schedule the units and the options.
/// \return (2L + 4) byte counts, one per phase in order (the loss, which holds nothing, is not a
///         phase here).
/// \throws vramlab::UsageError naming the value for fewer than 2 units, a unit of < 0 elements,
///         element_bytes < 1, N < 1, or bytes that do not fit in an int64_t.
std::vector<int64_t> zero3_gathered_bytes_per_phase(const Zero3Schedule& schedule);

/// Exercise 04.3: the most bytes of gathered parameter units held at once during a step: the
/// largest of zero3_gathered_bytes_per_phase. \param schedule as there. \return the peak.
/// \throws vramlab::UsageError as zero3_gathered_bytes_per_phase.
int64_t zero3_peak_gathered_bytes(const Zero3Schedule& schedule);

}  // namespace vramlab::lesson04
