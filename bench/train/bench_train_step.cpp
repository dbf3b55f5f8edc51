// Google Benchmark of one training step (forward, backward, AdamW) of the runtime:
//   build/bench/bin/bench_train_step --benchmark_min_time=0.01
// gpt2-mini on the cpu device (gpt2-tiny, the comparison config, is in compare_pytorch.py) (the hot
// path: kernels, GEMM bands, cached blocks) and llama2-70b on the meta device (allocations only:
// what lesson 01 replays for the 70B breakdown). Counters: tokens/s, and GFLOP/s of the dense model
// FLOPs (6 · matmul parameters · tokens + 12 · L · B · T² · C for attention).
#include <benchmark/benchmark.h>

#include <omp.h>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/train/trainer.h"

namespace {

using namespace vramlab;

double model_flops(const ModelConfig& c, int64_t B, int64_t T) {
  double matmul_params = 0.0;
  for (const ParameterSpec& p : c.parameters())
    if (p.shape.size() == 2 && p.name != "wpe") matmul_params += static_cast<double>(p.numel());
  const double tokens = static_cast<double>(B * T);
  return 6.0 * matmul_params * tokens + 12.0 * static_cast<double>(c.layers * B) *
                                            static_cast<double>(T * T) *
                                            static_cast<double>(c.hidden);
}

void run_steps(benchmark::State& state, const std::string& model, const std::string& device,
               int64_t B, int64_t T) {
  train::TrainOptions options;
  options.model = model_config_by_name(model);
  options.batch = B;
  options.seq = T;
  nn::Runtime runtime(memory::parse_device(device));
  train::Trainer trainer(runtime, options);
  trainer.step();  // warm-up: the first step fills the allocator's cache and the optimizer states
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step().loss);
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] =
      benchmark::Counter(steps * static_cast<double>(B * T), benchmark::Counter::kIsRate);
  if (runtime.kernel_kind() != nn::KernelKind::meta)
    state.counters["GFLOP_per_s"] = benchmark::Counter(
        steps * model_flops(options.model, B, T) / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = omp_get_max_threads();
}

void BM_TrainStep_Gpt2Mini_Cpu(benchmark::State& state) {
  run_steps(state, "gpt2-mini", "cpu", 8, 32);
}
BENCHMARK(BM_TrainStep_Gpt2Mini_Cpu)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TrainStep_Llama2_70b_Meta(benchmark::State& state) {
  run_steps(state, "llama2-70b", "meta", 1, 4096);
}
BENCHMARK(BM_TrainStep_Llama2_70b_Meta)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
