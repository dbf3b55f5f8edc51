/// \file
/// \brief Replaying a snapshot's allocation trace (torch.cuda.memory._snapshot()'s schema): the
/// one replay the HTML memory timeline, the snapshot analysis and the Chrome trace share.
///
/// A snapshot holds the final state ("segments" and their blocks) and a trace that may have begun
/// after memory was already in use. SnapshotTrace reconstructs the state before the first event by
/// undoing the trace backwards from the final segments; ReplayState then applies the events
/// forwards. Bytes of a block are its requested size, as the trace records them and
/// memory_viz's Active Memory Timeline draws them ("size" where no requested size is recorded).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::snapshot {

/// A trace entry's "action" (the TraceEntry actions of c10/cuda/CUDACachingAllocator.h).
enum class SnapshotAction : std::uint8_t {
  alloc,           ///< a block was handed out
  free_requested,  ///< the caller freed a block (still in use by a stream)
  free_completed,  ///< the block went back to the cache: it stops counting as allocated
  segment_alloc,   ///< a segment was reserved
  segment_free,    ///< a segment was released
  segment_map,     ///< pages of an expandable segment were mapped
  segment_unmap,   ///< pages of an expandable segment were unmapped
  oom,             ///< an allocation failed
  snapshot,        ///< a snapshot was taken
  other,           ///< any action this replay does not know (ignored)
};

/// The action names in SnapshotAction's order ("alloc", ..., "snapshot", "other").
inline constexpr std::array<std::string_view, 10> kSnapshotActionNames = {
    "alloc",        "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map",    "segment_unmap",  "oom",
    "snapshot",     "other"};

/// One trace entry, parsed.
struct SnapshotEvent {
  SnapshotAction action = SnapshotAction::other;  ///< see SnapshotAction
  std::uint64_t address = 0;                      ///< "addr"; for oom "device_free" (0 if absent)
  std::uint64_t size_bytes = 0;  ///< "size" (0 if absent on oom, snapshot and unknown actions)
  /// The entry itself, for the keys a reader wants (category, frames, vramlab's extension keys).
  const nlohmann::json* entry = nullptr;
};

/// One live allocation during a replay.
struct ReplayBlock {
  std::uint64_t size_bytes = 0;  ///< requested bytes
  /// Index in the trace of the alloc event that made it; -1 when it was live before the trace.
  std::int64_t alloc_event = -1;
  /// The JSON object that describes it (its keys: category, frames, module ...): its alloc entry,
  /// or for a block live before the trace the free_completed entry that frees it, or its block in
  /// the final "segments".
  const nlohmann::json* description = nullptr;
};

/// Live blocks by address.
using ReplayBlocks = std::map<std::uint64_t, ReplayBlock>;
/// Reserved bytes by segment address.
using ReplaySegments = std::map<std::uint64_t, std::uint64_t>;

/// Which trace a SnapshotTrace reads.
struct SnapshotTraceOptions {
  /// The index into "device_traces".
  std::size_t device = 0;
  /// Take only the segments whose "device" is \p device (a segment without the key is device 0's).
  /// Off, every segment counts (the HTML timeline's behaviour, which reads device 0's trace).
  bool segments_of_device_only = false;
  /// Throw when "segments" or "device_traces" is missing, or \p device is not an index into
  /// "device_traces". Off, a missing key is empty and a missing device has no events.
  bool strict = false;
};

/// \param segment one entry of a snapshot's "segments". \param where its name in messages
/// ("segments[3]").
/// \return its "device" (0 without the key).
/// \throws vramlab::UsageError naming where + ".device" when it is not a non-negative integer.
std::uint64_t segment_device(const nlohmann::json& segment, const std::string& where);

/// A snapshot's trace for one device, parsed, with the state before its first event.
/// Holds pointers into the snapshot, which must outlive it.
class SnapshotTrace {
 public:
  /// Parses and reconstructs (see the file comment).
  /// \param snapshot torch.cuda.memory._snapshot()'s dictionary; must outlive this object.
  /// \param options which device, which segments, how strict.
  /// \throws vramlab::UsageError naming the field when the snapshot is not in the schema: not an
  /// object, "segments", a segment's "blocks" or "device_traces" not arrays, a segment or an
  /// active block without a non-negative integer address or size, an entry without a string
  /// "action" or, for an allocation or segment action, without "addr" and "size"; with
  /// options.strict also a missing key or device (see SnapshotTraceOptions).
  SnapshotTrace(const nlohmann::json& snapshot, SnapshotTraceOptions options);

  /// The trace's events in order.
  [[nodiscard]] const std::vector<SnapshotEvent>& events() const { return events_; }
  /// Blocks live before the first event.
  [[nodiscard]] const ReplayBlocks& initial_blocks() const { return initial_blocks_; }
  /// Segments reserved before the first event.
  [[nodiscard]] const ReplaySegments& initial_segments() const { return initial_segments_; }
  /// Blocks live at the end (the final "segments"' active blocks).
  [[nodiscard]] const ReplayBlocks& final_blocks() const { return final_blocks_; }
  /// Events that contradict the final state: frees of blocks already live, allocs of blocks not
  /// live at the end and never freed (what a wrapped ring buffer or a hand-edited file leaves).
  [[nodiscard]] std::size_t inconsistent_event_count() const { return inconsistent_event_count_; }

 private:
  std::vector<SnapshotEvent> events_;
  ReplayBlocks initial_blocks_;
  ReplaySegments initial_segments_;
  ReplayBlocks final_blocks_;
  std::size_t inconsistent_event_count_ = 0;
};

/// The memory state while replaying a SnapshotTrace forwards.
struct ReplayState {
  ReplayBlocks blocks;                ///< live allocations
  ReplaySegments segments;            ///< reserved segments
  std::uint64_t allocated_bytes = 0;  ///< sum of the live blocks' bytes
  std::uint64_t reserved_bytes = 0;   ///< sum of the segments' bytes

  /// The state before the first event.
  /// \param trace a parsed trace.
  /// \throws vramlab::UsageError when the bytes overflow 64 bits.
  static ReplayState initial(const SnapshotTrace& trace);

  /// What one event changed.
  struct Change {
    /// The block an alloc made live.
    std::optional<ReplayBlock> added;
    /// The block a free_completed freed, or the one an alloc at a live address replaced.
    std::optional<ReplayBlock> removed;
    bool reserved = false;  ///< reserved bytes may have changed (a segment event)
  };

  /// Applies one event: an alloc makes a block live (replacing one at the same address), a
  /// free_completed frees the live block (an unknown address changes nothing), segment events
  /// change the reservation; other actions change nothing.
  /// \param trace the trace this state replays. \param index the event's index in it.
  /// \return what the event changed.
  /// \throws vramlab::UsageError when the bytes overflow 64 bits.
  Change apply(const SnapshotTrace& trace, std::size_t index);
};

}  // namespace vramlab::snapshot
