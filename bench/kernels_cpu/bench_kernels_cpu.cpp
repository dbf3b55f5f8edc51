// Benchmarks of the CPU kernels: each op's OpenMP fast path against its readable reference at
// GPT-2-small-like shapes (B·T = 8·128 tokens, C = 256 or 768, 4 heads of 64, vocabulary 4096),
// reporting FLOP/s for the compute-bound ops and bytes/s for the memory-bound ones, and the
// machine's SGEMM rate at 1024³ (the FLOP floor of a training step).
//
//   build/bench/bin/bench_kernels_cpu                      # full run
//   build/bench/bin/bench_kernels_cpu --benchmark_min_time=0.01   # smoke run (CI)
//   build/bench/bin/bench_kernels_cpu --benchmark_filter=Sgemm
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/flash_attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_low_precision.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/softmax.h"

namespace cpu = vramlab::kernels::cpu;

namespace {

constexpr int64_t kBatch = 8, kSeq = 128, kTokens = kBatch * kSeq, kHeadDim = 64, kVocab = 4096;

// Uniform values from a cheap integer hash (splitmix64): setting up the 4 M-element buffers with
// <random> took longer than the benchmarks themselves in a smoke run.
std::vector<float> random_buffer(int64_t n, uint64_t seed, float low = -1.0f, float high = 1.0f) {
  std::vector<float> values(static_cast<size_t>(n));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull;
  for (auto& value : values) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    value = low + (high - low) * unit;
  }
  return values;
}

std::vector<int32_t> random_ids(int64_t n, int64_t V, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int32_t> distribution(0, static_cast<int32_t>(V - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = distribution(generator);
  return ids;
}

// Reports floating-point operations per second (shown as e.g. "FLOP/s=120G/s").
void report_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] = benchmark::Counter(
      flops_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void report_bytes(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration) * state.iterations());
}

void BM_Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_buffer(n * n, 1), b = random_buffer(n * n, 2);
  std::vector<float> c(static_cast<size_t>(n * n));
  for (auto _ : state) {
    cpu::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  report_flops(state, 2.0 * static_cast<double>(n * n * n));
}
BENCHMARK(BM_Sgemm)->Arg(256)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

// Linear layer C -> OC over all tokens (state.range(0) = C, range(1) = OC).
void BM_MatmulForward(benchmark::State& state, bool reference) {
  const int64_t C = state.range(0), OC = state.range(1);
  const auto inp = random_buffer(kTokens * C, 1), weight = random_buffer(OC * C, 2),
             bias = random_buffer(OC, 3);
  std::vector<float> out(static_cast<size_t>(kTokens * OC));
  for (auto _ : state) {
    if (reference) {
      cpu::matmul_forward_reference<float>(out.data(), inp.data(), weight.data(), bias.data(),
                                           kTokens, C, OC);
    } else {
      cpu::matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), kTokens, C, OC);
    }
    benchmark::DoNotOptimize(out.data());
  }
  report_flops(state, 2.0 * static_cast<double>(kTokens * C * OC));
}
BENCHMARK_CAPTURE(BM_MatmulForward, fast, false)
    ->Args({256, 768})
    ->Args({256, 1024})
    ->Args({768, 2304})
    ->Args({768, 3072})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulForward, reference, true)
    ->Args({256, 768})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_MatmulBackward(benchmark::State& state, bool reference) {
  const int64_t C = state.range(0), OC = state.range(1);
  const auto inp = random_buffer(kTokens * C, 1), weight = random_buffer(OC * C, 2),
             dout = random_buffer(kTokens * OC, 3);
  std::vector<float> dinp(inp.size()), dweight(weight.size()), dbias(static_cast<size_t>(OC));
  for (auto _ : state) {
    if (reference) {
      cpu::matmul_backward_reference<float>(dinp.data(), dweight.data(), dbias.data(), dout.data(),
                                            inp.data(), weight.data(), kTokens, C, OC);
    } else {
      cpu::matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                           weight.data(), kTokens, C, OC);
    }
    benchmark::DoNotOptimize(dweight.data());
  }
  report_flops(state, 4.0 * static_cast<double>(kTokens * C * OC));
}
BENCHMARK_CAPTURE(BM_MatmulBackward, fast, false)
    ->Args({256, 768})
    ->Args({768, 3072})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulBackward, reference, true)
    ->Args({256, 768})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A GPT-2 MLP forward (C -> 4C, GELU, 4C -> C): OpenBLAS products alternating with an OpenMP
// kernel, as in a training step. Compared with BM_MatmulForward it shows what switching between
// OpenBLAS's threads and OpenMP's threads costs on this machine.
void BM_MlpForward(benchmark::State& state) {
  const int64_t C = state.range(0), hidden = 4 * C;
  const auto x = random_buffer(kTokens * C, 1), fc_weight = random_buffer(hidden * C, 2),
             fc_bias = random_buffer(hidden, 3), proj_weight = random_buffer(C * hidden, 4),
             proj_bias = random_buffer(C, 5);
  std::vector<float> pre(static_cast<size_t>(kTokens * hidden)), activated(pre.size()),
      out(x.size());
  for (auto _ : state) {
    cpu::matmul_forward(pre.data(), x.data(), fc_weight.data(), fc_bias.data(), kTokens, C, hidden);
    cpu::gelu_forward(activated.data(), pre.data(), kTokens * hidden);
    cpu::matmul_forward(out.data(), activated.data(), proj_weight.data(), proj_bias.data(), kTokens,
                        hidden, C);
    benchmark::DoNotOptimize(out.data());
  }
  report_flops(state, 4.0 * static_cast<double>(kTokens * C * hidden));
}
BENCHMARK(BM_MlpForward)->Arg(256)->Arg(768)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same linear layer with bf16 or f16 operands (widened to f32 unless OpenBLAS has sbgemm).
template <typename Storage>
void BM_MatmulForwardLowPrecision(benchmark::State& state) {
  const int64_t C = state.range(0), OC = state.range(1);
  const auto inp32 = random_buffer(kTokens * C, 1), weight32 = random_buffer(OC * C, 2),
             bias = random_buffer(OC, 3);
  const auto narrow = [](float x) {
    if constexpr (std::is_same_v<Storage, vramlab::bf16_t>) {
      return vramlab::to_bf16(x);
    } else {
      return vramlab::to_f16(x);
    }
  };
  std::vector<Storage> inp(inp32.size()), weight(weight32.size());
  for (size_t i = 0; i < inp.size(); i++) inp[i] = narrow(inp32[i]);
  for (size_t i = 0; i < weight.size(); i++) weight[i] = narrow(weight32[i]);
  std::vector<float> out(static_cast<size_t>(kTokens * OC));
  for (auto _ : state) {
    cpu::matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), kTokens, C, OC);
    benchmark::DoNotOptimize(out.data());
  }
  report_flops(state, 2.0 * static_cast<double>(kTokens * C * OC));
}
BENCHMARK_TEMPLATE(BM_MatmulForwardLowPrecision, vramlab::bf16_t)
    ->Args({768, 3072})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_MatmulForwardLowPrecision, vramlab::f16_t)
    ->Args({768, 3072})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Causal attention, B = 8, T = 128, D = 64, H = C/64 heads (GQA with range(1) kv heads).
double attention_flops(int64_t H) {
  // q·kᵀ and att·v over the causal half: 2 products · 2 FLOP · B·H·T(T+1)/2·D.
  return 4.0 * static_cast<double>(kBatch * H * kSeq * (kSeq + 1) / 2 * kHeadDim);
}

void BM_AttentionForward(benchmark::State& state, bool reference) {
  const int64_t H = state.range(0), Hkv = state.range(1);
  const auto q = random_buffer(kTokens * H * kHeadDim, 1),
             k = random_buffer(kTokens * Hkv * kHeadDim, 2),
             v = random_buffer(kTokens * Hkv * kHeadDim, 3);
  std::vector<float> out(q.size()), preatt(static_cast<size_t>(kBatch * H * kSeq * kSeq)),
      att(preatt.size());
  for (auto _ : state) {
    if (reference) {
      cpu::attention_forward_reference<float>(out.data(), preatt.data(), att.data(), q.data(),
                                              k.data(), v.data(), kBatch, kSeq, H, Hkv, kHeadDim);
    } else {
      cpu::attention_forward(out.data(), preatt.data(), att.data(), q.data(), k.data(), v.data(),
                             kBatch, kSeq, H, Hkv, kHeadDim);
    }
    benchmark::DoNotOptimize(out.data());
  }
  report_flops(state, attention_flops(H));
}
BENCHMARK_CAPTURE(BM_AttentionForward, fast, false)
    ->Args({4, 4})
    ->Args({12, 12})
    ->Args({12, 4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionForward, reference, true)
    ->Args({4, 4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_AttentionBackward(benchmark::State& state, bool reference) {
  const int64_t H = state.range(0), Hkv = state.range(1);
  const auto q = random_buffer(kTokens * H * kHeadDim, 1),
             k = random_buffer(kTokens * Hkv * kHeadDim, 2),
             v = random_buffer(kTokens * Hkv * kHeadDim, 3), dout = random_buffer(q.size(), 4);
  std::vector<float> out(q.size()), preatt(static_cast<size_t>(kBatch * H * kSeq * kSeq)),
      att(preatt.size()), dpreatt(preatt.size()), dq(q.size()), dk(k.size()), dv(v.size());
  cpu::attention_forward(out.data(), preatt.data(), att.data(), q.data(), k.data(), v.data(),
                         kBatch, kSeq, H, Hkv, kHeadDim);
  for (auto _ : state) {
    if (reference) {
      cpu::attention_backward_reference<float>(dq.data(), dk.data(), dv.data(), dpreatt.data(),
                                               dout.data(), q.data(), k.data(), v.data(),
                                               att.data(), kBatch, kSeq, H, Hkv, kHeadDim);
    } else {
      cpu::attention_backward(dq.data(), dk.data(), dv.data(), dpreatt.data(), dout.data(),
                              q.data(), k.data(), v.data(), att.data(), kBatch, kSeq, H, Hkv,
                              kHeadDim);
    }
    benchmark::DoNotOptimize(dq.data());
  }
  report_flops(state, 2.0 * attention_flops(H));
}
BENCHMARK_CAPTURE(BM_AttentionBackward, fast, false)
    ->Args({4, 4})
    ->Args({12, 12})
    ->Args({12, 4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionBackward, reference, true)
    ->Args({4, 4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Lesson 06: one causal attention forward + backward at B=1, H=8, D=64 (the shape
// bench/compare_sdpa.py runs against PyTorch's scaled_dot_product_attention), flash vs the naive
// attention, T = range(0). The naive one keeps its scores in place in att (as the runtime does), so
// it needs 2·H·T² floats: 1 GiB at T=4096. Optional range(1), range(2) set the flash tile sizes.
void BM_CausalAttentionForwardBackward(benchmark::State& state, bool flash) {
  constexpr int64_t B = 1, H = 8, D = 64;
  const int64_t T = state.range(0);
  cpu::FlashTiles tiles;
  if (state.range(1) > 0) tiles = {state.range(1), state.range(2)};
  const auto q = random_buffer(B * T * H * D, 1), k = random_buffer(q.size(), 2),
             v = random_buffer(q.size(), 3), dout = random_buffer(q.size(), 4);
  std::vector<float> out(q.size()), dq(q.size()), dk(q.size()), dv(q.size());  // (B, T, H, D)
  std::vector<float> lse(static_cast<size_t>(B * H * T)), delta(lse.size());   // (B, H, T)
  std::vector<float> att(flash ? 0 : static_cast<size_t>(B * H * T * T)),      // (B, H, T, T)
      datt(att.size());
  for (auto _ : state) {
    if (flash) {
      cpu::flash_attention_forward<float>(out.data(), lse.data(), q.data(), k.data(), v.data(), B,
                                          T, H, H, D, {}, tiles);
      cpu::flash_attention_backward<float>(dq.data(), dk.data(), dv.data(), delta.data(),
                                           dout.data(), q.data(), k.data(), v.data(), out.data(),
                                           lse.data(), B, T, H, H, D, {}, tiles);
    } else {
      cpu::attention_forward(out.data(), att.data(), att.data(), q.data(), k.data(), v.data(), B, T,
                             H, H, D);
      cpu::attention_backward(dq.data(), dk.data(), dv.data(), datt.data(), dout.data(), q.data(),
                              k.data(), v.data(), att.data(), B, T, H, H, D);
    }
    benchmark::DoNotOptimize(dq.data());
  }
  // Forward 2 products, backward 5 (FA2's count), each 2·T(T+1)/2·D per head.
  report_flops(state, 7.0 * 2.0 * static_cast<double>(B * H * T * (T + 1) / 2 * D));
}
BENCHMARK_CAPTURE(BM_CausalAttentionForwardBackward, flash, true)
    ->ArgsProduct({{512, 1024, 2048, 4096}, {0}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// The tile sizes (Br, Bc) at T=2048: how the working set per task trades against the work a tile
// row amortises.
BENCHMARK_CAPTURE(BM_CausalAttentionForwardBackward, flash_tiles, true)
    ->ArgsProduct({{2048}, {32, 64, 128}, {32, 64, 128}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CausalAttentionForwardBackward, naive, false)
    ->ArgsProduct({{512, 1024, 2048, 4096}, {0}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Elementwise activations over the MLP hidden layer (B·T, 4C); range(0) = C.
enum class Activation { kGelu, kSilu, kSwiglu };

void BM_ActivationForward(benchmark::State& state, Activation op, bool reference) {
  const int64_t n = kTokens * 4 * state.range(0);
  const auto x = random_buffer(n, 1, -4.0f, 4.0f), up = random_buffer(n, 2);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    switch (op) {
      case Activation::kGelu:
        reference ? cpu::gelu_forward_reference<float>(out.data(), x.data(), n)
                  : cpu::gelu_forward(out.data(), x.data(), n);
        break;
      case Activation::kSilu:
        reference ? cpu::silu_forward_reference<float>(out.data(), x.data(), n)
                  : cpu::silu_forward(out.data(), x.data(), n);
        break;
      case Activation::kSwiglu:
        reference ? cpu::swiglu_forward_reference<float>(out.data(), x.data(), up.data(), n)
                  : cpu::swiglu_forward(out.data(), x.data(), up.data(), n);
        break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, (op == Activation::kSwiglu ? 12.0 : 8.0) * static_cast<double>(n));
}

void BM_ActivationBackward(benchmark::State& state, Activation op, bool reference) {
  const int64_t n = kTokens * 4 * state.range(0);
  const auto x = random_buffer(n, 1, -4.0f, 4.0f), up = random_buffer(n, 2),
             dout = random_buffer(n, 3);
  std::vector<float> dx(static_cast<size_t>(n)), dup(dx.size());
  for (auto _ : state) {
    switch (op) {
      case Activation::kGelu:
        reference ? cpu::gelu_backward_reference<float>(dx.data(), x.data(), dout.data(), n)
                  : cpu::gelu_backward(dx.data(), x.data(), dout.data(), n);
        break;
      case Activation::kSilu:
        reference ? cpu::silu_backward_reference<float>(dx.data(), x.data(), dout.data(), n)
                  : cpu::silu_backward(dx.data(), x.data(), dout.data(), n);
        break;
      case Activation::kSwiglu:
        reference
            ? cpu::swiglu_backward_reference<float>(dx.data(), dup.data(), dout.data(), x.data(),
                                                    up.data(), n)
            : cpu::swiglu_backward(dx.data(), dup.data(), dout.data(), x.data(), up.data(), n);
        break;
    }
    benchmark::DoNotOptimize(dx.data());
  }
  report_bytes(state, (op == Activation::kSwiglu ? 28.0 : 16.0) * static_cast<double>(n));
}

#define VRAMLAB_ACTIVATION_BENCHMARKS(Name, op)                                                 \
  BENCHMARK_CAPTURE(BM_ActivationForward, Name##_fast, op, false)                               \
      ->Arg(256)                                                                                \
      ->Arg(768)                                                                                \
      ->UseRealTime();                                                                          \
  BENCHMARK_CAPTURE(BM_ActivationForward, Name##_reference, op, true)->Arg(256)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_ActivationBackward, Name##_fast, op, false)                              \
      ->Arg(256)                                                                                \
      ->Arg(768)                                                                                \
      ->UseRealTime();                                                                          \
  BENCHMARK_CAPTURE(BM_ActivationBackward, Name##_reference, op, true)->Arg(256)->UseRealTime();
VRAMLAB_ACTIVATION_BENCHMARKS(gelu, Activation::kGelu)
VRAMLAB_ACTIVATION_BENCHMARKS(silu, Activation::kSilu)
VRAMLAB_ACTIVATION_BENCHMARKS(swiglu, Activation::kSwiglu)
#undef VRAMLAB_ACTIVATION_BENCHMARKS

// Dropout over the MLP hidden layer (B·T, 4C), C = 256: the counter-based mask costs two
// SplitMix64 mixes per element, against a plain copy at p = 0. range(0) = p in percent.
void BM_DropoutForward(benchmark::State& state, bool reference) {
  const int64_t n = kTokens * 4 * 256;
  const float p = static_cast<float>(state.range(0)) / 100.0f;
  const auto x = random_buffer(n, 1);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    reference ? cpu::dropout_forward_reference<float>(out.data(), x.data(), n, p, 7, 0)
              : cpu::dropout_forward(out.data(), x.data(), n, p, 7, 0);
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, 8.0 * static_cast<double>(n));
}
BENCHMARK_CAPTURE(BM_DropoutForward, fast, false)->Arg(0)->Arg(10)->UseRealTime();
BENCHMARK_CAPTURE(BM_DropoutForward, reference, true)->Arg(10)->UseRealTime();

// Int8 quantisation of a (B·T, C = 768) activation, then back; range(0) = block size.
void BM_QuantizeInt8(benchmark::State& state, bool dequantize) {
  const int64_t n = kTokens * 768, block = state.range(0);
  const auto x = random_buffer(n, 1);
  std::vector<int8_t> q(static_cast<size_t>(n));
  std::vector<float> scales(static_cast<size_t>(cpu::int8_block_count(n, block))),
      back(static_cast<size_t>(n));
  cpu::quantize_int8(q.data(), scales.data(), x.data(), n, block);
  for (auto _ : state) {
    if (dequantize) {
      cpu::dequantize_int8(back.data(), q.data(), scales.data(), n, block);
      benchmark::DoNotOptimize(back.data());
    } else {
      cpu::quantize_int8(q.data(), scales.data(), x.data(), n, block);
      benchmark::DoNotOptimize(q.data());
    }
  }
  report_bytes(state, 5.0 * static_cast<double>(n));  // 4 bytes of f32 and 1 of int8 per element
}
BENCHMARK_CAPTURE(BM_QuantizeInt8, quantize, false)->Arg(32)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_QuantizeInt8, dequantize, true)->Arg(32)->Arg(768)->UseRealTime();

// Normalization over (B·T, C); range(0) = C, range(1) = 1 for RMSNorm.
void BM_NormForward(benchmark::State& state, bool reference) {
  const int64_t C = state.range(0);
  const bool rms = state.range(1) == 1;
  const auto x = random_buffer(kTokens * C, 1), w = random_buffer(C, 2), b = random_buffer(C, 3);
  std::vector<float> out(x.size()), mean(kTokens), rstd(kTokens);
  for (auto _ : state) {
    if (rms) {
      reference ? cpu::rmsnorm_forward_reference<float>(out.data(), rstd.data(), x.data(), w.data(),
                                                        kTokens, C)
                : cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), kTokens, C);
    } else {
      reference ? cpu::layernorm_forward_reference<float>(out.data(), mean.data(), rstd.data(),
                                                          x.data(), w.data(), b.data(), kTokens, C)
                : cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                         b.data(), kTokens, C);
    }
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, 8.0 * static_cast<double>(kTokens * C));
}

void BM_NormBackward(benchmark::State& state, bool reference) {
  const int64_t C = state.range(0);
  const bool rms = state.range(1) == 1;
  const auto x = random_buffer(kTokens * C, 1), w = random_buffer(C, 2), b = random_buffer(C, 3),
             dout = random_buffer(kTokens * C, 4);
  std::vector<float> out(x.size()), mean(kTokens), rstd(kTokens), dx(x.size()), dw(C), db(C);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                         kTokens, C);
  for (auto _ : state) {
    if (rms) {
      reference
          ? cpu::rmsnorm_backward_reference<float>(dx.data(), dw.data(), dout.data(), x.data(),
                                                   w.data(), rstd.data(), kTokens, C)
          : cpu::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(),
                                  rstd.data(), kTokens, C);
    } else {
      reference ? cpu::layernorm_backward_reference<float>(dx.data(), dw.data(), db.data(),
                                                           dout.data(), x.data(), w.data(),
                                                           mean.data(), rstd.data(), kTokens, C)
                : cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(),
                                          w.data(), mean.data(), rstd.data(), kTokens, C);
    }
    benchmark::DoNotOptimize(dx.data());
  }
  // Reads x and dout, reads and writes dinp.
  report_bytes(state, 16.0 * static_cast<double>(kTokens * C));
}
BENCHMARK_CAPTURE(BM_NormForward, layernorm_fast, false)
    ->Args({256, 0})
    ->Args({768, 0})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NormForward, layernorm_reference, true)->Args({256, 0})->UseRealTime();
BENCHMARK_CAPTURE(BM_NormForward, rmsnorm_fast, false)
    ->Args({256, 1})
    ->Args({768, 1})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NormForward, rmsnorm_reference, true)->Args({256, 1})->UseRealTime();
BENCHMARK_CAPTURE(BM_NormBackward, layernorm_fast, false)
    ->Args({256, 0})
    ->Args({768, 0})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NormBackward, layernorm_reference, true)->Args({256, 0})->UseRealTime();
BENCHMARK_CAPTURE(BM_NormBackward, rmsnorm_fast, false)
    ->Args({256, 1})
    ->Args({768, 1})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NormBackward, rmsnorm_reference, true)->Args({256, 1})->UseRealTime();

// Softmax over attention-score rows (B·H·T rows of T) and cross-entropy over (B·T, V).
void BM_Softmax(benchmark::State& state, bool reference, bool backward) {
  const int64_t rows = kBatch * 4 * kSeq, C = kSeq;
  const auto x = random_buffer(rows * C, 1, -5.0f, 5.0f), dout = random_buffer(rows * C, 2);
  std::vector<float> out(x.size()), dx(x.size());
  cpu::softmax_forward(out.data(), x.data(), rows, C);
  for (auto _ : state) {
    if (backward) {
      reference
          ? cpu::softmax_backward_reference<float>(dx.data(), dout.data(), out.data(), rows, C)
          : cpu::softmax_backward(dx.data(), dout.data(), out.data(), rows, C);
    } else {
      reference ? cpu::softmax_forward_reference<float>(out.data(), x.data(), rows, C)
                : cpu::softmax_forward(out.data(), x.data(), rows, C);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dx.data());
  }
  report_bytes(state, (backward ? 16.0 : 8.0) * static_cast<double>(rows * C));
}
BENCHMARK_CAPTURE(BM_Softmax, forward_fast, false, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_Softmax, forward_reference, true, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_Softmax, backward_fast, false, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_Softmax, backward_reference, true, true)->UseRealTime();

void BM_CrossEntropy(benchmark::State& state, bool reference, bool backward) {
  const auto logits = random_buffer(kTokens * kVocab, 1, -8.0f, 8.0f);
  const auto targets = random_ids(kTokens, kVocab, 2);
  const std::vector<float> dlosses(kTokens, 1.0f / kTokens);
  std::vector<float> losses(kTokens), lse(kTokens), dlogits(logits.size());
  cpu::cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(), targets.data(),
                             kTokens, kVocab, kVocab);
  for (auto _ : state) {
    if (backward) {
      reference ? cpu::cross_entropy_backward_reference<float>(
                      dlogits.data(), dlosses.data(), logits.data(), lse.data(), targets.data(),
                      kTokens, kVocab, kVocab)
                : cpu::cross_entropy_backward(dlogits.data(), dlosses.data(), logits.data(),
                                              lse.data(), targets.data(), kTokens, kVocab, kVocab);
    } else {
      reference ? cpu::cross_entropy_forward_reference<float>(losses.data(), lse.data(), nullptr,
                                                              logits.data(), targets.data(),
                                                              kTokens, kVocab, kVocab)
                : cpu::cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(),
                                             targets.data(), kTokens, kVocab, kVocab);
    }
    benchmark::DoNotOptimize(losses.data());
    benchmark::DoNotOptimize(dlogits.data());
  }
  report_bytes(state, (backward ? 12.0 : 4.0) * static_cast<double>(kTokens * kVocab));
}
BENCHMARK_CAPTURE(BM_CrossEntropy, forward_fast, false, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_CrossEntropy, forward_reference, true, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_CrossEntropy, backward_fast, false, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_CrossEntropy, backward_reference, true, true)->UseRealTime();

// Embedding (B·T tokens of C channels, V = 4096, learned positions) and RoPE over (B, T, H, 64).
void BM_Embedding(benchmark::State& state, bool reference, bool backward) {
  const int64_t C = state.range(0);
  const auto tokens = random_ids(kTokens, kVocab, 1);
  const auto wte = random_buffer(kVocab * C, 2), wpe = random_buffer(kSeq * C, 3),
             dout = random_buffer(kTokens * C, 4);
  std::vector<float> out(static_cast<size_t>(kTokens * C)), dwte(wte.size()), dwpe(wpe.size());
  for (auto _ : state) {
    if (backward) {
      reference ? cpu::embedding_backward_reference<float>(dwte.data(), dwpe.data(), dout.data(),
                                                           tokens.data(), kBatch, kSeq, C, kVocab)
                : cpu::embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(),
                                          kBatch, kSeq, C, kVocab);
    } else {
      reference ? cpu::embedding_forward_reference<float>(out.data(), tokens.data(), wte.data(),
                                                          wpe.data(), kBatch, kSeq, C, kVocab)
                : cpu::embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), kBatch,
                                         kSeq, C, kVocab);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dwte.data());
  }
  report_bytes(state, 12.0 * static_cast<double>(kTokens * C));
}
BENCHMARK_CAPTURE(BM_Embedding, forward_fast, false, false)->Arg(256)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_Embedding, forward_reference, true, false)->Arg(256)->UseRealTime();
BENCHMARK_CAPTURE(BM_Embedding, backward_fast, false, true)->Arg(256)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_Embedding, backward_reference, true, true)->Arg(256)->UseRealTime();

void BM_Rope(benchmark::State& state, bool reference, bool backward) {
  const int64_t H = state.range(0), n = kTokens * H * kHeadDim;
  const auto x = random_buffer(n, 1);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    if (backward) {
      reference
          ? cpu::rope_backward_reference<float>(out.data(), x.data(), kBatch, kSeq, H, kHeadDim)
          : cpu::rope_backward(out.data(), x.data(), kBatch, kSeq, H, kHeadDim);
    } else {
      reference
          ? cpu::rope_forward_reference<float>(out.data(), x.data(), kBatch, kSeq, H, kHeadDim)
          : cpu::rope_forward(out.data(), x.data(), kBatch, kSeq, H, kHeadDim);
    }
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, (backward ? 12.0 : 8.0) * static_cast<double>(n));
}
BENCHMARK_CAPTURE(BM_Rope, forward_fast, false, false)->Arg(4)->Arg(12)->UseRealTime();
BENCHMARK_CAPTURE(BM_Rope, forward_reference, true, false)->Arg(4)->UseRealTime();
BENCHMARK_CAPTURE(BM_Rope, backward_fast, false, true)->Arg(4)->Arg(12)->UseRealTime();
BENCHMARK_CAPTURE(BM_Rope, backward_reference, true, true)->Arg(4)->UseRealTime();

// Residual add, bias add and scale over (B·T, C).
void BM_Residual(benchmark::State& state, bool reference) {
  const int64_t n = kTokens * state.range(0);
  const auto a = random_buffer(n, 1), b = random_buffer(n, 2);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    reference ? cpu::residual_forward_reference<float>(out.data(), a.data(), b.data(), n)
              : cpu::residual_forward(out.data(), a.data(), b.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, 12.0 * static_cast<double>(n));
}
BENCHMARK_CAPTURE(BM_Residual, fast, false)->Arg(256)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_Residual, reference, true)->Arg(256)->UseRealTime();

void BM_BiasBackward(benchmark::State& state, bool reference) {
  const int64_t C = state.range(0);
  const auto dout = random_buffer(kTokens * C, 1);
  std::vector<float> dbias(static_cast<size_t>(C));
  for (auto _ : state) {
    reference ? cpu::bias_add_backward_reference<float>(dbias.data(), dout.data(), kTokens, C)
              : cpu::bias_add_backward(dbias.data(), dout.data(), kTokens, C);
    benchmark::DoNotOptimize(dbias.data());
  }
  report_bytes(state, 4.0 * static_cast<double>(kTokens * C));
}
BENCHMARK_CAPTURE(BM_BiasBackward, fast, false)->Arg(256)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_BiasBackward, reference, true)->Arg(256)->UseRealTime();

void BM_Scale(benchmark::State& state, bool reference) {
  const int64_t n = kTokens * state.range(0);
  const auto x = random_buffer(n, 1);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    reference ? cpu::scale_forward_reference<float>(out.data(), x.data(), 0.5f, n)
              : cpu::scale_forward(out.data(), x.data(), 0.5f, n);
    benchmark::DoNotOptimize(out.data());
  }
  report_bytes(state, 8.0 * static_cast<double>(n));
}
BENCHMARK_CAPTURE(BM_Scale, fast, false)->Arg(768)->UseRealTime();
BENCHMARK_CAPTURE(BM_Scale, reference, true)->Arg(768)->UseRealTime();

// Reductions and optimizer steps over a 4.24 M-parameter model (gpt2-tiny, the model
// bench/train/compare_pytorch.py trains in vramlab and in PyTorch).
constexpr int64_t kParameters = 4'240'000;

void BM_L2Norm(benchmark::State& state, bool reference) {
  const auto x = random_buffer(kParameters, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(reference ? cpu::l2_norm_reference<float>(x.data(), kParameters)
                                       : cpu::l2_norm(x.data(), kParameters));
  }
  report_bytes(state, 4.0 * static_cast<double>(kParameters));
}
BENCHMARK_CAPTURE(BM_L2Norm, fast, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_L2Norm, reference, true)->UseRealTime();

void BM_AdamW(benchmark::State& state, bool reference) {
  auto param = random_buffer(kParameters, 1), m = random_buffer(kParameters, 2, 0.0f, 0.1f),
       v = random_buffer(kParameters, 3, 0.0f, 0.1f);
  const auto grad = random_buffer(kParameters, 4);
  cpu::AdamWHyperparameters hp;
  hp.weight_decay = 0.1f;
  int64_t step = 1;
  for (auto _ : state) {
    reference
        ? cpu::adamw_update_reference<float>(param.data(), grad.data(), m.data(), v.data(),
                                             kParameters, hp, step)
        : cpu::adamw_update(param.data(), grad.data(), m.data(), v.data(), kParameters, hp, step);
    step++;
    benchmark::DoNotOptimize(param.data());
  }
  // Reads param, grad, m, v; writes param, m, v.
  report_bytes(state, 28.0 * static_cast<double>(kParameters));
}
BENCHMARK_CAPTURE(BM_AdamW, fast, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_AdamW, reference, true)->UseRealTime();

void BM_SgdMomentum(benchmark::State& state, bool reference) {
  auto param = random_buffer(kParameters, 1), buffer = random_buffer(kParameters, 2);
  const auto grad = random_buffer(kParameters, 3);
  for (auto _ : state) {
    reference
        ? cpu::sgd_update_reference<float>(param.data(), grad.data(), buffer.data(), kParameters,
                                           0.01f, 0.9f, 0.0f, false)
        : cpu::sgd_update(
              param.data(), grad.data(), buffer.data(), kParameters,
              {.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = 0.0f, .nesterov = false});
    benchmark::DoNotOptimize(param.data());
  }
  report_bytes(state, 20.0 * static_cast<double>(kParameters));
}
BENCHMARK_CAPTURE(BM_SgdMomentum, fast, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_SgdMomentum, reference, true)->UseRealTime();

}  // namespace
