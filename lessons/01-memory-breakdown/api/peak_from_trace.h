/// \file
/// \brief Exercise 01.3: the peak of allocated memory in an allocation trace, and what is live at
/// its first moment.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/peak_from_trace.cpp) and the
/// reference (solutions/01-memory-breakdown/peak_from_trace.cpp). Sizes count as the caching
/// allocator's "allocated bytes" figure does: a request of n > 0 bytes holds n rounded up to a
/// multiple of 512 B (kAllocationRoundingBytes); a 0-byte request holds nothing and, like the
/// allocator's nullptr for it, is never listed as live (its name must still be freed before reuse).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/memory_category.h"

namespace vramlab::lesson01 {

/// The caching allocator's rounding unit (PyTorch's kMinBlockSize).
inline constexpr int64_t kAllocationRoundingBytes = 512;

/// What a trace event does.
enum class TraceAction {
  kAlloc,  ///< a tensor is allocated.
  kFree,   ///< a live tensor is freed.
};

/// One event of an allocation trace.
struct TraceEvent {
  TraceAction action = TraceAction::kAlloc;  ///< alloc or free.
  std::string name;                          ///< the tensor's name (unique among live tensors).
  int64_t size_bytes = 0;                    ///< requested bytes (allocs; ignored by frees).
  memory::MemoryCategory category = memory::MemoryCategory::other;  ///< what it is for.
};

/// The peak of a trace.
struct PeakReport {
  int64_t peak_bytes = 0;         ///< the highest allocated bytes (rounded sizes) at any moment.
  int64_t peak_event_index = -1;  ///< the first event after which the peak is reached (-1: none).
  std::vector<std::string> live_at_peak;  ///< names live right after that event, sorted.
};

/// Exercise 01.3: replays \p trace and reports its peak and what is live at its first moment.
/// \param trace the events, in order.
/// \return the peak report (peak 0 and index -1 when nothing is ever allocated).
/// \throws vramlab::UsageError naming the event for a negative size, an alloc of a name already
///         live, or a free of a name that is not live.
PeakReport find_peak(const std::vector<TraceEvent>& trace);

}  // namespace vramlab::lesson01
