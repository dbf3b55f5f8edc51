/// \file
/// \brief Reading a snapshot the way an engineer reads memory_viz: where the peak is, what was live
/// there and who allocated it (by module, phase, category and call stack), and what grew between
/// two snapshots (how a leak is found).
///
/// Input: a snapshot in the schema of torch.cuda.memory._snapshot(), from vramlab (with the
/// extension keys of recording.h) or from PyTorch (no extension keys: module, phase and tensor are
/// "" and owners come from the frames alone). Bytes are the requested sizes the trace records, as
/// memory_viz's Active Memory Timeline draws them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/call_stack.h"

namespace vramlab::snapshot {

/// One allocation, as the snapshot tells it.
struct Allocation {
  std::uint64_t address = 0;  ///< the block's address
  std::int64_t bytes = 0;     ///< requested bytes
  std::string tensor;         ///< "att" ("" if unnamed)
  std::string module;         ///< "blocks.3.attn" ("" if none)
  std::string phase;          ///< "forward" ("" if not recorded)
  std::string category;       ///< "activation" ("" if not recorded)
  std::vector<memory::StackFrame>
      frames;  ///< the C++ frames, innermost first (label frame removed)
  /// Index in the device's trace of the alloc event; -1 when it was live before the trace began.
  std::int64_t alloc_event = -1;
  /// Freed by the program, but a stream that used it has not finished (state
  /// active_pending_free): the allocator cannot reuse it yet, the program no longer holds it.
  bool pending_free = false;
};

/// Bytes and allocations sharing one key.
struct ByteGroup {
  std::string key;         ///< e.g. the module path; "(none)" when the key is empty
  std::int64_t bytes = 0;  ///< sum of requested bytes
  std::int64_t count = 0;  ///< allocations
};

/// The peak of allocated memory and what made it.
struct PeakReport {
  std::int64_t peak_bytes = 0;  ///< maximum of live requested bytes over the trace (start included)
  std::int64_t peak_event = -1;  ///< index of the event that reached it; -1 = before the first
  /// The allocation whose alloc event reached the peak (empty when peak_event is -1 or not an
  /// alloc): the owner memory_viz shows when one clicks the top of the peak.
  Allocation peak_owner;
  std::vector<Allocation> live_at_peak;  ///< every allocation live at the peak, largest first
  std::vector<ByteGroup> by_module;      ///< live_at_peak grouped by module, largest first
  std::vector<ByteGroup> by_phase;       ///< … by phase
  std::vector<ByteGroup> by_category;    ///< … by category
  /// … by call stack: key = the innermost C++ frames' functions (qualified names without their
  /// argument lists), joined by " ← " (at most kStackKeyFrames); "(no stack)" when none was
  /// recorded.
  std::vector<ByteGroup> by_stack;
};

/// Frames used for a stack group's key.
inline constexpr std::size_t kStackKeyFrames = 4;

/// Replays device \p device's trace of \p snapshot and reports its peak.
/// \throws vramlab::UsageError naming the field when the snapshot is not in the schema (missing
/// "segments" or "device_traces", an entry without a numeric address or size, a device index out
/// of range).
PeakReport analyse_peak(const nlohmann::json& snapshot, std::size_t device = 0);

/// The allocations live at the end of \p snapshot (its "segments"), largest first.
/// \throws vramlab::UsageError as analyse_peak().
std::vector<Allocation> live_allocations(const nlohmann::json& snapshot);

/// What changed for one owner between two snapshots.
struct Growth {
  std::string module;             ///< the owner's module path
  std::string tensor;             ///< the owner's tensor name
  std::string category;           ///< the owner's category
  std::string stack;              ///< the owner's stack key (as PeakReport::by_stack)
  std::int64_t count_before = 0;  ///< live allocations in the first snapshot
  std::int64_t count_after = 0;   ///< … in the second
  std::int64_t bytes_before = 0;  ///< live requested bytes in the first snapshot
  std::int64_t bytes_after = 0;   ///< … in the second
};

/// Compares what the program holds in two snapshots (the allocations of their "segments" it has
/// not freed: a pending free is freed, as torch.cuda.memory_allocated() counts it), grouped by
/// owner (module, tensor, category, stack key).
/// \return the owners whose live bytes or count changed, largest growth (bytes_after −
/// bytes_before) first; shrinking owners last.
/// \throws vramlab::UsageError as analyse_peak().
std::vector<Growth> compare_snapshots(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace vramlab::snapshot
