// The cost of gradient checkpointing in step time, as a ratio to keeping everything, measured in
// one run: one trainer per schedule, all alive at once, their steps interleaved (none, full,
// selective, ..., none, full, ...) so that a change in the machine's load hits every schedule
// alike. Each schedule's fastest step is divided by none's: other processes only ever add time
// to a step, so the minimum is the estimate least disturbed by a loaded machine; the medians are
// printed beside it.
//
//   build/bench/bin/bench_recompute_ratio                   T=1024, 8 layers of width 64, 5 rounds
//   build/bench/bin/bench_recompute_ratio --seq 2048 --rounds 7
//
// The goals it reports against (lesson 02's page): full recompute at most +35% step time,
// selective at most +10% with at least 60% less activation memory, at T >= 1024.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"

namespace {

using namespace vramlab;

struct Args {
  int64_t seq = 1024;
  int64_t batch = 1;
  int64_t layers = 8;
  int64_t rounds = 5;
};

int64_t value_of(const char* flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 1)
    throw UsageError(std::string(flag) + " must be an integer >= 1, got '" + text + "'");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw UsageError("unknown flag or missing value: '" + flag + "'");
    if (flag == "--seq")
      a.seq = value_of("--seq", argv[++i]);
    else if (flag == "--batch")
      a.batch = value_of("--batch", argv[++i]);
    else if (flag == "--layers")
      a.layers = value_of("--layers", argv[++i]);
    else if (flag == "--rounds")
      a.rounds = value_of("--rounds", argv[++i]);
    else
      throw UsageError("unknown flag '" + flag + "' (--seq, --batch, --layers, --rounds)");
  }
  return a;
}

struct Contender {
  std::string spec;
  std::unique_ptr<nn::Runtime> runtime;
  std::unique_ptr<train::Trainer> trainer;
  std::vector<double> seconds;
  int64_t activation_peak_bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    // gpt2-tiny's vocabulary, 4 heads of 16: the (B, H, T, T) probabilities outweigh the rest of
    // a block's saved tensors at T >= 1024, where selective recompute is meant to pay.
    ModelConfig model = model_config_by_name("gpt2-tiny");
    model.layers = a.layers;
    model.hidden = 64;
    model.heads = 4;
    model.kv_heads = 4;
    model.ffn_hidden = 256;
    model.max_seq = a.seq;
    model.validate();
    std::vector<Contender> all;
    for (const char* spec : {"none", "full", "selective", "sqrt", "every:2"}) {
      Contender c;
      c.spec = spec;
      train::TrainOptions options;
      options.model = model;
      options.batch = a.batch;
      options.seq = a.seq;
      options.plan.recompute = recompute::parse_recompute_spec(spec);
      options.plan.dropout.p = 0.1f;
      c.runtime = std::make_unique<nn::Runtime>(memory::parse_device("cpu"));
      c.trainer = std::make_unique<train::Trainer>(*c.runtime, options);
      // Warm-up: the first step creates the optimizer states and fills the allocator's cache.
      c.activation_peak_bytes = c.trainer->step().activation_peak_bytes;
      all.push_back(std::move(c));
    }
    for (int64_t r = 0; r < a.rounds; ++r)
      for (Contender& c : all) c.seconds.push_back(c.trainer->step().seconds);
    std::printf(
        "step time per schedule, %lld layers, C=64, H=4, B=%lld, T=%lld, dropout 0.1, %d "
        "threads, %lld interleaved rounds\n",
        static_cast<long long>(a.layers), static_cast<long long>(a.batch),
        static_cast<long long>(a.seq), omp_get_max_threads(), static_cast<long long>(a.rounds));
    std::printf("%-10s %10s %10s %10s %10s %16s %10s\n", "schedule", "fastest s", "vs none",
                "median s", "vs none", "activation peak", "vs none");
    auto fastest = [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end());
    };
    const double base_min = fastest(all.front().seconds);
    const double base_median = train::median(all.front().seconds);
    const double base_b = static_cast<double>(all.front().activation_peak_bytes);
    for (const Contender& c : all) {
      const double s = fastest(c.seconds);
      const double m = train::median(c.seconds);
      std::printf("%-10s %10.4f %+9.1f%% %10.4f %+9.1f%% %12.2f MiB %+9.1f%%\n", c.spec.c_str(), s,
                  100.0 * (s / base_min - 1.0), m, 100.0 * (m / base_median - 1.0),
                  static_cast<double>(c.activation_peak_bytes) / (1 << 20),
                  100.0 * (static_cast<double>(c.activation_peak_bytes) / base_b - 1.0));
    }
    std::printf("goals: full <= +35%%, selective <= +10%% with <= -60%% activation peak\n");
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "bench_recompute_ratio: error: %s\n", e.what());
    return kExitUsage;
  }
}
