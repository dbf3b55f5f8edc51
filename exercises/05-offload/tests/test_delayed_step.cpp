// Tests of exercise 05.2 (how long a step with the delayed parameter update takes). They run
// against your code (`vramlab check 05.2`) and against the reference (ctest: test_ex_05_2_ref).
// Expectations: the runtime's stream clock. Odd GPT-2 and Llama models train with the optimizer
// offloaded and its update delayed from step 2 (`--offload-dpu 2`) on a meta A100, whose kernels
// take their roofline time, so every time is exact and the same on every machine; the third
// step is a steady one (the second step's update runs beside it). Its backward, times from the
// step's start (train::BackwardTimeline), and the second step's update time go into your
// function, whose answer must equal the clock's step time to 1e-9 relative, with overlap on and
// off, links from slower than the backward makes gradients to far faster, and a host fast enough
// to hide its update behind the backward and one too slow to (GPT-2 in fp32, Llama in mixed bf16:
// under mixed fp16 the loss scaler's inf check runs on the compute stream after the backward,
// which the contract leaves out). Then schedules built by hand whose answer follows from the
// contract alone, and bad input.
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
#include "lessons/05-offload/api/delayed_step.h"

namespace vramlab::lesson05 {
namespace {

using workbook::Comparison;

DelayedStep delayed_step_of(const train::BackwardTimeline& timeline, double step_start,
                            int64_t parameter_bytes, double gbps, bool overlap,
                            double update_seconds) {
  DelayedStep step;
  for (const train::BackwardTimeline::Unit& u : timeline.units())
    step.units.push_back({u.ready_seconds - step_start, u.bytes});
  step.backward_end_seconds = timeline.backward_end_seconds() - step_start;
  step.parameter_bytes = parameter_bytes;
  step.link_bytes_per_s = gbps * 1e9;
  step.overlap = overlap;
  step.update_seconds = update_seconds;
  return step;
}

//! [test]
TEST(DelayedStep, EqualsTheRuntimesClockForEveryLinkAndHostWithOverlapOnAndOff) {
  Comparison seconds("seconds of step 3", workbook::Unit::kNumber, 0.0, 1e-9);
  for (const bool llama : {false, true}) {
    train::TrainOptions o;
    o.model = llama ? llama_config("llama-odd", 5, 640, 10, 2, 1792, 32001, 512)
                    : gpt2_config("gpt2-odd", 7, 576, 9, 50257, 512);
    o.batch = 3;
    o.seq = 500;
    o.plan.amp.precision = llama ? plan::Precision::mixed_bf16 : plan::Precision::fp32;
    o.plan.offload.optimizer = true;
    o.plan.offload.delay_update_from = 2;
    // A socket's memory bandwidth (the update hides), and a host far too slow for it to.
    for (const double host_gbps : {204.8, 2.0}) {
      o.host_memory_bytes_per_s = host_gbps * 1e9;
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
          (void)trainer.step();                             // updated at once
          const train::StepResult second = trainer.step();  // its update is delayed
          const double start = runtime.clock().synchronize();
          const train::StepResult third = trainer.step();
          const int64_t parameter_bytes = trainer.model().parameters().values().bytes();
          seconds.add(
              o.model.name + ", host " + std::to_string(host_gbps) + " GB/s, link " +
                  std::to_string(gbps) + " GB/s, overlap " + (overlap ? "on" : "off"),
              third.clock_seconds,
              delayed_step_seconds(delayed_step_of(timeline, start, parameter_bytes, gbps, overlap,
                                                   second.delayed_update_seconds)));
        }
      }
    }
  }
  VRAMLAB_EXPECT_PASSES(seconds);
}
//! [test]

// Schedules whose answer follows from the contract: 1 GB/s, so a byte is a nanosecond.
TEST(DelayedStep, HandMadeSchedulesFollowTheContract) {
  Comparison seconds("step seconds", workbook::Unit::kNumber, 1e-15, 1e-12);
  const auto step = [](std::vector<UnitGradients> units, double end, int64_t params, bool overlap,
                       double update) {
    return DelayedStep{std::move(units), end, params, 1e9, overlap, update};
  };
  // Three units of 1 s of copying each, ready at 1, 2 and 3 s; the backward ends at 3.5 s; the
  // parameters take 2 s. A short update (0.5 s) is over before the first copy: 1-2, 2-3, 3-4,
  // then the parameters 4-6.
  const std::vector<UnitGradients> spaced = {
      {1.0, 1'000'000'000}, {2.0, 1'000'000'000}, {3.0, 1'000'000'000}};
  seconds.add("short update, overlap on", 6.0,
              delayed_step_seconds(step(spaced, 3.5, 2'000'000'000, true, 0.5)));
  // An update of 2.5 s holds the first copy back: 2.5-3.5, 3.5-4.5, 4.5-5.5, then 5.5-7.5.
  seconds.add("longer update, overlap on", 7.5,
              delayed_step_seconds(step(spaced, 3.5, 2'000'000'000, true, 2.5)));
  // Without overlap the parameters go first, at the backward's end: 3.5-5.5, then 5.5-8.5.
  seconds.add("short update, overlap off", 8.5,
              delayed_step_seconds(step(spaced, 3.5, 2'000'000'000, false, 0.5)));
  // An update longer than the whole backward sets the pace: 10-11, then 11-12.
  seconds.add("update longer than the backward", 12.0,
              delayed_step_seconds(step({{0.1, 1'000'000'000}}, 1.0, 1'000'000'000, true, 10.0)));
  // Nothing to copy: the step still ends no sooner than the update it waits on.
  seconds.add("nothing to copy", 3.0, delayed_step_seconds(step({}, 1.0, 0, true, 3.0)));
  // Gradient copies that end before the backward and no update time: only the parameters' copy
  // (3 us), which cannot start before the backward's end, adds to it.
  seconds.add("gradients hidden", 10.0 + 3e-6,
              delayed_step_seconds(step({{0.0, 1000}, {0.5, 1000}}, 10.0, 3000, true, 0.0)));
  VRAMLAB_EXPECT_PASSES(seconds);
}

TEST(DelayedStep, ABadLinkABadUpdateOrANegativeSizeIsRefusedByName) {
  const auto refused = [](DelayedStep s, const std::string& name) {
    try {
      (void)delayed_step_seconds(s);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no vramlab::UsageError for a bad " << name;
  };
  const DelayedStep good{{{0.0, 10}}, 1.0, 10, 1e9, true, 0.5};
  for (const double bw : {0.0, -1e9, std::numeric_limits<double>::quiet_NaN(),
                          std::numeric_limits<double>::infinity()}) {
    DelayedStep s = good;
    s.link_bytes_per_s = bw;
    refused(s, "link_bytes_per_s");
  }
  for (const double update :
       {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    DelayedStep s = good;
    s.update_seconds = update;
    refused(s, "update_seconds");
  }
  DelayedStep negative_params = good;
  negative_params.parameter_bytes = -1;
  refused(negative_params, "parameter_bytes");
  DelayedStep negative_unit = good;
  negative_unit.units[0].bytes = -5;
  refused(negative_unit, "bytes");
}

}  // namespace
}  // namespace vramlab::lesson05
