/// \file
/// \brief A self-contained HTML page (inline CSS and JavaScript, no network) that shows a memory
/// snapshot in PyTorch's schema the way pytorch.org/memory_viz does: the active-memory timeline,
/// the segment layout at any event (where fragmentation shows), and summary numbers.
///
/// Input schema: the dictionary of torch.cuda.memory._snapshot() (torch/cuda/memory.py; the
/// structures are SegmentInfo, BlockInfo and TraceEntry in c10/cuda/CUDACachingAllocator.h)
/// ("segments" with "blocks", "device_traces"[0] with actions alloc, free_requested,
/// free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot;
/// "allocator_settings"). vramlab extensions are used when present: "category" on blocks and trace
/// entries (parameter, gradient, optimizer_state, activation, temporary, input, other), and the
/// owner keys of common/profile/recording.h ("module", "phase", "tensor", and "frames" = a label
/// frame then the C++ frames, innermost first). Older vramlab snapshots (category but no owner
/// keys: "frames"[0] = {filename: label stack such as "forward/block3/attention", name: tensor})
/// and PyTorch's (every frame a real one) are read too.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace vramlab::report {

/// Numbers the HTML page shows in its summary, computed by replaying the trace.
///
/// "Allocated" counts live allocations (their requested sizes, as the trace records them);
/// "reserved" counts segments. The state before the first event is reconstructed from the final
/// "segments" by undoing the trace backwards (blocks live before recording began come from there).
struct MemoryTimelineSummary {
  size_t event_count = 0;                ///< entries in device_traces[0].
  uint64_t initial_allocated_bytes = 0;  ///< live before the first event.
  uint64_t initial_reserved_bytes = 0;   ///< reserved before the first event.
  uint64_t final_allocated_bytes = 0;    ///< live after the last event.
  uint64_t final_reserved_bytes = 0;     ///< reserved after the last event.
  uint64_t peak_allocated_bytes = 0;  ///< maximum of allocated over the timeline (start included).
  int64_t peak_allocated_event =
      -1;  ///< index of the event that reached it; -1 = before the first event.
  uint64_t peak_reserved_bytes = 0;  ///< maximum of reserved over the timeline.
  int64_t peak_reserved_event =
      -1;                  ///< index of the event that reached it; -1 = before the first event.
  size_t alloc_count = 0;  ///< "alloc" events.
  size_t free_count = 0;   ///< "free_completed" events.
  size_t segment_alloc_count = 0;  ///< "segment_alloc" and "segment_map" events.
  size_t segment_free_count = 0;   ///< "segment_free" and "segment_unmap" events.
  size_t oom_count = 0;            ///< "oom" events.
  size_t inconsistent_event_count =
      0;  ///< frees of unknown addresses, allocs over live ones (a wrapped ring buffer).
  /// Allocated bytes per category at the moment of peak allocation (categories with 0 omitted).
  std::map<std::string, uint64_t> peak_allocated_bytes_by_category;
};

/// Replays \p snapshot (device 0's trace, with common/snapshot/snapshot_replay.h) and computes its
/// MemoryTimelineSummary. A missing "device_traces" counts as no events.
/// \throws vramlab::UsageError (a std::invalid_argument) naming the field if "segments", a
///         segment's "blocks", or "device_traces" has the wrong JSON type, or an entry lacks a
///         non-negative integer address or size, or the bytes overflow 64 bits.
MemoryTimelineSummary summarize_memory_timeline(const nlohmann::json& snapshot);

/// Renders \p snapshot as a standalone HTML page: (a) active-memory timeline (blocks stacked in
/// allocation order against event index, coloured by category with PyTorch's profiler colours,
/// legend, peak marker; the largest 2,000 allocations are drawn one by one and the rest as one
/// "summarized" band; hovering an allocation shows its tensor, module, phase, category, size and
/// call stack below the plot, as memory_viz does, and a click pins it), (b) segment layout at the
/// event chosen with a slider (allocated vs free space per segment, largest free gap, event list),
/// (c) summary numbers and allocator settings. The data is embedded as JSON with '<', '>' and '&'
/// escaped, so no string in the snapshot can end the script element; frames, stacks and owners are
/// interned (each distinct one stored once), so the page grows with the events, not with their
/// stacks. \p title is the page title and heading (HTML-escaped here). \throws
/// std::invalid_argument as summarize_memory_timeline().
std::string render_memory_timeline_html(const nlohmann::json& snapshot, const std::string& title);

}  // namespace vramlab::report
