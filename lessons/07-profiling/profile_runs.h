/// \file
/// \brief Lesson 07's measurements: training steps recorded by profile::Profiler (every
/// allocation with its module, phase and C++ call stack; a span per phase, module and kernel),
/// read back the way an engineer reads memory_viz and torch.profiler's table: the peak and what
/// owns it, what each module holds there, the largest allocations, the per-op table; the same
/// steps with checkpointing; and a planted leak found from two snapshots.
///
/// A recording starts before the Trainer is built, so the parameters carry their modules and
/// stacks too, and covers setup and every step: its peak is the peak of the whole run, which the
/// allocator's own requested-bytes peak (an independent counter, not the trace) must equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/step_observer.h"
#include "common/profile/op_table.h"
#include "common/profile/recording.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/train/trainer.h"

namespace vramlab::lesson07 {

/// The tensor name of the planted leak's copies (see KeepEveryLoss).
inline constexpr char kKeptLossName[] = "kept_loss";

/// The planted leak: a step observer that, after every loss, keeps a device copy of the step's
/// per-token losses (B, T), as `history.append(losses)` in a PyTorch training loop keeps every
/// step's tensor alive. Named so that its function shows in the leak's call stack.
class KeepEveryLoss final : public nn::StepObserver {
 public:
  /// Copies the losses the forward just saved (through the host: the runtime has no
  /// device-to-device copy) into a new tensor named kKeptLossName.
  void after(const nn::PhaseEvent& event) override;
  /// \return the copies kept so far, one per step.
  [[nodiscard]] int64_t kept() const { return static_cast<int64_t>(kept_.size()); }

 private:
  std::vector<memory::Tensor> kept_;  // one (B, T) f32 per step
};

/// What one recorded run trains.
struct RunSettings {
  train::TrainOptions train;  ///< model, batch, seq, seed, recompute …
  memory::Device device;      ///< where it runs.
  int64_t steps = 2;       ///< training steps recorded (≥ 1; the first creates AdamW's states).
  bool cpp_stacks = true;  ///< a C++ call stack with every allocation.
};

/// One recorded run and what the lesson reads from it.
struct ProfiledRun {
  std::string label;             ///< "baseline" or "--recompute full".
  profile::Recording recording;  ///< the snapshot (with its trace) and the spans.
  snapshot::PeakReport peak;     ///< analyse_peak() of the snapshot.
  /// The allocator's requested_bytes.all.peak over the same stretch: counted by the allocator at
  /// every malloc and free, not from the trace; equals peak.peak_bytes.
  int64_t allocator_peak_bytes = 0;
  int64_t reserved_peak_bytes = 0;  ///< reserved_bytes.all.peak (segments)
  /// memory_stats()["active.all.current"] after the last step, the model still alive: a count of
  /// blocks (claim #92).
  int64_t active_blocks_now = 0;
  int64_t active_bytes_now = 0;           ///< memory_stats()["active_bytes.all.current"] then
  int64_t num_alloc_retries = 0;          ///< memory_stats()["num_alloc_retries"]
  std::vector<profile::OpRow> by_op;      ///< op_table(…, OpGrouping::op)
  std::vector<profile::OpRow> by_module;  ///< op_table(…, OpGrouping::module)
  std::vector<double> losses;             ///< per step (0 on meta)
  std::vector<double> step_seconds;       ///< per step, wall time, profiled
  /// Per step, the process's CPU time (every thread): what the recording costs, less disturbed
  /// than wall time by other work on a shared machine.
  std::vector<double> step_cpu_seconds;
  int64_t trace_events = 0;     ///< entries of the snapshot's device trace
  int64_t distinct_stacks = 0;  ///< call stacks interned by the end
};

/// Runs settings.steps steps on a fresh Runtime under a Profiler started before the Trainer.
/// \param settings the run. \param label its name in the report.
/// \throws vramlab::UsageError for bad settings; memory::OutOfMemoryError when it does not fit.
ProfiledRun profile_run(const RunSettings& settings, const std::string& label);

/// Per-step times of a run.
struct StepTimes {
  std::vector<double> wall_seconds;  ///< per step
  std::vector<double> cpu_seconds;   ///< per step, the process's CPU time (every thread)
};

/// Times settings.steps steps without any recording (the profiler's overhead is the ratio).
/// \return the per-step times. \throws as profile_run().
StepTimes unprofiled_step_times(const RunSettings& settings);

/// What one C++ call stack costs to capture and intern here (memory::capture_call_stack from one
/// call site, so every capture after the first finds its stack interned): the fastest of a few
/// batches, in seconds per capture. Load on a shared machine slows a batch, never speeds it up,
/// so the fastest is the least disturbed.
double stack_capture_seconds();

/// \param run a recorded run. \return its trace's alloc events (every allocation recorded).
int64_t recorded_allocations(const ProfiledRun& run);

/// The leak, found as one finds it in PyTorch: _record_memory_history() from the start, a
/// _dump_snapshot() after step k and another after step k + n, and what grew in between.
struct LeakHunt {
  int64_t first_step = 0;               ///< k
  int64_t second_step = 0;              ///< k + n
  std::vector<snapshot::Growth> growth;  ///< compare_snapshots(after step k, after step k + n)
  /// The largest grower, or an empty Growth when nothing grew.
  snapshot::Growth owner;
  int64_t bytes_per_step = 0;  ///< (owner.bytes_after − owner.bytes_before) / n
  int64_t leaked_copies = 0;   ///< what the observer kept, for the check
  /// The owner's stack, innermost C++ frames' functions (from the second snapshot's live block).
  std::vector<std::string> owner_frames;
  /// The owner is the planted tensor, it grew by exactly one allocation per step, and the
  /// observer's function (KeepEveryLoss) is in its stack.
  bool found = false;
};

/// Trains k + n steps with KeepEveryLoss registered and compares the two snapshots.
/// \param settings the run (steps is ignored). \param k steps before the first snapshot (≥ 1).
/// \param n steps between the snapshots (≥ 1).
/// \param plant register the leaking observer (false: the same hunt on a clean loop).
/// \throws vramlab::UsageError naming k or n when < 1; as profile_run().
LeakHunt hunt_leak(const RunSettings& settings, int64_t k, int64_t n, bool plant = true);

/// Bytes allocated over a run, torch.profiler-style (never reduced by frees): the total of the
/// per-op table's self column (an allocation counts once, in the row of its innermost span).
/// \param run a recorded run. \return the bytes.
int64_t allocated_over_run(const ProfiledRun& run);

/// Bytes allocated by the attention modules over a run: the module rows whose path ends in
/// ".attn", every phase (forward, recompute, backward). What torch.profiler's rows for the
/// attention's bmm and softmax add up to.
/// \param run a recorded run. \return the bytes.
int64_t attention_allocated(const ProfiledRun& run);

/// \param run a recorded run. \return the calls of the attention modules' forward, re-run ones
/// included (the module rows ending in ".attn" in the forward and recompute phases).
int64_t attention_forward_calls(const ProfiledRun& run);

}  // namespace vramlab::lesson07
