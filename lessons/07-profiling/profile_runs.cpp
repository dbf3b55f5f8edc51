// Lesson 07's measurements: recorded runs, the planted leak and its hunt (see profile_runs.h).
#include "lessons/07-profiling/profile_runs.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>
#include <string_view>

#include "common/memory/call_stack.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/profile/profiler.h"

namespace vramlab::lesson07 {

namespace {

int64_t stat(const std::vector<std::pair<std::string, std::int64_t>>& stats, std::string_view key) {
  for (const auto& [name, value] : stats)
    if (name == key) return value;
  return 0;
}

// "blocks.3.attn (backward)" → "blocks.3.attn"; a name without a phase stays as it is.
std::string_view module_of_row(std::string_view row) {
  const size_t open = row.rfind(" (");
  return open == std::string_view::npos ? row : row.substr(0, open);
}

std::string_view phase_of_row(std::string_view row) {
  const size_t open = row.rfind(" (");
  if (open == std::string_view::npos || row.back() != ')') return {};
  return row.substr(open + 2, row.size() - open - 3);
}

bool is_attention_row(const profile::OpRow& row) {
  const std::string_view module = module_of_row(row.name);
  return row.kind == profile::SpanKind::module && module.ends_with(".attn");
}

void require_steps(const char* what, int64_t value) {
  if (value < 1)
    throw UsageError(std::string(what) + " must be >= 1, got " + std::to_string(value));
}

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void KeepEveryLoss::after(const nn::PhaseEvent& event) {
  if (event.phase != nn::StepPhase::loss) return;
  const memory::Tensor& losses = event.saved->get(-1, saved::losses);  // (B, T) f32
  nn::Runtime& runtime = event.model->runtime();
  std::vector<float> host(static_cast<size_t>(losses.numel()));  // (B·T)
  runtime.copy_to_host(host.data(), losses);
  memory::Tensor copy = runtime.allocate(losses.shape(), DType::f32, memory::MemoryCategory::other,
                                         kKeptLossName);  // (B, T)
  runtime.copy_to_device(copy, host.data());
  kept_.push_back(std::move(copy));
}

ProfiledRun profile_run(const RunSettings& settings, const std::string& label) {
  require_steps("--steps", settings.steps);
  train::validate(settings.train);
  nn::Runtime runtime(settings.device);
  ProfiledRun run;
  run.label = label;
  {
    profile::ProfilerOptions options;
    options.cpp_stacks = settings.cpp_stacks;
    profile::Profiler profiler(runtime, options);
    train::Trainer trainer(runtime, settings.train);
    for (int64_t s = 0; s < settings.steps; ++s) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_seconds();
      const train::StepResult r = trainer.step();
      run.step_cpu_seconds.push_back(cpu_seconds() - cpu_start);
      run.step_seconds.push_back(seconds_since(start));
      run.losses.push_back(r.loss);
    }
    // The trainer still holds its parameters and states: the snapshot shows them live.
    run.recording = profiler.stop();
    const memory::DeviceStats stats = runtime.allocator().stats();
    run.allocator_peak_bytes = stats.requested_bytes[0].peak;
    run.reserved_peak_bytes = stats.reserved_bytes[0].peak;
    const auto named = runtime.allocator().memory_stats();
    run.active_blocks_now = stat(named, "active.all.current");
    run.active_bytes_now = stat(named, "active_bytes.all.current");
    run.num_alloc_retries = stat(named, "num_alloc_retries");
  }
  run.peak = snapshot::analyse_peak(run.recording.snapshot);
  run.by_op = profile::op_table(run.recording, profile::OpGrouping::op);
  run.by_module = profile::op_table(run.recording, profile::OpGrouping::module);
  run.trace_events = static_cast<int64_t>(run.recording.snapshot.at("device_traces").at(0).size());
  run.distinct_stacks = static_cast<int64_t>(memory::interned_call_stack_count());
  return run;
}

StepTimes unprofiled_step_times(const RunSettings& settings) {
  require_steps("--steps", settings.steps);
  nn::Runtime runtime(settings.device);
  train::Trainer trainer(runtime, settings.train);
  StepTimes times;
  for (int64_t s = 0; s < settings.steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    trainer.step();
    times.cpu_seconds.push_back(cpu_seconds() - cpu_start);
    times.wall_seconds.push_back(seconds_since(start));
  }
  return times;
}

double stack_capture_seconds() {
  constexpr int kBatches = 5;
  constexpr int kCaptures = 1000;
  double fastest = 0.0;
  for (int b = 0; b < kBatches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCaptures; ++i) memory::capture_call_stack(0);
    const double per_capture = seconds_since(start) / kCaptures;
    fastest = b == 0 ? per_capture : std::min(fastest, per_capture);
  }
  return fastest;
}

int64_t recorded_allocations(const ProfiledRun& run) {
  int64_t allocs = 0;
  for (const nlohmann::json& entry : run.recording.snapshot.at("device_traces").at(0))
    allocs += entry.value("action", "") == "alloc";
  return allocs;
}

LeakHunt hunt_leak(const RunSettings& settings, int64_t k, int64_t n, bool plant) {
  require_steps("--leak-after", k);
  require_steps("--leak-steps", n);
  train::validate(settings.train);
  LeakHunt hunt;
  hunt.first_step = k;
  hunt.second_step = k + n;
  nn::Runtime runtime(settings.device);
  profile::ProfilerOptions options;
  options.cpp_stacks = settings.cpp_stacks;
  profile::Profiler profiler(runtime, options);
  KeepEveryLoss leak;
  train::Trainer trainer(runtime, settings.train);
  if (plant) trainer.add_observer(leak);
  for (int64_t s = 0; s < k; ++s) trainer.step();
  // torch.cuda.memory._dump_snapshot() after step k: the allocator's snapshot, recording on.
  const nlohmann::json before = runtime.allocator().snapshot();
  for (int64_t s = 0; s < n; ++s) trainer.step();
  const nlohmann::json after = runtime.allocator().snapshot();
  trainer.remove_observer(leak);
  profiler.stop();
  hunt.leaked_copies = leak.kept();
  hunt.growth = snapshot::compare_snapshots(before, after);
  if (!hunt.growth.empty() && hunt.growth.front().bytes_after > hunt.growth.front().bytes_before)
    hunt.owner = hunt.growth.front();
  hunt.bytes_per_step = (hunt.owner.bytes_after - hunt.owner.bytes_before) / n;
  // The owner's frames, from one of its live allocations in the second snapshot.
  for (const snapshot::Allocation& a : snapshot::live_allocations(after)) {
    if (a.tensor != hunt.owner.tensor || a.module != hunt.owner.module) continue;
    for (const memory::StackFrame& f : a.frames) hunt.owner_frames.push_back(f.function);
    break;
  }
  bool observer_in_stack = false;
  for (const std::string& f : hunt.owner_frames)
    observer_in_stack = observer_in_stack || f.find("KeepEveryLoss") != std::string::npos;
  hunt.found = hunt.owner.tensor == kKeptLossName &&
               hunt.owner.count_after - hunt.owner.count_before == n && observer_in_stack;
  return hunt;
}

int64_t allocated_over_run(const ProfiledRun& run) {
  int64_t bytes = 0;
  for (const profile::OpRow& row : run.by_op) bytes += row.self_bytes;
  return bytes;
}

int64_t attention_allocated(const ProfiledRun& run) {
  int64_t bytes = 0;
  for (const profile::OpRow& row : run.by_module)
    if (is_attention_row(row)) bytes += row.self_bytes;
  return bytes;
}

int64_t attention_forward_calls(const ProfiledRun& run) {
  int64_t calls = 0;
  for (const profile::OpRow& row : run.by_module) {
    const std::string_view phase = phase_of_row(row.name);
    if (is_attention_row(row) && (phase == "forward" || phase == "recompute")) calls += row.calls;
  }
  return calls;
}

}  // namespace vramlab::lesson07
