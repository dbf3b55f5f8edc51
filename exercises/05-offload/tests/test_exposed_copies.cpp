// Tests of exercise 05.1 (the copy time an offloaded step leaves exposed). They run against your
// code (`vramlab check 05.1`) and against the reference (ctest: test_ex_05_1_ref).
// Expectations: the runtime's stream clock. Odd GPT-2 and Llama models train with the optimizer
// offloaded on a meta A100, whose kernels take their roofline time, so every time is exact and
// the same on every machine; the second step's backward (when each unit's gradients became final
// and their bytes, train::BackwardTimeline) goes into your function, whose answer must equal the
// clock's exposed copy time to 1e-9 relative, with overlap on and off and links from slower than
// the backward makes gradients to far faster (GPT-2 in fp32, Llama in mixed bf16: under mixed
// fp16 the loss scaler's inf check runs on the compute stream after the backward, and copies hide
// behind it too, which the contract leaves out). Then schedules built by hand whose answer
// follows from the contract alone, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/backward_timeline.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/05-offload/api/exposed_copies.h"

namespace vramlab::lesson05 {
namespace {

using workbook::Comparison;

OffloadedStep step_of(const train::BackwardTimeline& timeline, int64_t parameter_bytes, double gbps,
                      bool overlap) {
  OffloadedStep step;
  for (const train::BackwardTimeline::Unit& u : timeline.units())
    step.units.push_back({u.ready_seconds, u.bytes});
  step.backward_end_seconds = timeline.backward_end_seconds();
  step.parameter_bytes = parameter_bytes;
  step.link_bytes_per_s = gbps * 1e9;
  step.overlap = overlap;
  return step;
}

//! [test]
TEST(ExposedCopies, EqualsTheRuntimesClockForEveryLinkWithOverlapOnAndOff) {
  Comparison exposed("exposed copy seconds of step 2", workbook::Unit::kNumber, 0.0, 1e-9);
  for (const bool llama : {false, true}) {
    train::TrainOptions o;
    o.model = llama ? llama_config("llama-odd", 5, 640, 10, 2, 1792, 32001, 512)
                    : gpt2_config("gpt2-odd", 7, 576, 9, 50257, 512);
    o.batch = 3;
    o.seq = 500;
    o.plan.amp.precision = llama ? plan::Precision::mixed_bf16 : plan::Precision::fp32;
    o.plan.offload.optimizer = true;
    for (const double gbps : {1.5, 12.0, 31.5, 900.0}) {
      for (const bool overlap : {true, false}) {
        memory::Device device = memory::parse_device("meta:a100-40g");
        device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s =
            gbps * 1e9;
        o.plan.offload.overlap = overlap;
        nn::Runtime runtime(device);
        train::Trainer trainer(runtime, o);
        train::BackwardTimeline timeline(runtime.clock());
        trainer.add_observer(timeline);
        (void)trainer.step();  // the first step also stages the parameters on the host
        const train::StepResult second = trainer.step();
        const int64_t parameter_bytes = trainer.model().parameters().values().bytes();
        exposed.add(o.model.name + " at " + std::to_string(gbps) + " GB/s, overlap " +
                        (overlap ? "on" : "off"),
                    second.exposed_copy_seconds,
                    exposed_copy_seconds(step_of(timeline, parameter_bytes, gbps, overlap)));
      }
    }
  }
  VRAMLAB_EXPECT_PASSES(exposed);
}
//! [test]

// Schedules whose answer follows from the contract: 1 GB/s, so a byte is a nanosecond.
TEST(ExposedCopies, HandMadeSchedulesFollowTheContract) {
  Comparison exposed("exposed copy seconds", workbook::Unit::kNumber, 1e-15, 1e-12);
  const auto step = [](std::vector<UnitGradients> units, double end, int64_t params, bool overlap) {
    return OffloadedStep{std::move(units), end, params, 1e9, overlap};
  };
  // Three units of 1 s of copying each, ready at 1, 2 and 3 s; the backward ends at 3.5 s. With
  // overlap the copy stream runs 1-2, 2-3, 3-4: the host waits 0.5 s, then the parameters take 2 s.
  const std::vector<UnitGradients> spaced = {
      {1.0, 1'000'000'000}, {2.0, 1'000'000'000}, {3.0, 1'000'000'000}};
  exposed.add("spaced units, overlap on", 0.5 + 2.0,
              exposed_copy_seconds(step(spaced, 3.5, 2'000'000'000, true)));
  // Without overlap the three copies start at 3.5 s, one after the other.
  exposed.add("spaced units, overlap off", 3.0 + 2.0,
              exposed_copy_seconds(step(spaced, 3.5, 2'000'000'000, false)));
  // Units ready at once, each 2 s of copying: the copy stream cannot run them side by side, so
  // the last ends at 0.1 + 6 s, 5.6 s after the backward's end at 0.5 s.
  const std::vector<UnitGradients> bunched = {
      {0.1, 2'000'000'000}, {0.1, 2'000'000'000}, {0.1, 2'000'000'000}};
  exposed.add("bunched units, overlap on", 5.6, exposed_copy_seconds(step(bunched, 0.5, 0, true)));
  // Copies that end well before the backward: only the copy back is exposed.
  const std::vector<UnitGradients> early = {{0.0, 1000}, {0.5, 1000}};
  exposed.add("hidden gradients", 3e-6, exposed_copy_seconds(step(early, 10.0, 3000, true)));
  // Nothing to copy.
  exposed.add("no units, no parameters", 0.0, exposed_copy_seconds(step({}, 1.0, 0, true)));
  VRAMLAB_EXPECT_PASSES(exposed);
}

TEST(ExposedCopies, ABadLinkOrANegativeSizeIsRefusedByName) {
  const auto refused = [](OffloadedStep s, const std::string& name) {
    try {
      (void)exposed_copy_seconds(s);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no vramlab::UsageError for a bad " << name;
  };
  const OffloadedStep good{{{0.0, 10}}, 1.0, 10, 1e9, true};
  for (const double bw : {0.0, -1e9, std::numeric_limits<double>::quiet_NaN(),
                          std::numeric_limits<double>::infinity()}) {
    OffloadedStep s = good;
    s.link_bytes_per_s = bw;
    refused(s, "link_bytes_per_s");
  }
  OffloadedStep negative_params = good;
  negative_params.parameter_bytes = -1;
  refused(negative_params, "parameter_bytes");
  OffloadedStep negative_unit = good;
  negative_unit.units[0].bytes = -5;
  refused(negative_unit, "bytes");
}

}  // namespace
}  // namespace vramlab::lesson05
