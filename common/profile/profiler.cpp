// Profiler: the allocator's history (with C++ stacks) plus spans for phases, modules and kernels,
// heard through the thread's ScopeListener and the backend's KernelObserver, on the steady clock
// the allocator stamps its trace entries with (see profiler.h).
//
// Spans come only from the thread that created the profiler: phase and module scopes are per
// thread, and a kernel another thread runs on the same runtime could not be placed in this
// thread's nesting. A phase change closes the phase's span and opens the next one, so a nested
// PhaseScope (recompute inside backward) gives backward, recompute, backward side by side; the
// runtime changes phase only outside module scopes, so module spans nest inside phase spans.
#include "common/profile/profiler.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"

namespace vramlab::profile {
namespace {

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The runtimes being profiled, and whether this thread is: one profiler each at a time.
struct Registry {
  std::mutex mutex;
  std::set<const nn::Runtime*> runtimes;
};

Registry& registry() {
  static Registry r;
  return r;
}

thread_local bool t_profiling = false;

}  // namespace

struct Profiler::State final : memory::ScopeListener, nn::KernelObserver {
  State(nn::Runtime& profiled, const ProfilerOptions& settings)
      : runtime(profiled), options(settings), thread(std::this_thread::get_id()) {}

  // ---- ScopeListener and KernelObserver: called on the profiled thread, must not throw ----

  void phase_changed(memory::TrainingPhase phase) noexcept override {
    const std::int64_t now = elapsed_ns();
    if (open_phase) close(*open_phase, now);
    open_phase.reset();
    if (phase != memory::TrainingPhase::none) {
      open_phase =
          open(SpanKind::phase, std::string(memory::training_phase_name(phase)), "", phase, now);
    }
  }

  void module_entered(std::uint32_t module_id) noexcept override {
    const std::string& path = memory::module_path(module_id);
    open_modules.push_back(
        {module_id, open(SpanKind::module, path, path, memory::current_phase(), elapsed_ns())});
  }

  void module_exited(std::uint32_t module_id) noexcept override {
    // A module entered before the profiler started has no span.
    if (open_modules.empty() || open_modules.back().module_id != module_id) return;
    close(open_modules.back().span, elapsed_ns());
    open_modules.pop_back();
  }

  void kernel_started(std::string_view op) noexcept override {
    if (std::this_thread::get_id() != thread) return;
    open_kernels.push_back(open(SpanKind::kernel, std::string(op),
                                memory::module_path(memory::current_module_id()),
                                memory::current_phase(), elapsed_ns()));
  }

  void kernel_finished(std::string_view op, const nn::KernelWork& work) noexcept override {
    if (std::this_thread::get_id() != thread || open_kernels.empty()) return;
    const std::size_t span = open_kernels.back();
    if (span != kNoSpan && spans[span].name != op) return;  // started before the profiler
    if (span != kNoSpan) {
      spans[span].flops = work.flops;
      spans[span].bytes = work.bytes;
    }
    close(span, elapsed_ns());
    open_kernels.pop_back();
  }

  // ---- the recording ----

  std::int64_t elapsed_ns() const { return steady_now_ns() - origin_ns; }

  // Appends an open span (end_ns -1 until closed); try/catch: the callers are noexcept, and a
  // span lost to an allocation failure is better than a terminated training run.
  std::size_t open(SpanKind kind, std::string name, std::string module, memory::TrainingPhase phase,
                   std::int64_t start_ns) noexcept {
    const auto depth =
        static_cast<std::int32_t>((open_phase ? 1 : 0) + open_modules.size() + open_kernels.size());
    try {
      spans.push_back(
          Span{kind, std::move(name), std::move(module), phase, start_ns, -1, depth, 0});
    } catch (...) {
      return kNoSpan;
    }
    return spans.size() - 1;
  }

  void close(std::size_t span, std::int64_t end_ns) noexcept {
    if (span != kNoSpan) spans[span].end_ns = std::max(end_ns, spans[span].start_ns);
  }

  // Puts back what the constructor replaced; on the creating thread only (the listener is that
  // thread's).
  void restore() {
    if (std::this_thread::get_id() == thread) memory::set_scope_listener(previous_listener);
    if (options.kernels) runtime.kernels().set_observer(previous_observer);
    runtime.clock().keep_spans(previous_keep_spans);
    runtime.allocator().record_history(previous_history.mode, previous_history.max_entries,
                                       previous_history.cpp_stacks);
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.runtimes.erase(&runtime);
    }
    if (std::this_thread::get_id() == thread) t_profiling = false;
    stopped = true;
  }

  static constexpr std::size_t kNoSpan = static_cast<std::size_t>(-1);
  struct OpenModule {
    std::uint32_t module_id;
    std::size_t span;
  };

  nn::Runtime& runtime;
  ProfilerOptions options;
  std::thread::id thread;
  std::int64_t origin_ns = 0;
  std::chrono::steady_clock::time_point started;
  memory::ScopeListener* previous_listener = nullptr;
  nn::KernelObserver* previous_observer = nullptr;
  bool previous_keep_spans = false;
  std::size_t first_stream_span = 0;  // the clock's spans before the recording are not its own
  memory::CachingAllocator::HistorySettings previous_history;
  bool stopped = false;
  std::vector<Span> spans;
  std::optional<std::size_t> open_phase;
  std::vector<OpenModule> open_modules;  // innermost last
  std::vector<std::size_t> open_kernels;
};

Profiler::Profiler(nn::Runtime& runtime, ProfilerOptions options) {
  if (t_profiling)
    throw UsageError("this thread is already being profiled: one Profiler per thread at a time");
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.runtimes.insert(&runtime).second)
      throw UsageError("the runtime on '" + runtime.device().name() +
                       "' is already being profiled: one Profiler per runtime at a time");
  }
  try {
    state_ = std::make_unique<State>(runtime, options);
  } catch (...) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.runtimes.erase(&runtime);
    throw;
  }
  t_profiling = true;
  State& s = *state_;
  s.previous_history = runtime.allocator().history_settings();
  runtime.allocator().record_history(memory::RecordMode::all, options.max_entries,
                                     options.cpp_stacks);
  s.started = std::chrono::steady_clock::now();
  s.origin_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(s.started.time_since_epoch()).count();
  s.phase_changed(memory::current_phase());  // a profiler started inside a phase
  s.previous_listener = memory::set_scope_listener(&s);
  if (options.kernels) {
    s.previous_observer = runtime.kernels().observer();
    runtime.kernels().set_observer(&s);
  }
  s.previous_keep_spans = runtime.clock().keeps_spans();
  s.first_stream_span = runtime.clock().spans().size();
  runtime.clock().keep_spans(true);
}

Profiler::~Profiler() {
  if (state_ && !state_->stopped) state_->restore();
}

Recording Profiler::stop() {
  State& s = *state_;
  if (s.stopped) throw std::logic_error("Profiler::stop() called twice");
  if (std::this_thread::get_id() != s.thread)
    throw std::logic_error("Profiler::stop() on a thread other than the one that created it");
  const std::int64_t end_ns = s.elapsed_ns();
  for (const std::size_t kernel : s.open_kernels) s.close(kernel, end_ns);
  for (const State::OpenModule& module : s.open_modules) s.close(module.span, end_ns);
  if (s.open_phase) s.close(*s.open_phase, end_ns);
  Recording recording;
  recording.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  // While the trace is still recorded: restoring the previous mode clears it.
  recording.snapshot = s.runtime.allocator().snapshot();
  const stream::Clock& clock = s.runtime.clock();
  recording.stream_spans.assign(
      clock.spans().begin() + static_cast<std::ptrdiff_t>(s.first_stream_span),
      clock.spans().end());
  for (stream::StreamId id = 0; id < clock.stream_count(); ++id)
    recording.stream_names.push_back(clock.stream_name(id));
  s.restore();
  recording.spans = std::move(s.spans);
  std::stable_sort(recording.spans.begin(), recording.spans.end(),
                   [](const Span& a, const Span& b) {
                     if (a.thread != b.thread) return a.thread < b.thread;
                     if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                     return a.depth < b.depth;
                   });
  recording.origin_ns = s.origin_ns;
  recording.device = s.runtime.device().name();
  return recording;
}

}  // namespace vramlab::profile
