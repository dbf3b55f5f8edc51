/// \file
/// \brief Allocation history: trace entries (PyTorch's device_traces actions), the recording mode,
/// and the per-thread training phase and module path the runtime sets (e.g. backward in
/// "blocks.3.attn"), which every allocation carries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/memory/call_stack.h"
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

/// What the allocator records (torch.cuda.memory._record_memory_history's `enabled`).
enum class RecordMode : unsigned char {
  off,    ///< nothing
  state,  ///< labels of live blocks only (snapshots show them); no trace
  all,    ///< labels plus the trace ring buffer
};

/// The part of a training step an allocation was made in (the "phase" of snapshots and traces).
enum class TrainingPhase : unsigned char {
  none,        ///< outside any step (or not labelled)
  setup,       ///< building the model, its parameters and the batch
  forward,     ///< the forward pass, embedding to loss
  backward,    ///< the backward pass
  recompute,   ///< a checkpointed block's forward re-run inside backward
  optimizer,   ///< zero-grad, the optimizer step and what the data-parallel strategy does after it
  evaluation,  ///< a forward outside training (Trainer::evaluate), with or without grad
};

/// \return the lower-case name of \p phase ("none", "setup", "forward", "backward", "recompute",
/// "optimizer", "evaluation"), as written to snapshots and traces.
std::string_view training_phase_name(TrainingPhase phase);

/// Parses a name printed by training_phase_name().
/// \throws vramlab::UsageError naming \p name when it is not a phase.
TrainingPhase parse_training_phase(std::string_view name);

/// Sets this thread's training phase for its lifetime (nested scopes restore the outer phase):
/// allocations made meanwhile carry it, and a ScopeListener hears it.
class PhaseScope {
 public:
  /// \param phase the phase the code inside runs in.
  explicit PhaseScope(TrainingPhase phase);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  TrainingPhase previous_;
};

/// Appends one level to this thread's module path for its lifetime, PyTorch's module naming
/// ("blocks.3" then "attn" gives "blocks.3.attn"): allocations made meanwhile carry the path, and a
/// ScopeListener hears the entry and the exit (the profiler's module spans).
class ModuleScope {
 public:
  /// \param name one or more dotted levels, e.g. "blocks.3" or "attn".
  /// \throws vramlab::UsageError naming \p name when it is empty or starts or ends with a dot.
  explicit ModuleScope(std::string_view name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  std::uint32_t previous_module_id_;
};

/// \return this thread's current phase (none outside every PhaseScope).
TrainingPhase current_phase();

/// \return the id of this thread's module path (0 = no module). Ids are stable for the process;
/// module_path() turns them back into text.
std::uint32_t current_module_id();

/// \param module_id an id from current_module_id().
/// \return the dotted path, e.g. "blocks.3.attn" ("" for 0).
const std::string& module_path(std::uint32_t module_id);

/// Hears this thread's phase changes and module entries/exits (the profiler's spans). Called on the
/// thread that changes scope, outside every allocator lock; must not throw.
class ScopeListener {
 public:
  virtual ~ScopeListener() = default;
  /// \param phase the phase now current (after a PhaseScope starts or ends).
  virtual void phase_changed(TrainingPhase phase) noexcept = 0;
  /// \param module_id the module path just entered (current_module_id() inside the scope).
  virtual void module_entered(std::uint32_t module_id) noexcept = 0;
  /// \param module_id the module path just left (the id module_entered was given).
  virtual void module_exited(std::uint32_t module_id) noexcept = 0;
};

/// Installs \p listener for this thread (nullptr removes it).
/// \return the listener it replaces.
ScopeListener* set_scope_listener(ScopeListener* listener);

/// One event of the allocation history.
struct TraceEntry {
  TraceAction action = TraceAction::alloc;  ///< what happened
  std::uint64_t address = 0;  ///< block/segment address, or the device's free bytes for oom
  std::size_t size = 0;       ///< bytes, see TraceAction
  StreamId stream = 0;        ///< the stream of the block or segment
  std::int64_t time_us = 0;   ///< the allocator's event counter (monotonic, one tick per event)
  /// Steady clock when the event was recorded, in nanoseconds (the profiler's time axis).
  std::int64_t time_ns = 0;
  MemoryCategory category = MemoryCategory::other;  ///< category of the block
  std::string name;                                 ///< the tensor's name, if any
  std::string module;  ///< the module path the block was allocated in ("" for none)
  TrainingPhase phase = TrainingPhase::none;  ///< the phase the block was allocated in
  StackId stack = 0;  ///< the allocation's C++ call stack (0 unless recorded with cpp_stacks)
};

}  // namespace vramlab::memory
