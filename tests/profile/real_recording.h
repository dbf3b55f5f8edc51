// A real recording for the profile tests: one training step of a small GPT-2 on a simulated T4,
// under the Profiler (setup included, so parameters are allocated inside the recording).
#pragma once

#include <cstdint>
#include <string>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/profile/profiler.h"
#include "common/train/trainer.h"

namespace vramlab::profile::testing {

/// \param layers transformer layers. \param steps training steps recorded.
inline Recording record_training(std::int64_t layers, int steps) {
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
  Profiler profiler(runtime);
  train::TrainOptions options;
  options.model = gpt2_config("profile-gpt2", layers, 32, 4, 40, 16);
  options.batch = 2;
  options.seq = 11;
  options.seed = 5;
  train::Trainer trainer(runtime, options);
  for (int step = 0; step < steps; ++step) trainer.step();
  return profiler.stop();
}

}  // namespace vramlab::profile::testing
