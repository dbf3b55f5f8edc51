// The linear layer of the CPU backend, forward + backward (dinp, dweight, dbias accumulated), at
// gpt2-tiny shapes: N = 1024 tokens, C = 256, OC = 768 (qkv), 1024 (mlp up) and 4096 (a
// vocabulary-sized head). FLOP/s counts 6·N·C·OC per iteration (three GEMMs of 2·N·C·OC) over
// wall-clock time (the GEMMs run on every OpenMP thread).
//   f32          parallel_linear.h: OpenBLAS sgemm, one band per OpenMP thread
//   bf16         low_precision_linear.h's default: oneDNN on bf16 (AMX / AVX512-BF16) where the
//                CPU has it, else the widening path
//   bf16_widen   bf16 forced through the widening path (what a CPU without bf16 runs)
//   f16          f16 (always the widening path)
// The 16-bit rows keep fp32 parameter gradients (G = f32), the common mixed-precision setup.
//
//   build/bench/bin/bench_linear_low_precision
//   build/bench/bin/bench_linear_low_precision --benchmark_min_time=0.01   # smoke run (CI)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype/convert.h"
#include "common/nn/low_precision_linear.h"
#include "common/nn/parallel_linear.h"

extern "C" void openblas_set_num_threads(int num_threads);  // stable OpenBLAS symbol

namespace nn = vramlab::nn;
using vramlab::bf16_t;
using vramlab::f16_t;

namespace {

constexpr int64_t kTokens = 1024, kChannels = 256;

// Values in [-1, 1) from a cheap integer hash, rounded to T.
template <typename T>
std::vector<T> random_values(int64_t n, uint64_t seed) {
  std::vector<T> values(static_cast<size_t>(n));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull;
  for (auto& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float x = static_cast<float>(state >> 40) * (2.0f / 16777216.0f) - 1.0f;
    if constexpr (std::is_same_v<T, float>) {
      value = x;
    } else if constexpr (std::is_same_v<T, bf16_t>) {
      value = vramlab::to_bf16(x);
    } else {
      value = vramlab::to_f16(x);
    }
  }
  return values;
}

void report(benchmark::State& state, int64_t OC) {
  state.counters["FLOP/s"] = benchmark::Counter(6.0 * static_cast<double>(kTokens * kChannels * OC),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LinearF32(benchmark::State& state) {
  openblas_set_num_threads(1);  // as Runtime does: the OpenMP bands own the cores
  const int64_t N = kTokens, C = kChannels, OC = state.range(0);
  auto inp = random_values<float>(N * C, 1), weight = random_values<float>(OC * C, 2);
  auto bias = random_values<float>(OC, 3), dout = random_values<float>(N * OC, 4);
  std::vector<float> out(static_cast<size_t>(N * OC));      // (N, OC)
  std::vector<float> dinp(static_cast<size_t>(N * C));      // (N, C)
  std::vector<float> dweight(static_cast<size_t>(OC * C));  // (OC, C)
  std::vector<float> dbias(static_cast<size_t>(OC));        // (OC)
  for (auto _ : state) {
    nn::parallel_linear_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    nn::parallel_linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                                 weight.data(), N, C, OC);
    benchmark::DoNotOptimize(dweight.data());
  }
  report(state, OC);
}

template <typename A>
void linear_16bit(benchmark::State& state, nn::LowPrecisionGemm path) {
  openblas_set_num_threads(1);
  const int64_t N = kTokens, C = kChannels, OC = state.range(0);
  auto inp = random_values<A>(N * C, 1), weight = random_values<A>(OC * C, 2);
  auto bias = random_values<A>(OC, 3), dout = random_values<A>(N * OC, 4);
  std::vector<A> out(static_cast<size_t>(N * OC));          // (N, OC)
  std::vector<A> dinp(static_cast<size_t>(N * C));          // (N, C)
  std::vector<float> dweight(static_cast<size_t>(OC * C));  // (OC, C) fp32 gradients
  std::vector<float> dbias(static_cast<size_t>(OC));        // (OC)
  for (auto _ : state) {
    nn::low_precision_linear_forward<A>(out.data(), inp.data(), weight.data(), bias.data(), N, C,
                                        OC, path);
    nn::low_precision_linear_backward<A, float>(dinp.data(), dweight.data(), dbias.data(),
                                                dout.data(), inp.data(), weight.data(), N, C, OC,
                                                path);
    benchmark::DoNotOptimize(dweight.data());
  }
  report(state, OC);
}

void BM_LinearBf16(benchmark::State& state) {
  state.SetLabel(std::string(nn::low_precision_gemm_name("bf16")));
  linear_16bit<bf16_t>(state, nn::LowPrecisionGemm::automatic);
}
void BM_LinearBf16Widen(benchmark::State& state) {
  linear_16bit<bf16_t>(state, nn::LowPrecisionGemm::widen);
}
void BM_LinearF16(benchmark::State& state) {
  linear_16bit<f16_t>(state, nn::LowPrecisionGemm::automatic);
}

BENCHMARK(BM_LinearF32)
    ->Arg(768)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LinearBf16)
    ->Arg(768)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LinearBf16Widen)
    ->Arg(768)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LinearF16)
    ->Arg(768)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
