// The runs tests/train compares a technique on (with it and without it): odd shapes, both
// families, every recompute kind, both attention kernels, three precisions, accumulation with
// micro-batches of different sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model/model_config.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"

namespace vramlab::train::test_cases {

/// A run and its name in failure messages.
struct NamedRun {
  std::string name;
  TrainOptions options;
};

/// \return the four runs, seeded from \p seed (seed, seed + 1, ...), so two tests draw apart.
inline std::vector<NamedRun> varied_runs(uint64_t seed) {
  std::vector<NamedRun> runs;
  {
    TrainOptions o;
    o.model = gpt2_config("test-gpt2", 3, 32, 4, 48, 16);
    o.batch = 3;
    o.seq = 13;
    o.seed = seed;
    runs.push_back({"gpt2 fp32", o});
  }
  {
    TrainOptions o;
    o.model = llama_config("test-llama", 4, 32, 4, 2, 48, 40, 16);
    o.batch = 2;
    o.seq = 11;
    o.seed = seed + 1;
    o.plan.amp.precision = plan::Precision::mixed_bf16;
    o.plan.recompute = recompute::parse_recompute_spec("every:2");
    runs.push_back({"llama mixed-bf16, recompute every:2", o});
  }
  {
    TrainOptions o;
    o.model = gpt2_config("test-gpt2", 2, 32, 4, 48, 16);
    o.batch = 5;
    o.seq = 9;
    o.seed = seed + 2;
    o.plan.amp.precision = plan::Precision::mixed_fp16;
    o.plan.attention = plan::AttentionKind::flash;
    o.plan.recompute = recompute::parse_recompute_spec("selective");
    o.plan.batch.micro_batch_sizes = {2, 3};
    runs.push_back({"gpt2 mixed-fp16 flash, selective, micro-batches 2 + 3", o});
  }
  {
    TrainOptions o;
    o.model = llama_config("test-llama", 3, 32, 4, 4, 48, 40, 16);
    o.batch = 2;
    o.seq = 16;
    o.seed = seed + 3;
    o.plan.amp.precision = plan::Precision::bf16;
    o.plan.recompute = recompute::parse_recompute_spec("full");
    runs.push_back({"llama pure-bf16, full recompute", o});
  }
  return runs;
}

}  // namespace vramlab::train::test_cases
