// What the SIMT emulator costs, as Google Benchmark counters (wall-clock: the workers' time):
//   ns_per_thread              an empty kernel: fiber creation, scheduling, exit
//   ns_per_barrier_per_thread  __syncthreads in a loop (the thread cost is amortized over 64
//   barriers) FLOP/s                     naive vs 16x16-tiled shared-memory matmul under emulation
//   (for information)
// Run: build/bench/bin/bench_simt [--benchmark_filter=Matmul]
#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstddef>
#include <random>
#include <vector>

#include "kernels/cuda/examples/examples.h"

namespace {

using vramlab::simt::LaunchOptions;
using vramlab::simt::ScopedLaunchOptions;

LaunchOptions with_workers(const benchmark::State& state, int argument_index) {
  LaunchOptions options;
  options.workers = static_cast<std::size_t>(state.range(argument_index));
  options.poison_shared = false;
  return options;
}

double process_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

// Wall-clock and process CPU nanoseconds of all iterations.
struct Elapsed {
  double wall_ns;
  double cpu_ns;
};

// Runs `launch` once per iteration and times all iterations.
template <class Launch>
Elapsed time_iterations(benchmark::State& state, Launch launch) {
  const double cpu_start = process_cpu_ns();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) launch();
  const double wall =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return {wall, process_cpu_ns() - cpu_start};
}

// Args: blocks, threads per block, workers.
void BM_EmptyKernel(benchmark::State& state) {
  const auto blocks = static_cast<unsigned>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  ScopedLaunchOptions scoped(with_workers(state, 2));
  const Elapsed elapsed =
      time_iterations(state, [&] { vramlab::cuda_examples::empty_kernel(blocks, threads); });
  const double threads_run = static_cast<double>(state.iterations()) * blocks * threads;
  state.counters["ns_per_thread"] = elapsed.wall_ns / threads_run;
  state.counters["cpu_ns_per_thread"] = elapsed.cpu_ns / threads_run;
}
BENCHMARK(BM_EmptyKernel)
    ->Args({64, 256, 1})
    ->Args({64, 256, 2})
    ->Args({16, 1024, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: blocks, threads per block, barriers per thread, workers.
void BM_BarrierLoop(benchmark::State& state) {
  const auto blocks = static_cast<unsigned>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  const auto barriers = static_cast<int>(state.range(2));
  ScopedLaunchOptions scoped(with_workers(state, 3));
  const Elapsed elapsed = time_iterations(
      state, [&] { vramlab::cuda_examples::barrier_loop(blocks, threads, barriers); });
  const double thread_barriers =
      static_cast<double>(state.iterations()) * blocks * threads * barriers;
  state.counters["ns_per_barrier_per_thread"] = elapsed.wall_ns / thread_barriers;
  state.counters["cpu_ns_per_barrier_per_thread"] = elapsed.cpu_ns / thread_barriers;
}
BENCHMARK(BM_BarrierLoop)
    ->Args({16, 256, 64, 1})
    ->Args({16, 256, 64, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: square size, workers; the template picks naive or tiled.
template <bool kTiled>
void BM_Matmul(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  ScopedLaunchOptions scoped(with_workers(state, 1));
  const std::size_t elements = static_cast<std::size_t>(size) * size;
  std::vector<float> a(elements), b(elements), c(elements);  // (size, size) each
  std::mt19937 generator(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : a) v = uniform(generator);
  for (float& v : b) v = uniform(generator);
  for (auto _ : state) {
    if constexpr (kTiled) {
      vramlab::cuda_examples::matmul_tiled(a.data(), b.data(), c.data(), size, size, size);
    } else {
      vramlab::cuda_examples::matmul_naive(a.data(), b.data(), c.data(), size, size, size);
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * size * size * size, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Matmul<false>)
    ->Name("BM_MatmulNaive")
    ->Args({128, 2})
    ->Args({256, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Matmul<true>)
    ->Name("BM_MatmulTiled")
    ->Args({128, 2})
    ->Args({256, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
