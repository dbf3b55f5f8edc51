/// \file
/// \brief Exercise 07.4: in which training phase the allocator holds the most memory that no
/// tensor uses (reserved − allocated: the cache and the fragments PYTORCH_CUDA_ALLOC_CONF's
/// expandable_segments and max_split_size_mb are about), from a recording's trace.
///
/// The one API shared by the stub (exercises/07-profiling/fragmentation_by_phase.cpp) and the
/// reference (solutions/07-profiling/fragmentation_by_phase.cpp). The runtime draws the same two
/// curves as the counter tracks of its Chrome trace (common/profile/chrome_trace.h).
///
/// **Allocated** bytes are the live requested bytes of exercise 07.1 (top_at_peak.h beside this
/// header): "alloc" adds its size, "free_completed" subtracts it. **Reserved** bytes are
/// what the segments hold: "segment_alloc" and "segment_map" (pages of an expandable segment)
/// add their size, "segment_free" and "segment_unmap" subtract it. The trace may start late, so
/// both start from the END: at the end of the trace, allocated is the sum of the "requested_size"
/// of every block of "segments" whose state is not "inactive", and reserved is the sum of the
/// segments' "total_size"; the values before the first entry are those minus what the trace
/// added.
///
/// **The gap** reserved − allocated is taken after each entry and charged to the phase running
/// at the entry's time: the innermost profile::Span of kind phase with start_ns ≤ t < end_ns,
/// where t is the entry's "time_ns" minus the recording's origin_ns ("none" when no phase span
/// holds it; its name, e.g. "backward", otherwise). Every entry counts, whatever its action.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/profile/recording.h"

namespace vramlab::lesson07 {

/// The worst moment of one phase.
struct PhaseGap {
  std::string phase;                ///< the phase span's name, or "none"
  std::int64_t entries = 0;         ///< trace entries that happened in the phase
  std::int64_t gap_bytes = 0;       ///< the largest reserved − allocated after one of them
  std::int64_t event = -1;          ///< the first entry (index in device_traces[0]) that reached it
  std::int64_t reserved_bytes = 0;  ///< reserved bytes there
  std::int64_t allocated_bytes = 0;  ///< allocated bytes there
};

/// Exercise 07.4: the largest gap per phase (see the file comment).
/// \param recording the snapshot (with "time_ns" on its entries) and the spans.
/// \return one entry per phase with at least one trace entry, by gap_bytes (largest first), then
///         phase name (ascending): the first is the phase where fragmentation peaks. Empty for an
///         empty trace.
/// \throws vramlab::UsageError naming the key when "segments" or "device_traces" is missing, or an
///         entry or segment the computation reads lacks its numeric field.
std::vector<PhaseGap> fragmentation_by_phase(const profile::Recording& recording);

}  // namespace vramlab::lesson07
