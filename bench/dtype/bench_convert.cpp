// f32 -> bf16/f16 conversion throughput (GB/s of f32 read) for the scalar conversions (also through
// the generic narrow-format rounding they shortcut) and the bulk library calls, each timed beside a
// memcpy of the same f32 bytes in the same iteration; the counter memcpy_time_ratio = conversion
// time / memcpy time (1.0 means conversion runs at copy speed).
//   build/bench/bin/bench_dtype_convert
//   build/bench/bin/bench_dtype_convert --benchmark_filter=bf16 --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtype/bulk_convert.h"
#include "common/dtype/convert.h"

namespace {

using Clock = std::chrono::steady_clock;

// Values spread over f16's range (some over- and underflow), seeded.
std::vector<float> make_inputs(size_t n) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  std::vector<float> values(n);  // (n)
  for (float& v : values) v = normal(rng);
  return values;
}

template <class Convert>
void run_against_memcpy(benchmark::State& state, Convert convert) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> src = make_inputs(n);  // (n)
  std::vector<uint16_t> dst(n);                   // (n)
  std::vector<float> copy(n);                     // (n)
  double convert_seconds = 0, memcpy_seconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    convert(src.data(), dst.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    std::memcpy(copy.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(copy.data());
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    convert_seconds += seconds;
    memcpy_seconds += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(seconds);
  }
  const double f32_bytes =
      static_cast<double>(n * sizeof(float)) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(f32_bytes));
  state.counters["memcpy_GBps"] = f32_bytes / memcpy_seconds / 1e9;
  state.counters["memcpy_time_ratio"] = convert_seconds / memcpy_seconds;
}

void BM_f32_to_bf16_scalar(benchmark::State& state) {
  run_against_memcpy(state, [](const float* src, uint16_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = vramlab::f32_to_bf16_bits(src[i]);
  });
}

// The same rounding through the generic narrow-format path (what f16 and fp8 use): shows what the
// branch-free bf16 shortcut buys.
void BM_f32_to_bf16_generic(benchmark::State& state) {
  run_against_memcpy(state, [](const float* src, uint16_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = static_cast<uint16_t>(vramlab::detail::narrow_from_f32<vramlab::detail::BF16Layout>(
          src[i], false, vramlab::detail::Rounding::nearest_even, 0));
    }
  });
}

void BM_f32_to_bf16_bulk(benchmark::State& state) {
  run_against_memcpy(state, vramlab::convert_f32_to_bf16);
}

void BM_f32_to_f16_scalar(benchmark::State& state) {
  run_against_memcpy(state, [](const float* src, uint16_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = vramlab::f32_to_f16_bits(src[i]);
  });
}

void BM_f32_to_f16_generic(benchmark::State& state) {
  run_against_memcpy(state, [](const float* src, uint16_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = static_cast<uint16_t>(vramlab::detail::narrow_from_f32<vramlab::detail::F16Layout>(
          src[i], false, vramlab::detail::Rounding::nearest_even, 0));
    }
  });
}

void BM_f32_to_f16_bulk(benchmark::State& state) {
  run_against_memcpy(state, vramlab::convert_f32_to_f16);
}

void BM_f32_to_bf16_stochastic(benchmark::State& state) {
  run_against_memcpy(state, [](const float* src, uint16_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = vramlab::f32_to_bf16_bits_stochastic(src[i], vramlab::stochastic_bits(7, i));
    }
  });
}

// 64 Ki elements (256 KiB of f32: cache-resident) and 4 Mi elements (16 MiB: memory-bound).
BENCHMARK(BM_f32_to_bf16_scalar)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_bf16_generic)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_bf16_bulk)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_f16_scalar)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_f16_generic)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_f16_bulk)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
BENCHMARK(BM_f32_to_bf16_stochastic)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();

}  // namespace
