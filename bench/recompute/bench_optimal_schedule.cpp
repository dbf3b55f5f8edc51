// The recompute planner's time for one plan of a 96-layer chain with GPT-3 175B's per-layer sizes
// at s = 2048, b = 1, fp16 (Korthikanti et al. 2022: sbh(34 + 5as/h) bytes, 34 sbh under
// selective, 2 sbh output; a = 96, h = 12288), costs in FLOPs (24 sh² + 4 s²h for the layer's
// forward, 2 s²h for QKᵀ), at budgets from the least feasible peak (0/10) to no recompute (10/10).
// The goal is well under a second per plan, so `vramlab train --recompute budget:…` plans
// instantly for any real model.
//
//   build/bench/bin/bench_optimal_schedule
#include <benchmark/benchmark.h>

#include "common/recompute/activation_peak.h"
#include "common/recompute/optimal_schedule.h"
#include "common/recompute/recompute_spec.h"

namespace {

using namespace vramlab::recompute;

ChainCosts gpt3_chain() {
  const int64_t s = 2048, h = 12288, a = 96;
  const int64_t sbh = s * h;
  ChainCosts chain;
  chain.before_bytes = 2 * sbh;
  chain.head_bytes = 4 * s * 50257;
  const LayerCosts layer{sbh * 34 + 5 * a * s * s, sbh * 34, 2 * sbh,
                         24.0 * s * h * h + 4.0 * s * s * h, 2.0 * s * s * h};
  chain.layers.assign(96, layer);
  return chain;
}

void BM_OptimalSchedule96Layers(benchmark::State& state) {
  const ChainCosts chain = gpt3_chain();
  const int64_t least = least_activation_peak_bytes(chain);
  const int64_t none =
      activation_peak_bytes(chain, make_schedule(parse_recompute_spec("none"), chain));
  const int64_t budget = least + (none - least) / 10 * state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(optimal_schedule(chain, budget));
  state.SetLabel("budget " + std::to_string(state.range(0)) + "/10 of the way to no recompute");
}
BENCHMARK(BM_OptimalSchedule96Layers)->DenseRange(0, 10, 1)->Unit(benchmark::kMillisecond);

}  // namespace
