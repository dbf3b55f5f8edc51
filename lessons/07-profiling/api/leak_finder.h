/// \file
/// \brief Exercise 07.3: the leak from two snapshots: the owners whose live allocations grew
/// between them, largest growth first, with the growth per training step.
///
/// The one API shared by the stub (exercises/07-profiling/leak_finder.cpp) and the reference
/// (solutions/07-profiling/leak_finder.cpp). The runtime's answer is snapshot::compare_snapshots
/// (common/snapshot/snapshot_analysis.h), which `vramlab profile --compare A B` prints.
///
/// **Input**: two snapshots in torch.cuda.memory._snapshot()'s schema with vramlab's extension
/// keys (lessons/07-profiling/api/top_at_peak.h), taken \p steps_between training steps apart.
/// Only their "segments" are read, not their traces: a leak is what the program still holds.
///
/// **What is held**: the blocks whose "state" is "active_allocated", with their "requested_size"
/// (what the program asked for, as memory_viz's Active Memory Timeline draws it). Inactive blocks
/// are the allocator's cache (reserved, not allocated: it grows and shrinks with fragmentation,
/// not with leaks); "active_pending_free" blocks were already freed by the program.
///
/// **Owner**: the (module, phase, tensor) of a block, each "" when the key is missing. Addresses
/// and the order of segments and blocks mean nothing: a tensor allocated again after a step
/// usually lands elsewhere. (snapshot::compare_snapshots groups by module, tensor, category and
/// stack, and counts active_pending_free blocks too: on snapshots without a pending free, its
/// total growth is this one's.)
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace vramlab::lesson07 {

/// What one owner held in each snapshot.
struct OwnerGrowth {
  std::string module;             ///< the allocating module's path
  std::string phase;              ///< the phase it allocated in
  std::string tensor;             ///< the tensor's name
  std::int64_t count_before = 0;  ///< blocks held in the first snapshot
  std::int64_t count_after = 0;   ///< … in the second
  std::int64_t bytes_before = 0;  ///< requested bytes held in the first snapshot
  std::int64_t bytes_after = 0;   ///< … in the second
  /// (bytes_after − bytes_before) / steps_between, in double (a leak of 1 KiB over 3 steps
  /// grows by 341.33 bytes per step).
  double bytes_per_step = 0.0;
};

/// Exercise 07.3: the owners whose held bytes or held count grew from \p before to \p after.
/// \param before the earlier snapshot. \param after the later one.
/// \param steps_between training steps between the two snapshots (≥ 1).
/// \return those owners, by growth in bytes (largest first), then growth in count (largest
///         first), then (module, phase, tensor) ascending; owners that shrank or stayed are left
///         out.
/// \throws vramlab::UsageError naming the value for steps_between < 1, and naming the key when a
///         snapshot has no "segments" array or a held block lacks a numeric "requested_size".
std::vector<OwnerGrowth> leaked_owners(const nlohmann::json& before, const nlohmann::json& after,
                                       std::int64_t steps_between);

}  // namespace vramlab::lesson07
