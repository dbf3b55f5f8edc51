// CUDA kernels v1 against v2 on a real GPU, timed with CUDA events (manual time per launch).
// Built only with VRAMLAB_HAVE_CUDA. Without a GPU every benchmark is reported as
// "SKIPPED: no GPU: <reason>" (an error row, never a timing), and the binary exits 0.
// Run: build/bench/bin/bench_cuda_kernels_gpu [--benchmark_filter=softmax]
#define VRAMLAB_CUDA_OPS_ABI gpu

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/stream.h"
#include "common/platform/gpu_probe.h"
#include "kernels/cuda/ops.h"

namespace {

using vramlab::kernels::cuda::KernelVersion;
namespace cuda = vramlab::kernels::cuda;
namespace runtime = vramlab::cuda_runtime;

constexpr int64_t kRows = 8 * 1024, kChannels = 768;
constexpr int64_t kVocabulary = 50304;
constexpr int64_t kCrossEntropyRows = 1024;
constexpr int64_t kFlat = 124 * 1000 * 1000;

// The reason to skip, or empty when a GPU is there.
const std::string& skip_reason() {
  static const std::string reason = [] {
    const vramlab::platform::GpuProbe probe = vramlab::platform::probe_gpus();
    if (probe.status == vramlab::platform::GpuStatus::available) return std::string();
    return "SKIPPED: " + probe.detail;  // the probe says why, e.g. "no GPU: ..."
  }();
  return reason;
}

// cudaMalloc. \throws CudaError when it fails.
void* device_malloc(std::size_t bytes) {
  void* pointer = nullptr;
  runtime::check_cuda(cudaMalloc(&pointer, bytes), "cudaMalloc");
  return pointer;
}

// A device buffer of n floats, uniform in [low, high).
class DeviceFloats {
 public:
  DeviceFloats(int64_t n, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> host(static_cast<std::size_t>(n));
    for (float& x : host) x = distribution(generator);
    data_ = static_cast<float*>(device_malloc(host.size() * sizeof(float)));
    runtime::check_cuda(
        cudaMemcpy(data_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  }
  ~DeviceFloats() { cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* data() const { return data_; }

 private:
  float* data_ = nullptr;
};

// Times launch() with events around each call; bytes moved once per call give GB/s.
template <class Launch>
void time_launches(benchmark::State& state, int64_t bytes, Launch launch) {
  runtime::Event start, stop;
  for (auto _ : state) {
    start.record();
    launch();
    stop.record();
    state.SetIterationTime(runtime::elapsed_ms(start, stop) / 1e3);
  }
  runtime::check_cuda(cudaGetLastError(), "kernel launch");
  state.SetBytesProcessed(state.iterations() * bytes);
}

bool skipped(benchmark::State& state) {
  if (skip_reason().empty()) return false;
  state.SkipWithError(skip_reason().c_str());
  return true;
}

void layernorm_forward(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats inp(kRows * kChannels, 1), weight(kChannels, 2), bias(kChannels, 3);
  DeviceFloats out(kRows * kChannels, 4), mean(kRows, 5), rstd(kRows, 6);
  time_launches(state, 2 * kRows * kChannels * 4, [&] {
    cuda::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                            bias.data(), kRows, kChannels, 1e-5f, version);
  });
}

void rmsnorm_forward(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats inp(kRows * kChannels, 1), weight(kChannels, 2);
  DeviceFloats out(kRows * kChannels, 3), rstd(kRows, 4);
  time_launches(state, 2 * kRows * kChannels * 4, [&] {
    cuda::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kRows, kChannels,
                          1e-5f, version);
  });
}

void softmax_forward(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats inp(kRows * kChannels, 1, -5.0f, 5.0f), out(kRows * kChannels, 2);
  time_launches(state, 2 * kRows * kChannels * 4,
                [&] { cuda::softmax_forward(out.data(), inp.data(), kRows, kChannels, version); });
}

void cross_entropy_forward(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats logits(kCrossEntropyRows * kVocabulary, 1, -5.0f, 5.0f);
  DeviceFloats losses(kCrossEntropyRows, 2), logsumexp(kCrossEntropyRows, 3);
  std::vector<int32_t> host_targets(kCrossEntropyRows);
  for (std::size_t i = 0; i < host_targets.size(); i++) {
    host_targets[i] = static_cast<int32_t>(i * 61 % kVocabulary);
  }
  auto* targets = static_cast<int32_t*>(device_malloc(host_targets.size() * sizeof(int32_t)));
  runtime::check_cuda(cudaMemcpy(targets, host_targets.data(),
                                 host_targets.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
                      "cudaMemcpy");
  time_launches(state, kCrossEntropyRows * kVocabulary * 4, [&] {
    cuda::cross_entropy_forward(losses.data(), logsumexp.data(), nullptr, logits.data(), targets,
                                kCrossEntropyRows, kVocabulary, kVocabulary, version);
  });
  cudaFree(targets);
}

void sum_of_squares(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats x(kFlat, 1);
  auto* out = static_cast<double*>(device_malloc(sizeof(double)));
  time_launches(state, kFlat * 4, [&] { cuda::sum_of_squares(out, x.data(), kFlat, version); });
  cudaFree(out);
}

void adamw_update(benchmark::State& state, KernelVersion version) {
  if (skipped(state)) return;
  DeviceFloats param(kFlat, 1), grad(kFlat, 2), m(kFlat, 3), v(kFlat, 4, 0.0f, 1.0f);
  vramlab::kernels::cpu::AdamWHyperparameters hp;
  int64_t step = 1;
  time_launches(state, 7 * kFlat * 4, [&] {
    cuda::adamw_update(param.data(), grad.data(), m.data(), v.data(), kFlat, hp, step++, version);
  });
}

#define VRAMLAB_GPU_BENCH_VERSIONS(op)                                                          \
  BENCHMARK_CAPTURE(op, v1, KernelVersion::v1)->UseManualTime()->Unit(benchmark::kMicrosecond); \
  BENCHMARK_CAPTURE(op, v2, KernelVersion::v2)->UseManualTime()->Unit(benchmark::kMicrosecond)

VRAMLAB_GPU_BENCH_VERSIONS(layernorm_forward);
VRAMLAB_GPU_BENCH_VERSIONS(rmsnorm_forward);
VRAMLAB_GPU_BENCH_VERSIONS(softmax_forward);
VRAMLAB_GPU_BENCH_VERSIONS(cross_entropy_forward);
VRAMLAB_GPU_BENCH_VERSIONS(sum_of_squares);
VRAMLAB_GPU_BENCH_VERSIONS(adamw_update);

}  // namespace
