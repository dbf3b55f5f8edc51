// What the stream clock adds to every kernel call (Note [The stream clock] in
// common/stream/clock.cpp): each call reads steady_clock twice and enqueues its time on the
// current stream. Measured in one run against the same call with no clock installed, the two
// interleaved in batches so that a change in the machine's load hits both alike; the kernel is a
// fill of 16 floats, so the call's fixed cost is most of what is timed.
//
//   build/bench/bin/bench_clock_overhead                             (the figure)
//   build/bench/bin/bench_clock_overhead --benchmark_min_time=0.01   (CI's smoke run)
//
// Counters: clock_ns and no_clock_ns, the fastest batch's time per call with and without the
// clock; overhead_ns, their difference.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/nn/runtime.h"

namespace {

using namespace vramlab;

// Seconds per call of \p calls fills of \p buffer on \p runtime.
double seconds_per_call(nn::Runtime& runtime, const memory::TensorView& buffer, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) runtime.kernels().fill_zero(buffer);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

void BM_KernelCallOnTheStreamClock(benchmark::State& state) {
  nn::Runtime timed(memory::parse_device("cpu"));
  nn::Runtime untimed(memory::parse_device("cpu"));
  untimed.kernels().set_clock(nullptr);
  const memory::Tensor a =
      timed.allocate({16}, DType::f32, memory::MemoryCategory::activation, "a");  // (16)
  const memory::Tensor b =
      untimed.allocate({16}, DType::f32, memory::MemoryCategory::activation, "b");  // (16)
  constexpr int kCalls = 1000;
  double clock_best = std::numeric_limits<double>::infinity(), plain_best = clock_best;
  bool clock_first = true;
  for (auto _ : state) {
    // Alternate which goes first, so neither always runs right after the other.
    if (clock_first) clock_best = std::min(clock_best, seconds_per_call(timed, a.view(), kCalls));
    plain_best = std::min(plain_best, seconds_per_call(untimed, b.view(), kCalls));
    if (!clock_first) clock_best = std::min(clock_best, seconds_per_call(timed, a.view(), kCalls));
    clock_first = !clock_first;
  }
  state.counters["clock_ns"] = clock_best * 1e9;
  state.counters["no_clock_ns"] = plain_best * 1e9;
  state.counters["overhead_ns"] = (clock_best - plain_best) * 1e9;
}
BENCHMARK(BM_KernelCallOnTheStreamClock)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
