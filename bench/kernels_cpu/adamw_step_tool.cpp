// The CPU AdamW step on N fp32 parameters, for bench/compare_cpu_adamw.py, which runs it beside
// PyTorch's CPU torch.optim.AdamW on the same N and threads (issue #33: the offloaded optimizer
// step). Prints one JSON object:
//   {"params": N, "threads": T, "path": "avx512", "adamw_seconds": [s, ...],
//    "path_seconds": {"plain": [s, ...], "avx2": [...], "avx512": [...]},
//    "floor_bytes_per_s": B, "copy_bytes_per_s": B}
// adamw_seconds: each timed step of kernels/cpu adamw_update after one untimed step, on the path
// the CPU picks (path). path_seconds: the same steps on each vector path this CPU has
// (kernel_set.h), the paths taking turns step by step, so that each sees the same machine.
// floor_bytes_per_s: the memory floor's bandwidth, measured in the same process on the same four
// arrays with AdamW's traffic and none of its arithmetic (p += g, m += g, v += g: read four,
// write three, 28 bytes per element), best of five passes, counted as STREAM counts (bytes read
// plus bytes written; each written line was just read, so no write-allocate traffic is hidden).
// copy_bytes_per_s: STREAM's copy (b = a, 8 bytes per element counted; the write-allocate read of
// b is not), for comparison with the published STREAM figures of a machine.
//
//   build/bin/adamw_step_tool PARAMS STEPS
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"
#include "common/platform/integer_text.h"
#include "kernels/cpu/kernel_set.h"
#include "kernels/cpu/optimizer.h"

namespace {

using vramlab::UsageError;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Values in [-1, 1) from the counter RNG, written in parallel: first touch by the threads that
// later update them, so the pages sit where the update runs.
void fill(std::vector<float>& x, uint64_t seed) {  // (n)
  const auto n = static_cast<int64_t>(x.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const uint32_t bits = vramlab::stochastic_bits(seed, static_cast<uint64_t>(i));
    x[static_cast<size_t>(i)] = static_cast<float>(bits) * 0x1p-31f - 1.0f;
  }
}

// Best of five passes of body over n elements moving bytes_per_element bytes each.
template <typename Body>
double best_bandwidth(int64_t n, double bytes_per_element, const Body& body) {
  double best = 0.0;
  for (int pass = 0; pass < 5; pass++) {
    const Clock::time_point start = Clock::now();
    body();
    best = std::max(best, static_cast<double>(n) * bytes_per_element / seconds_since(start));
  }
  return best;
}

int run(int argc, char** argv) {
  if (argc != 3) throw UsageError("usage: adamw_step_tool PARAMS STEPS");
  const int64_t n = vramlab::platform::parse_integer_in("PARAMS", argv[1], 1, int64_t{1} << 31);
  const int64_t steps = vramlab::platform::parse_integer_in("STEPS", argv[2], 1, 1000);
  const auto size = static_cast<size_t>(n);
  std::vector<float> param(size), grad(size), m(size), v(size);  // (n) each
  fill(param, 1);
  fill(grad, 2);
  fill(m, 3);
  fill(v, 4);
  // v must be a second moment (>= 0), as after a first step.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) v[static_cast<size_t>(i)] *= v[static_cast<size_t>(i)];

  const vramlab::kernels::cpu::AdamWHyperparameters hp{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f};
  namespace cpu = vramlab::kernels::cpu;
  const cpu::VectorPath chosen = cpu::optimizer_vector_path();
  std::vector<cpu::VectorPath> paths;
  for (const cpu::VectorPath path :
       {cpu::VectorPath::plain, cpu::VectorPath::compiled, cpu::VectorPath::avx512})
    if (cpu::vector_path_available(path)) paths.push_back(path);
  cpu::adamw_update(param.data(), grad.data(), m.data(), v.data(), n, hp, 1);
  std::vector<std::vector<double>> path_seconds(paths.size());  // (paths, steps)
  int64_t step = 2;
  for (int64_t round = 0; round < steps; round++) {
    for (size_t k = 0; k < paths.size(); k++) {
      cpu::force_optimizer_vector_path(paths[k]);
      const Clock::time_point start = Clock::now();
      cpu::adamw_update(param.data(), grad.data(), m.data(), v.data(), n, hp, step++);
      path_seconds[k].push_back(seconds_since(start));
    }
  }
  cpu::force_optimizer_vector_path(std::nullopt);
  const std::vector<double>& adamw_seconds = path_seconds[static_cast<size_t>(
      std::find(paths.begin(), paths.end(), chosen) - paths.begin())];

  // The floor, on the optimizer's own arrays (their values no longer matter).
  float* p = param.data();
  const float* g = grad.data();
  float* m1 = m.data();
  float* m2 = v.data();
  const double floor = best_bandwidth(n, 28.0, [&] {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
      p[i] += g[i];
      m1[i] += g[i];
      m2[i] += g[i];
    }
  });
  const double copy = best_bandwidth(n, 8.0, [&] {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) m1[i] = m2[i];
  });

  const auto print_seconds = [](const std::vector<double>& seconds) {
    std::printf("[");
    for (size_t i = 0; i < seconds.size(); i++)
      std::printf("%s%.6f", i == 0 ? "" : ", ", seconds[i]);
    std::printf("]");
  };
  std::printf("{\"params\": %lld, \"threads\": %d, \"path\": \"%s\", \"adamw_seconds\": ",
              static_cast<long long>(n), omp_get_max_threads(), cpu::vector_path_name(chosen));
  print_seconds(adamw_seconds);
  std::printf(", \"path_seconds\": {");
  for (size_t k = 0; k < paths.size(); k++) {
    std::printf("%s\"%s\": ", k == 0 ? "" : ", ", cpu::vector_path_name(paths[k]));
    print_seconds(path_seconds[k]);
  }
  std::printf("}, \"floor_bytes_per_s\": %.0f, \"copy_bytes_per_s\": %.0f}\n", floor, copy);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "adamw_step_tool: error: %s\n", e.what());
    return 2;
  }
}
