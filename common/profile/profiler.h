/// \file
/// \brief Profiler: records a stretch of training on one Runtime, as
/// torch.profiler.profile(profile_memory=True, with_stack=True) together with
/// torch.cuda.memory._record_memory_history(stacks="cpp") do: every allocation with its module,
/// phase and C++ call stack, and a span per phase, module and kernel on one clock.
///
/// Scope: the Runtime it is given (its allocator and its kernels) and the thread that created it
/// (module and phase scopes are per thread; a simulated rank is a thread with its own Runtime, so
/// each rank is profiled by a Profiler made on that rank's thread).
#pragma once

#include <cstddef>
#include <memory>

#include "common/profile/recording.h"

namespace vramlab::nn {
class Runtime;
}

namespace vramlab::profile {

/// What a Profiler records.
struct ProfilerOptions {
  bool cpp_stacks = true;  ///< capture a C++ call stack with every allocation
  bool kernels = true;     ///< record a span per kernel call
  /// The allocator's trace ring buffer (torch's max_entries): the oldest events are dropped
  /// beyond it.
  std::size_t max_entries = 1'000'000;
};

/// Records from construction to stop() (see the file comment).
class Profiler {
 public:
  /// Starts recording: the allocator's history (RecordMode::all, with stacks when asked), a scope
  /// listener on this thread and a kernel observer on the runtime's backend.
  /// \param runtime must outlive the profiler.
  /// \param options what to record (stacks, kernels, the trace's size).
  /// \throws vramlab::UsageError if this thread or this runtime is already being profiled.
  explicit Profiler(nn::Runtime& runtime, ProfilerOptions options = {});
  /// Stops recording if stop() was not called, restoring what the constructor replaced.
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /// Stops recording and returns it (the snapshot is taken now).
  /// \throws std::logic_error when called twice.
  Recording stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vramlab::profile
