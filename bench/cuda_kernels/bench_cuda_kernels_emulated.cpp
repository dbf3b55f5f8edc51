// CUDA kernels v1 against v2 under the SIMT emulator, for information: on the CPU a v2 kernel is
// often SLOWER than v1 (it runs more threads, and every shuffle is a fiber switch), so these
// numbers show what emulation costs, not what a GPU would do (bench_cuda_kernels_gpu measures
// that). Rates are per wall-clock second (the work runs on the emulator's worker threads).
// Counters: bytes_per_second over the bytes the kernel must move once, items_per_second (elements
// per second). Run: build/bench/bin/bench_cuda_kernels_emulated [--benchmark_filter=layernorm]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda/ops.h"
#include "kernels/simt/device_memory.h"

namespace {

using vramlab::kernels::cuda::KernelVersion;
namespace cuda = vramlab::kernels::cuda;
namespace simt = vramlab::simt;

// Rows × channels of the row benchmarks (GPT-2 small's C, few rows: emulation is slow).
constexpr int64_t kRows = 64, kChannels = 768;
constexpr int64_t kVocabulary = 4096;
constexpr int64_t kFlat = 1 << 16;

simt::DeviceBuffer<float> random_buffer(int64_t n, std::uint64_t seed, float low = -1.0f,
                                        float high = 1.0f) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> host(static_cast<std::size_t>(n));
  for (float& x : host) x = distribution(generator);
  simt::DeviceBuffer<float> buffer(static_cast<std::size_t>(n));
  buffer.copy_from_host(host.data());
  return buffer;
}

// bytes: what the kernel must read and write once; elements: outputs (or inputs of reductions).
void set_counters(benchmark::State& state, int64_t bytes, int64_t elements) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * elements);
}

void layernorm_forward(benchmark::State& state, KernelVersion version) {
  auto inp = random_buffer(kRows * kChannels, 1), weight = random_buffer(kChannels, 2);
  auto bias = random_buffer(kChannels, 3), out = random_buffer(kRows * kChannels, 4);
  auto mean = random_buffer(kRows, 5), rstd = random_buffer(kRows, 6);
  for (auto _ : state) {
    cuda::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                            bias.data(), kRows, kChannels, 1e-5f, version);
  }
  set_counters(state, 2 * kRows * kChannels * 4, kRows * kChannels);
}

void layernorm_backward(benchmark::State& state, KernelVersion version) {
  auto dinp = random_buffer(kRows * kChannels, 1), dweight = random_buffer(kChannels, 2);
  auto dbias = random_buffer(kChannels, 3), dout = random_buffer(kRows * kChannels, 4);
  auto inp = random_buffer(kRows * kChannels, 5), weight = random_buffer(kChannels, 6);
  auto mean = random_buffer(kRows, 7), rstd = random_buffer(kRows, 8, 0.5f, 1.5f);
  for (auto _ : state) {
    cuda::layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                             weight.data(), mean.data(), rstd.data(), kRows, kChannels, version);
  }
  set_counters(state, 4 * kRows * kChannels * 4, kRows * kChannels);
}

void rmsnorm_forward(benchmark::State& state, KernelVersion version) {
  auto inp = random_buffer(kRows * kChannels, 1), weight = random_buffer(kChannels, 2);
  auto out = random_buffer(kRows * kChannels, 3), rstd = random_buffer(kRows, 4);
  for (auto _ : state) {
    cuda::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kRows, kChannels,
                          1e-5f, version);
  }
  set_counters(state, 2 * kRows * kChannels * 4, kRows * kChannels);
}

void rmsnorm_backward(benchmark::State& state, KernelVersion version) {
  auto dinp = random_buffer(kRows * kChannels, 1), dweight = random_buffer(kChannels, 2);
  auto dout = random_buffer(kRows * kChannels, 3), inp = random_buffer(kRows * kChannels, 4);
  auto weight = random_buffer(kChannels, 5), rstd = random_buffer(kRows, 6, 0.5f, 1.5f);
  for (auto _ : state) {
    cuda::rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(),
                           rstd.data(), kRows, kChannels, version);
  }
  set_counters(state, 4 * kRows * kChannels * 4, kRows * kChannels);
}

void softmax_forward(benchmark::State& state, KernelVersion version) {
  auto inp = random_buffer(kRows * kChannels, 1, -5.0f, 5.0f);
  auto out = random_buffer(kRows * kChannels, 2);
  for (auto _ : state) cuda::softmax_forward(out.data(), inp.data(), kRows, kChannels, version);
  set_counters(state, 2 * kRows * kChannels * 4, kRows * kChannels);
}

void softmax_backward(benchmark::State& state, KernelVersion version) {
  auto dinp = random_buffer(kRows * kChannels, 1), dout = random_buffer(kRows * kChannels, 2);
  auto out = random_buffer(kRows * kChannels, 3, 0.0f, 1.0f);
  for (auto _ : state) {
    cuda::softmax_backward(dinp.data(), dout.data(), out.data(), kRows, kChannels, version);
  }
  set_counters(state, 3 * kRows * kChannels * 4, kRows * kChannels);
}

void cross_entropy_forward(benchmark::State& state, KernelVersion version) {
  auto logits = random_buffer(kRows * kVocabulary, 1, -5.0f, 5.0f);
  auto losses = random_buffer(kRows, 2), logsumexp = random_buffer(kRows, 3);
  std::vector<int32_t> host_targets(kRows);
  for (int64_t i = 0; i < kRows; i++)
    host_targets[static_cast<std::size_t>(i)] = static_cast<int32_t>(i * 61 % kVocabulary);
  simt::DeviceBuffer<int32_t> targets(kRows);
  targets.copy_from_host(host_targets.data());
  for (auto _ : state) {
    cuda::cross_entropy_forward(losses.data(), logsumexp.data(), nullptr, logits.data(),
                                targets.data(), kRows, kVocabulary, kVocabulary, version);
  }
  set_counters(state, kRows * kVocabulary * 4, kRows * kVocabulary);
}

void sum_of_squares(benchmark::State& state, KernelVersion version) {
  auto x = random_buffer(kFlat, 1);
  simt::DeviceBuffer<double> out(1);
  for (auto _ : state) cuda::sum_of_squares(out.data(), x.data(), kFlat, version);
  set_counters(state, kFlat * 4, kFlat);
}

void adamw_update(benchmark::State& state, KernelVersion version) {
  auto param = random_buffer(kFlat, 1), grad = random_buffer(kFlat, 2);
  auto m = random_buffer(kFlat, 3), v = random_buffer(kFlat, 4, 0.0f, 1.0f);
  vramlab::kernels::cpu::AdamWHyperparameters hp;
  int64_t step = 1;
  for (auto _ : state) {
    cuda::adamw_update(param.data(), grad.data(), m.data(), v.data(), kFlat, hp, step++, version);
  }
  set_counters(state, 7 * kFlat * 4, kFlat);
}

// The low-memory optimizers on kFlat f32 parameters (f32 storage, no working copy). Adam-mini:
// blocks of kChannels (a head's or a row's worth); Adafactor: a kFlat / 1024 × 1024 matrix;
// 8-bit AdamW: bitsandbytes' quantization block of 256.
void lion_update(benchmark::State& state, KernelVersion version) {
  auto param = random_buffer(kFlat, 1), grad = random_buffer(kFlat, 2), m = random_buffer(kFlat, 3);
  const vramlab::kernels::cpu::LionHyperparameters hp;
  for (auto _ : state) {
    cuda::lion_update<float, float, float>(param.data(), grad.data(), m.data(), nullptr,
                                           vramlab::DType::bf16, kFlat, hp,
                                           {.grad_multiplier = 1.0f}, version);
  }
  set_counters(state, 5 * kFlat * 4, kFlat);
}

void adam_mini_update(benchmark::State& state, KernelVersion version) {
  constexpr int64_t kBlocks = kFlat / kChannels, kElements = kBlocks * kChannels;
  auto param = random_buffer(kElements, 1), grad = random_buffer(kElements, 2);
  auto m = random_buffer(kElements, 3), v = random_buffer(kBlocks, 4, 0.0f, 1.0f);
  const vramlab::kernels::cpu::AdamWHyperparameters hp;
  int64_t step = 1;
  for (auto _ : state) {
    cuda::adam_mini_update<float, float, float>(
        param.data(), grad.data(), m.data(), v.data(), nullptr, vramlab::DType::bf16, kChannels,
        kBlocks, hp, {.step = step++, .grad_multiplier = 1.0f}, version);
  }
  set_counters(state, 5 * kElements * 4, kElements);
}

void adafactor_update(benchmark::State& state, KernelVersion version) {
  constexpr int64_t kCols = 1024, kRowsOfMatrix = kFlat / kCols;
  auto param = random_buffer(kFlat, 1), grad = random_buffer(kFlat, 2);
  auto row_var = random_buffer(kRowsOfMatrix, 3, 0.0f, 1.0f);
  auto col_var = random_buffer(kCols, 4, 0.0f, 1.0f);
  const vramlab::kernels::cpu::AdafactorHyperparameters hp;
  int64_t step = 1;
  for (auto _ : state) {
    cuda::adafactor_update<float, float, float>(
        param.data(), grad.data(), row_var.data(), col_var.data(), nullptr, vramlab::DType::bf16,
        kRowsOfMatrix, kCols, true, hp, {.step = step++, .grad_multiplier = 1.0f}, version);
  }
  // What must move once: param read and written, grad read (the kernels read grad four times).
  set_counters(state, 3 * kFlat * 4, kFlat);
}

void adamw_8bit_update(benchmark::State& state, KernelVersion version) {
  constexpr int64_t kBlock = 256, kBlocks = kFlat / kBlock;
  auto param = random_buffer(kFlat, 1), grad = random_buffer(kFlat, 2);
  simt::DeviceBuffer<std::uint8_t> qm(kFlat), qv(kFlat);
  const std::vector<std::uint8_t> zero_codes(kFlat, 0);  // (kFlat) the state before step 1
  qm.copy_from_host(zero_codes.data());
  qv.copy_from_host(zero_codes.data());
  auto absmax_m = random_buffer(kBlocks, 3, 0.0f, 0.0f),
       absmax_v = random_buffer(kBlocks, 4, 0.0f, 0.0f);
  const vramlab::kernels::cpu::AdamWHyperparameters hp;
  int64_t step = 1;
  for (auto _ : state) {
    cuda::adamw_8bit_update<float, float>(param.data(), grad.data(), qm.data(), qv.data(),
                                          absmax_m.data(), absmax_v.data(), nullptr,
                                          vramlab::DType::bf16, kFlat, kBlock, hp,
                                          {.step = step++, .grad_multiplier = 1.0f}, version);
  }
  // What must move once: param read and written, grad read (f32), qm and qv read and written.
  set_counters(state, 3 * kFlat * 4 + 4 * kFlat, kFlat);
}

// Flash attention at a small GPT-2-like head shape (emulation is slow): causal, B = 1, H = 4,
// T = 256, D = 64; bytes: q, k, v and out once (forward), and dout, dq, dk, dv too (backward).
constexpr int64_t kFlashB = 1, kFlashT = 256, kFlashH = 4, kFlashD = 64;
constexpr int64_t kFlashElements = kFlashB * kFlashT * kFlashH * kFlashD;

void flash_attention_forward(benchmark::State& state, KernelVersion version) {
  auto q = random_buffer(kFlashElements, 1), k = random_buffer(kFlashElements, 2);
  auto v = random_buffer(kFlashElements, 3), out = random_buffer(kFlashElements, 4);
  auto lse = random_buffer(kFlashB * kFlashH * kFlashT, 5);
  for (auto _ : state) {
    cuda::flash_attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), kFlashB,
                                  kFlashT, kFlashH, kFlashH, kFlashD, {}, version);
  }
  set_counters(state, 4 * kFlashElements * 4, kFlashElements);
}

void flash_attention_backward(benchmark::State& state, KernelVersion version) {
  auto q = random_buffer(kFlashElements, 1), k = random_buffer(kFlashElements, 2);
  auto v = random_buffer(kFlashElements, 3), out = random_buffer(kFlashElements, 4);
  auto lse = random_buffer(kFlashB * kFlashH * kFlashT, 5);
  auto delta = random_buffer(kFlashB * kFlashH * kFlashT, 6);
  auto dout = random_buffer(kFlashElements, 7), dq = random_buffer(kFlashElements, 8);
  auto dk = random_buffer(kFlashElements, 9), dv = random_buffer(kFlashElements, 10);
  // out and lse of these q, k, v: the backward's exp(S − lse) must be a probability.
  cuda::flash_attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), kFlashB,
                                kFlashT, kFlashH, kFlashH, kFlashD, {}, version);
  for (auto _ : state) {
    cuda::flash_attention_backward(dq.data(), dk.data(), dv.data(), delta.data(), dout.data(),
                                   q.data(), k.data(), v.data(), out.data(), lse.data(), kFlashB,
                                   kFlashT, kFlashH, kFlashH, kFlashD, {}, version);
  }
  set_counters(state, 8 * kFlashElements * 4, kFlashElements);
}

#define VRAMLAB_BENCH_VERSIONS(op)                                                            \
  BENCHMARK_CAPTURE(op, v1, KernelVersion::v1)->UseRealTime()->Unit(benchmark::kMicrosecond); \
  BENCHMARK_CAPTURE(op, v2, KernelVersion::v2)->UseRealTime()->Unit(benchmark::kMicrosecond)

VRAMLAB_BENCH_VERSIONS(layernorm_forward);
VRAMLAB_BENCH_VERSIONS(layernorm_backward);
VRAMLAB_BENCH_VERSIONS(rmsnorm_forward);
VRAMLAB_BENCH_VERSIONS(rmsnorm_backward);
VRAMLAB_BENCH_VERSIONS(softmax_forward);
VRAMLAB_BENCH_VERSIONS(softmax_backward);
VRAMLAB_BENCH_VERSIONS(cross_entropy_forward);
VRAMLAB_BENCH_VERSIONS(sum_of_squares);
VRAMLAB_BENCH_VERSIONS(adamw_update);
VRAMLAB_BENCH_VERSIONS(lion_update);
VRAMLAB_BENCH_VERSIONS(adam_mini_update);
VRAMLAB_BENCH_VERSIONS(adafactor_update);
VRAMLAB_BENCH_VERSIONS(adamw_8bit_update);
VRAMLAB_BENCH_VERSIONS(flash_attention_forward);
VRAMLAB_BENCH_VERSIONS(flash_attention_backward);

}  // namespace
