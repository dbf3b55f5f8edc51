/// \file
/// \brief Exercise 07.1: the peak of a snapshot's trace and the k largest allocations live there,
/// with their owners: what memory_viz's Active Memory Timeline shows when one clicks the top of
/// the peak.
///
/// The one API shared by the stub (exercises/07-profiling/top_at_peak.cpp) and the reference
/// (solutions/07-profiling/top_at_peak.cpp). The runtime's own answer is
/// snapshot::analyse_peak (common/snapshot/snapshot_analysis.h).
///
/// **Input**: a snapshot in torch.cuda.memory._snapshot()'s schema (one device: its
/// "device_traces"[0] and every block of its "segments"), with vramlab's extension keys
/// "module", "phase" and "tensor" on blocks and trace entries (common/profile/recording.h); a key
/// that is missing (a PyTorch snapshot) reads as "".
///
/// **What is live**: an allocation is live from its "alloc" entry until its "free_completed"
/// entry, with the "size" of the alloc (the requested bytes). A "free_requested" does not end it:
/// the block stays reserved for its stream until the free completes. Every other action
/// (segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot) changes nothing live.
///
/// **Before the trace**: the ring buffer keeps only the newest events, and recording may start
/// late, so some allocations were live before the first entry. They are (a) the blocks of
/// "segments" whose state is not "inactive" and that are still live at the end of the trace
/// without an alloc entry for their address there (size: the block's "requested_size", owner: the
/// block's keys), and (b) the allocations whose "free_completed" appears with no live alloc at that
/// address before it (size and owner: the free entry's).
///
/// **The peak**: live bytes are the sum of the live allocations' sizes. They are taken before the
/// first entry (index −1) and after each entry i; the peak is the largest, and of equal values the
/// earliest. The top allocations are those live at that moment: largest first, equal sizes by
/// address, lowest first.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vramlab::lesson07 {

/// One allocation live at the peak.
struct PeakAllocation {
  std::uint64_t address = 0;  ///< the block's address
  std::int64_t bytes = 0;     ///< requested bytes
  std::string module;         ///< the module that allocated it ("" when not recorded)
  std::string phase;          ///< the phase it was allocated in ("" when not recorded)
  std::string tensor;         ///< the tensor's name ("" when not recorded)
  /// Index in device_traces[0] of its alloc entry; −1 when it was live before the trace began.
  std::int64_t alloc_event = -1;
};

/// The peak and the largest allocations there.
struct TopAtPeak {
  std::int64_t peak_bytes = 0;  ///< the largest live requested bytes (see the file comment)
  /// The index of the entry after which the peak was reached; −1 when it is the state before the
  /// first entry (or the trace is empty).
  std::int64_t peak_event = -1;
  std::vector<PeakAllocation> top;  ///< at most k, largest first, equal sizes by address
};

/// Exercise 07.1: replays the trace, finds the peak and returns the \p k largest allocations live
/// there (see the file comment for every rule).
/// \param snapshot the snapshot's JSON.
/// \param k how many allocations to return (fewer when fewer were live; 0 returns none).
/// \return the peak, its event and the top allocations.
/// \throws vramlab::UsageError naming the key when "segments" or "device_traces" is missing or not
///         an array, or an entry the replay reads lacks a numeric "addr"/"address" or
///         "size"/"requested_size", or a size is negative.
TopAtPeak top_at_peak(const nlohmann::json& snapshot, std::size_t k);

}  // namespace vramlab::lesson07
