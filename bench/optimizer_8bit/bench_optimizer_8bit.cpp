// 8-bit AdamW (kernels/cpu/optimizer_8bit.h) against fp32 AdamW (kernels/cpu/optimizer.h) on the
// same n, f32 parameters and gradients. BM_AdamW8bitVsFp32 runs the two steps alternately in
// each iteration, so a change in the machine's load hits both alike, and reports the ratio of
// their fastest steps (other processes only ever add time) with the time per parameter of each.
//
//   build/bench/bin/bench_optimizer_8bit                       n = 2^24, block 256
//   build/bench/bin/bench_optimizer_8bit --benchmark_filter=VsFp32 --benchmark_min_time=5
//
// The goal (issue #19): 8-bit AdamW within 1.5x of fp32 AdamW per parameter.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "common/dtype/convert.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/optimizer_8bit.h"

namespace {

using namespace vramlab::kernels::cpu;

constexpr int64_t kBlock = 256;  // bitsandbytes' block of its 8-bit optimizers

std::vector<float> random_values(int64_t n, uint64_t seed, float scale) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(static_cast<size_t>(n));  // (n)
  for (float& value : values) value = normal(generator);
  return values;
}

// The two optimizers' buffers for n parameters, their states warmed by one step.
struct Problem {
  int64_t n;
  AdamWHyperparameters hp;
  std::vector<float> param32, param8, grad;  // (n) f32
  std::vector<float> m, v;                   // (n) fp32 AdamW's moments
  std::vector<uint8_t> qm, qv;               // (n) 8-bit codes
  std::vector<float> absmax_m, absmax_v;     // (ceil(n / kBlock))
  int64_t step = 1;

  explicit Problem(int64_t size)
      : n(size),
        param32(random_values(size, 1, 1.0f)),
        param8(param32),
        grad(random_values(size, 2, 1e-3f)),
        m(static_cast<size_t>(size), 0.0f),
        v(static_cast<size_t>(size), 0.0f),
        qm(static_cast<size_t>(size), 0),
        qv(static_cast<size_t>(size), 0),
        absmax_m(static_cast<size_t>(quantization_block_count(size, kBlock)), 0.0f),
        absmax_v(absmax_m) {
    run_fp32();
    run_8bit();
    step++;
  }
  void run_fp32() { adamw_update(param32.data(), grad.data(), m.data(), v.data(), n, hp, step); }
  void run_8bit() {
    adamw_8bit_update<float, float, vramlab::bf16_t>(
        param8.data(), grad.data(), qm.data(), qv.data(), absmax_m.data(), absmax_v.data(), nullptr,
        n, kBlock, hp, {.step = step, .grad_multiplier = 1.0f});
  }
};

double seconds_of(const auto& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_AdamW8bitVsFp32(benchmark::State& state) {
  Problem problem(state.range(0));
  double fastest_fp32 = 1e300, fastest_8bit = 1e300;
  for (auto _ : state) {
    const double fp32 = seconds_of([&] { problem.run_fp32(); });
    const double eight_bit = seconds_of([&] { problem.run_8bit(); });
    problem.step++;
    fastest_fp32 = std::min(fastest_fp32, fp32);
    fastest_8bit = std::min(fastest_8bit, eight_bit);
    state.SetIterationTime(fp32 + eight_bit);
  }
  const double n = static_cast<double>(problem.n);
  state.counters["fp32_ns_per_param"] = fastest_fp32 * 1e9 / n;
  state.counters["8bit_ns_per_param"] = fastest_8bit * 1e9 / n;
  state.counters["8bit_over_fp32"] = fastest_8bit / fastest_fp32;
}
BENCHMARK(BM_AdamW8bitVsFp32)->Arg(1 << 24)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_AdamWFp32(benchmark::State& state) {
  Problem problem(state.range(0));
  for (auto _ : state) {
    problem.run_fp32();
    problem.step++;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AdamWFp32)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_AdamW8bit(benchmark::State& state) {
  Problem problem(state.range(0));
  for (auto _ : state) {
    problem.run_8bit();
    problem.step++;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AdamW8bit)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_QuantizeBlockwise(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x = random_values(n, 3, 1.0f);
  std::vector<uint8_t> q(static_cast<size_t>(n));                                       // (n)
  std::vector<float> absmax(static_cast<size_t>(quantization_block_count(n, kBlock)));  // (blocks)
  for (auto _ : state) {
    quantize_blockwise(q.data(), absmax.data(), x.data(), n, kBlock,
                       dynamic_quantization_map(true));
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_QuantizeBlockwise)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
