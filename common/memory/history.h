/// \file
/// \brief Allocation history: trace entries (PyTorch's device_traces actions), the recording mode,
/// and the context label stack the runtime pushes (e.g. "forward/block3/attention").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/memory/memory_category.h"

namespace vramlab::memory {

/// A stream on a device: 0 is the default stream.
using StreamId = std::int64_t;

/// What a trace entry records (torch.cuda.memory._snapshot()["device_traces"] "action").
enum class TraceAction : unsigned char {
  alloc,           ///< a block was handed out (size = requested bytes)
  free_requested,  ///< the caller freed a block (size = requested bytes)
  free_completed,  ///< the block went back to the cache (after its stream events)
  segment_alloc,   ///< a segment was allocated from the device (size = segment size)
  segment_free,    ///< a segment was returned to the device
  segment_map,     ///< pages of an expandable segment were mapped
  segment_unmap,   ///< pages of an expandable segment were unmapped
  oom,             ///< an allocation failed (address = device free bytes, size = rounded request)
  snapshot,        ///< a snapshot was taken (size = active bytes)
};

/// \return the snapshot name of \p action, e.g. "free_requested".
std::string_view trace_action_name(TraceAction action);

/// One event of the allocation history.
struct TraceEntry {
  TraceAction action = TraceAction::alloc;  ///< what happened
  std::uint64_t address = 0;  ///< block/segment address, or the device's free bytes for oom
  std::size_t size = 0;       ///< bytes, see TraceAction
  StreamId stream = 0;        ///< the stream of the block or segment
  std::int64_t time_us = 0;   ///< the allocator's event counter (monotonic, one tick per event)
  MemoryCategory category = MemoryCategory::other;  ///< category of the block
  std::string name;                                 ///< the tensor's name, if any
  std::string context;  ///< the context label stack joined with '/', if any
};

/// What the allocator records (torch.cuda.memory._record_memory_history's `enabled`).
enum class RecordMode : unsigned char {
  off,    ///< nothing
  state,  ///< labels of live blocks only (snapshots show them); no trace
  all,    ///< labels plus the trace ring buffer
};

/// Pushes a label on this thread's context stack for its lifetime; allocations made meanwhile
/// carry the joined stack, e.g. "forward/block3/attention".
class ContextLabelScope {
 public:
  /// \param label one level, e.g. "attention"; must not be empty.
  explicit ContextLabelScope(std::string_view label);
  ~ContextLabelScope();
  ContextLabelScope(const ContextLabelScope&) = delete;
  ContextLabelScope& operator=(const ContextLabelScope&) = delete;

 private:
  std::uint32_t previous_context_id_;
};

/// \return the id of this thread's current context label (0 = no label). Ids are stable for the
///         process; context_label() turns them back into text.
std::uint32_t current_context_id();

/// \param context_id an id from current_context_id().
/// \return the joined label, e.g. "forward/block3/attention" ("" for 0).
const std::string& context_label(std::uint32_t context_id);

}  // namespace vramlab::memory
