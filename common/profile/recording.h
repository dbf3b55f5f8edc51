/// \file
/// \brief What the profiler recorded over a stretch of training: the allocator's snapshot with its
/// event history, and the spans (phases, modules, kernels) that ran meanwhile, on one clock.
///
/// The snapshot is torch.cuda.memory._snapshot()'s dictionary (common/memory/snapshot.cpp) with
/// vramlab's extension keys, which PyTorch's viewers ignore. On every active block and every trace
/// entry that concerns an allocation:
/// - "category": parameter, gradient, optimizer_state, activation, temporary, input or other;
/// - "module": the dotted module path that allocated it ("blocks.3.attn"; "" for none);
/// - "phase": the training phase (memory::training_phase_name: setup, forward, backward,
///   recompute, optimizer, none);
/// - "tensor": the tensor's name ("att");
/// - "frames": first a label frame {filename: module path, line: 0, name: tensor name}, so viewers
///   that show only frames still name the owner; then the C++ frames, innermost first, as PyTorch
///   writes them ({filename: source file, line, name: function}).
/// On every trace entry: "time_ns", the steady clock in nanoseconds (PyTorch's "time_us" stays the
/// allocator's event counter, which orders events).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/memory/history.h"
#include "common/stream/clock.h"

namespace vramlab::profile {

/// What a span is.
enum class SpanKind : unsigned char {
  phase,   ///< a training phase (setup, forward, backward, recompute, optimizer)
  module,  ///< a module scope, e.g. "blocks.3.attn"
  kernel,  ///< one kernel call, e.g. "attention_forward"
};

/// \return "phase", "module" or "kernel".
std::string_view span_kind_name(SpanKind kind);

/// One interval of the recording (a Chrome trace "X" event).
struct Span {
  SpanKind kind = SpanKind::kernel;  ///< see SpanKind
  /// The phase's name, the module path, or the kernel's op name.
  std::string name;
  /// The module path the span ran in: its own path for a module span, the enclosing module's for
  /// a kernel ("" outside every module).
  std::string module;
  memory::TrainingPhase phase = memory::TrainingPhase::none;  ///< the phase it ran in
  std::int64_t start_ns = 0;  ///< steady clock, nanoseconds since Recording::origin_ns
  std::int64_t end_ns = 0;    ///< ≥ start_ns
  std::int32_t depth = 0;     ///< nesting depth among the spans of its thread (0 = outermost)
  std::int32_t thread = 0;    ///< the recording thread's index (0 for a single-threaded run)
  /// A kernel's matmul FLOPs and operand bytes, counted from its sizes (nn::KernelWork); 0 for a
  /// phase or a module.
  double flops = 0.0;
  double bytes = 0.0;  ///< see flops
};

/// A finished recording (Profiler::stop()).
struct Recording {
  /// The allocator's snapshot at the end (see the file comment for the extension keys).
  nlohmann::json snapshot;
  /// Every span, sorted by (thread, start_ns, depth).
  std::vector<Span> spans;
  /// Steady-clock time of the start, in ns: a trace entry's "time_ns" minus origin_ns is its time
  /// on the spans' axis.
  std::int64_t origin_ns = 0;
  /// Wall seconds between the start and stop().
  double seconds = 0.0;
  /// The runtime's device, e.g. "sim:a100-40g".
  std::string device;
  /// What the device's stream clock placed while recording: every kernel and copy with its
  /// stream, in the clock's seconds (Note [The stream clock]: a time axis of its own, not the
  /// spans' wall time).
  std::vector<stream::Span> stream_spans;
  /// The clock's stream names, indexed by stream id ("compute", "copy h2d", ...).
  std::vector<std::string> stream_names;
};

}  // namespace vramlab::profile
