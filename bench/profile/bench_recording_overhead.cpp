// What recording costs a GPT-2 training step on sim, measured in one run: five trainers, one per
// recording level, their steps interleaved (off, state, all, all + C++ stacks, Profiler, off, ...)
// so a change in the machine's load hits every level alike. Each level's fastest step is divided
// by the fastest unrecorded step (other processes only ever add time, so the minimum is the least
// disturbed estimate); the medians' ratios are reported beside it.
//
//   build/bench/bin/bench_recording_overhead --benchmark_min_time=10  (the numbers lesson 07
//   quotes) build/bench/bin/bench_recording_overhead --benchmark_min_time=0.01         (CI's smoke
//   run)
//
// Counters: <level>_ms, the fastest step; <level>_x, its ratio to off; <level>_median_x, the
// medians' ratio. Levels: state (labels of live blocks), all (plus the trace), stacks (all plus a
// C++ call stack per allocation), profiler (all, stacks, and a span per phase, module and kernel;
// its snapshot, taken after the step, is not timed).
#include <benchmark/benchmark.h>

#include <omp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
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
  std::vector<double> seconds;
};

// One step of \p c; the profiler's own snapshot is taken with \p timing paused (null outside the
// timed loop).
double step(Contender& c, benchmark::State* timing) {
  if (c.level != Level::profiler) return c.trainer->step().seconds;
  std::optional<profile::Profiler> profiler(std::in_place, *c.runtime);
  const double seconds = c.trainer->step().seconds;
  if (timing != nullptr) timing->PauseTiming();
  benchmark::DoNotOptimize(profiler->stop().spans.size());
  profiler.reset();
  if (timing != nullptr) timing->ResumeTiming();
  return seconds;
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
    Contender c{level, name, std::make_unique<nn::Runtime>(memory::parse_device("sim")), {}, {}};
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
  // Warm-up: the first step creates the optimizer states and fills the allocator's cache, and
  // the first stacks are resolved (names are cached per address for the process).
  for (Contender& c : all) step(c, nullptr);
  for (auto _ : state)
    for (Contender& c : all) c.seconds.push_back(step(c, &state));
  const auto fastest = [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  const double off_min = fastest(all.front().seconds);
  const double off_median = train::median(all.front().seconds);
  for (const Contender& c : all) {
    const std::string name = c.name;
    state.counters[name + "_ms"] = fastest(c.seconds) * 1e3;
    if (c.level == Level::off) continue;
    state.counters[name + "_x"] = fastest(c.seconds) / off_min;
    state.counters[name + "_median_x"] = train::median(c.seconds) / off_median;
  }
  state.counters["threads"] = omp_get_max_threads();
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
