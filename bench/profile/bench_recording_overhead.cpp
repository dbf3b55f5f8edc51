// What recording costs a GPT-2 training step on sim, measured in one run: five trainers, one per
// recording level, their steps interleaved round by round (off, state, all, all + C++ stacks,
// Profiler; each round starts one level later, so no level always follows the profiler's
// snapshot) so that a change in the machine's load hits every level alike.
//
// The kernels run on one thread and each step is timed in CPU time of that thread: recording is
// CPU work on the thread that allocates, and CPU time does not grow when other processes take
// the cores (wall time on a loaded 2-core machine varied by 2x between identical steps). Each
// level's fastest step is divided by the fastest unrecorded step; the medians' ratios are reported
// beside them, and the wall-clock ratio of the medians for comparison.
//
//   build/bench/bin/bench_recording_overhead --benchmark_min_time=30  (the numbers lesson 07
//   quotes) build/bench/bin/bench_recording_overhead --benchmark_min_time=0.01         (CI's smoke
//   run)
//
// Counters: <level>_ms, the fastest step's CPU time; <level>_x, its ratio to off; <level>_median_x,
// the ratio of the median CPU times; <level>_wall_x, the ratio of the median wall times. Levels:
// state (labels of live blocks), all (plus the trace), stacks (all plus a C++ call stack per
// allocation), profiler (all, stacks, and a span per phase, module and kernel; its snapshot,
// taken after the step, is not timed).
#include <benchmark/benchmark.h>

#include <omp.h>

#include <time.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/free_cores.h"
#include "common/profile/profiler.h"
#include "common/train/trainer.h"

namespace {

using namespace vramlab;

enum class Level { off, state, all, stacks, profiler };

struct Contender {
  Level level;
  const char* name;
  std::unique_ptr<nn::Runtime> runtime;
  std::unique_ptr<train::Trainer> trainer;
  std::vector<double> cpu_seconds;   // this thread's CPU time per step
  std::vector<double> wall_seconds;  // StepResult::seconds
};

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// One step of \p c; the profiler's own snapshot is taken with \p timing paused (null outside the
// timed loop).
void step(Contender& c, benchmark::State* timing) {
  std::optional<profile::Profiler> profiler;
  if (c.level == Level::profiler) profiler.emplace(*c.runtime);
  const double cpu_start = thread_cpu_seconds();
  const double wall = c.trainer->step().seconds;
  const double cpu = thread_cpu_seconds() - cpu_start;
  if (timing == nullptr) return;  // warm-up
  c.cpu_seconds.push_back(cpu);
  c.wall_seconds.push_back(wall);
  if (!profiler) return;
  timing->PauseTiming();
  benchmark::DoNotOptimize(profiler->stop().spans.size());
  profiler.reset();
  timing->ResumeTiming();
}

void run_levels(benchmark::State& state, const std::string& model, int64_t B, int64_t T) {
  train::TrainOptions options;
  options.model = model_config_by_name(model);
  options.batch = B;
  options.seq = T;
  std::vector<Contender> all;
  for (const auto& [level, name] :
       {std::pair{Level::off, "off"}, std::pair{Level::state, "state"},
        std::pair{Level::all, "all"}, std::pair{Level::stacks, "stacks"},
        std::pair{Level::profiler, "profiler"}}) {
    Contender c{level, name, std::make_unique<nn::Runtime>(memory::parse_device("sim")),
                {},    {},   {}};
    memory::CachingAllocator& allocator = c.runtime->allocator();
    // torch's default ring buffer size for _record_memory_history(max_entries=...).
    constexpr std::size_t kMaxEntries = 1'000'000;
    if (level == Level::state) allocator.record_history(memory::RecordMode::state);
    if (level == Level::all) allocator.record_history(memory::RecordMode::all, kMaxEntries);
    if (level == Level::stacks)
      allocator.record_history(memory::RecordMode::all, kMaxEntries, true);
    c.trainer = std::make_unique<train::Trainer>(*c.runtime, options);
    all.push_back(std::move(c));
  }
  const int threads = omp_get_max_threads();
  platform::choose_openmp_threads(1);
  // Warm-up: the first step creates the optimizer states and fills the allocator's cache, and
  // the first stacks are resolved (names are cached per address for the process).
  for (Contender& c : all) step(c, nullptr);
  size_t round = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < all.size(); ++i) step(all[(round + i) % all.size()], &state);
    ++round;
  }
  platform::choose_openmp_threads(threads);
  const auto fastest = [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  const Contender& off = all.front();
  for (const Contender& c : all) {
    const std::string name = c.name;
    state.counters[name + "_ms"] = fastest(c.cpu_seconds) * 1e3;
    if (c.level == Level::off) continue;
    state.counters[name + "_x"] = fastest(c.cpu_seconds) / fastest(off.cpu_seconds);
    state.counters[name + "_median_x"] =
        train::median(c.cpu_seconds) / train::median(off.cpu_seconds);
    state.counters[name + "_wall_x"] =
        train::median(c.wall_seconds) / train::median(off.wall_seconds);
  }
}

// The size of lesson runs: 4 layers of width 256, T = 128.
void BM_RecordingOverhead_Gpt2Tiny_Sim(benchmark::State& state) {
  run_levels(state, "gpt2-tiny", 4, 128);
}
BENCHMARK(BM_RecordingOverhead_Gpt2Tiny_Sim)->Unit(benchmark::kMillisecond)->UseRealTime();

// A toy step (width 64, T = 32) whose kernels are so short that recording weighs the most.
void BM_RecordingOverhead_Gpt2Mini_Sim(benchmark::State& state) {
  run_levels(state, "gpt2-mini", 8, 32);
}
BENCHMARK(BM_RecordingOverhead_Gpt2Mini_Sim)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
