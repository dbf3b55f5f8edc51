// `--offload optimizer` on the device's stream clock (Note [Gradient streaming], Note [Optimizer
// offload]): streaming each unit's gradients during the backward changes no bit of training, and
// the copy time a step exposes is what an event-joined schedule of those copies predicts, from
// the units' bytes and the link's bandwidth, on a meta device whose kernels take their roofline
// time (so every time on the clock is exact and the same on every machine).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/stream/clock.h"
#include "common/train/backward_timeline.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

std::vector<unsigned char> parameter_bytes(nn::Runtime& runtime, Trainer& trainer) {
  const memory::Tensor& values = trainer.model().parameters().values();
  std::vector<unsigned char> bytes(static_cast<size_t>(values.bytes()));
  runtime.copy_to_host(bytes.data(), values);
  return bytes;
}

// Streaming copies the gradients as each unit's backward ends; only the last micro-batch's are
// final, so a streamer that copied earlier ones, or copied a unit twice, or left one out, would
// train on other gradients than the copies made after the backward (overlap off).
TEST(GradientStreaming, TrainsBitwiseAsCopyingAfterTheBackward) {
  struct Case {
    std::string name;
    TrainOptions options;
  };
  std::vector<Case> cases;
  {
    TrainOptions o;
    o.model = gpt2_config("test-gpt2", 3, 32, 4, 48, 16);
    o.batch = 4;
    o.seq = 16;
    o.seed = 21;
    o.plan.amp.precision = plan::Precision::mixed_bf16;
    o.plan.batch.grad_accum = 2;
    cases.push_back({"gpt2 mixed-bf16, 2 micro-batches", o});
  }
  {
    TrainOptions o;
    o.model = llama_config("test-llama", 3, 32, 4, 2, 48, 40, 16);
    o.batch = 3;
    o.seq = 13;
    o.seed = 22;
    o.plan.recompute = recompute::parse_recompute_spec("every:2");
    o.plan.optimizer.name = plan::Optimizer::lion;
    cases.push_back({"llama fp32 lion, recompute every:2", o});
  }
  {
    TrainOptions o;
    o.model = gpt2_config("test-gpt2", 2, 32, 4, 48, 16);
    o.batch = 5;
    o.seq = 9;
    o.seed = 23;
    o.plan.amp.precision = plan::Precision::mixed_fp16;
    o.plan.optimizer.name = plan::Optimizer::sgd_momentum;
    o.plan.optimizer.max_grad_norm = 0.5f;
    cases.push_back({"gpt2 mixed-fp16 sgd-momentum, clipped", o});
  }
  for (const Case& c : cases) {
    TrainOptions after = c.options, streamed = c.options;
    after.plan.offload.optimizer = streamed.plan.offload.optimizer = true;
    after.plan.offload.overlap = false;
    nn::Runtime after_runtime(memory::parse_device("sim:1GiB"));
    nn::Runtime streamed_runtime(memory::parse_device("sim:1GiB"));
    Trainer after_trainer(after_runtime, after);
    Trainer streamed_trainer(streamed_runtime, streamed);
    for (int step = 1; step <= 3; ++step) {
      const StepResult a = after_trainer.step(), s = streamed_trainer.step();
      EXPECT_EQ(s.loss, a.loss) << c.name << ", step " << step;
    }
    EXPECT_EQ(parameter_bytes(streamed_runtime, streamed_trainer),
              parameter_bytes(after_runtime, after_trainer))
        << c.name << ": parameters after 3 steps";
    // The same bytes crossed the link, as many per step.
    EXPECT_EQ(streamed_runtime.transfer_stats().device_to_host_bytes,
              after_runtime.transfer_stats().device_to_host_bytes)
        << c.name;
    EXPECT_EQ(streamed_runtime.transfer_stats().host_to_device_bytes,
              after_runtime.transfer_stats().host_to_device_bytes)
        << c.name;
  }
}

// The copy time a step leaves exposed, from first principles: each unit's copy starts when both
// its gradients are final and the previous copy is done, and takes its bytes over the link; the
// host waits for the last one after the backward, updates, and the compute stream then waits
// for the parameters' copy back. Without overlap every copy starts after the backward. The first
// step first copies the parameters themselves to the host, as its first copy.
double predicted_exposed(const BackwardTimeline& times, bool overlap, double gbps,
                         int64_t parameter_bytes, bool first_step) {
  const double bytes_per_s = gbps * 1e9;
  double copied = 0.0;
  if (first_step)
    copied = (overlap ? times.units().front().ready_seconds : times.backward_end_seconds()) +
             static_cast<double>(parameter_bytes) / bytes_per_s;
  for (const BackwardTimeline::Unit& u : times.units())
    copied = std::max(copied, overlap ? u.ready_seconds : times.backward_end_seconds()) +
             static_cast<double>(u.bytes) / bytes_per_s;
  return std::max(0.0, copied - times.backward_end_seconds()) +
         static_cast<double>(parameter_bytes) / bytes_per_s;
}

TEST(GradientStreaming, ExposesWhatTheBackwardCannotHideAtEveryLinkBandwidth) {
  for (const bool llama : {false, true}) {
    TrainOptions o;
    o.model = llama ? llama_config("llama-12l", 12, 1024, 16, 4, 2816, 32000, 1024)
                    : gpt2_config("gpt2-12l", 12, 768, 12, 50257, 1024);
    o.batch = 4;
    o.seq = 1024;
    o.plan.amp.precision = llama ? plan::Precision::mixed_bf16 : plan::Precision::fp32;
    o.plan.offload.optimizer = true;
    // PCIe 3.0 x16 and far faster; 2 GB/s is slower than the backward makes gradients.
    for (const double gbps : {2.0, 15.75, 400.0}) {
      double exposed[2] = {0.0, 0.0};
      for (const bool overlap : {false, true}) {
        memory::Device device = memory::parse_device("meta:a100-40g");
        device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s =
            gbps * 1e9;
        o.plan.offload.overlap = overlap;
        nn::Runtime runtime(device);
        Trainer trainer(runtime, o);
        BackwardTimeline times(runtime.clock());
        trainer.model().observers().add(times);
        const std::string name = o.model.name + " at " + std::to_string(gbps) + " GB/s, overlap " +
                                 (overlap ? "on" : "off");
        for (int step = 1; step <= 2; ++step) {
          const double waited_before =
              runtime.clock().waited_seconds(stream::Clock::compute_stream());
          const StepResult r = trainer.step();
          ASSERT_EQ(times.units().size(), static_cast<size_t>(o.model.layers + 2)) << name;
          const double expected = predicted_exposed(
              times, overlap, gbps, trainer.model().parameters().values().bytes(), step == 1);
          EXPECT_NEAR(r.exposed_copy_seconds, expected, 1e-9 * expected)
              << name << ", step " << step;
          // Of it, the compute stream waited for the parameters' copy back alone (the host
          // waited for the gradients'): their bytes over the link.
          const double waited =
              runtime.clock().waited_seconds(stream::Clock::compute_stream()) - waited_before;
          const double copy_back =
              static_cast<double>(trainer.model().parameters().values().bytes()) / (gbps * 1e9);
          EXPECT_NEAR(waited, copy_back, 1e-9 * copy_back) << name << ", step " << step;
          exposed[overlap ? 1 : 0] = r.exposed_copy_seconds;
        }
      }
      const std::string name = o.model.name + " at " + std::to_string(gbps) + " GB/s";
      EXPECT_LT(exposed[1], exposed[0]) << name << ": streaming hid nothing";
    }
  }
}

// On a meta device nothing runs, the host's update included: it takes the bytes of its operands
// over the host's memory bandwidth (TrainOptions::host_memory_bytes_per_s), as a meta kernel
// takes its roofline. AdamW reads and writes each element's master (or parameter), gradient and
// two moments, and writes the 16-bit working copy under mixed precision.
TEST(GradientStreaming, AMetaHostsUpdateTakesItsBytesOverTheHostsBandwidth) {
  for (const plan::Precision precision : {plan::Precision::fp32, plan::Precision::mixed_bf16}) {
    for (const double gbps : {25.6, 204.8}) {
      TrainOptions o;
      o.model = llama_config("llama-4l", 4, 512, 8, 8, 1408, 32000, 512);
      o.batch = 2;
      o.seq = 512;
      o.plan.amp.precision = precision;
      o.plan.offload.optimizer = true;
      o.host_memory_bytes_per_s = gbps * 1e9;
      nn::Runtime runtime(memory::parse_device("meta:a100-40g"));
      Trainer trainer(runtime, o);
      const int64_t n = o.model.parameter_count();
      const int64_t per_element =
          precision == plan::Precision::fp32 ? 4 + 4 + 4 + 4 : 4 + 2 + 4 + 4 + 2;
      const double expected = static_cast<double>(n * per_element) / (gbps * 1e9);
      (void)trainer.step();  // the first also casts the master weights
      const StepResult r = trainer.step();
      EXPECT_NEAR(r.host_update_seconds, expected, 1e-12 * expected)
          << plan::precision_name(precision) << " at " << gbps << " GB/s";
    }
  }
  TrainOptions bad;
  bad.model = gpt2_config("test-gpt2", 1, 32, 4, 48, 16);
  bad.plan.offload.optimizer = true;
  for (const double rate : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    bad.host_memory_bytes_per_s = rate;
    EXPECT_THROW(validate(bad), UsageError) << rate;
  }
}

// --offload-copy-back tiled (Note [Tiled copy back]) changes when the parameters' copies go, not
// what they carry: tiles of any size train bitwise as the whole copy, with the same bytes.
TEST(TiledCopyBack, TrainsBitwiseAsTheWholeCopyWithTheSameBytes) {
  TrainOptions o;
  o.model = gpt2_config("test-gpt2", 2, 32, 4, 48, 16);
  o.batch = 3;
  o.seq = 11;
  o.seed = 24;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  nn::Runtime whole_runtime(memory::parse_device("sim:1GiB"));
  Trainer whole(whole_runtime, o);
  for (const int64_t tile : {int64_t{1}, int64_t{1000}, int64_t{4097}}) {
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer tiled(runtime, o);
    tiled.optimizer().tile_copy_back(tile);
    nn::Runtime fresh_runtime(memory::parse_device("sim:1GiB"));
    Trainer fresh(fresh_runtime, o);
    for (int step = 1; step <= 3; ++step)
      EXPECT_EQ(tiled.step().loss, fresh.step().loss) << "tile " << tile << ", step " << step;
    EXPECT_EQ(parameter_bytes(runtime, tiled), parameter_bytes(fresh_runtime, fresh))
        << "tile " << tile;
    EXPECT_EQ(runtime.transfer_stats().host_to_device_bytes,
              fresh_runtime.transfer_stats().host_to_device_bytes)
        << "tile " << tile;
  }
  EXPECT_THROW(whole.optimizer().tile_copy_back(-1), UsageError);
}

// On a meta device the host's update takes its bytes over the host's bandwidth, so each tile's
// share is exact: tile t's copy starts when the update has done tiles 1..t and the copy before it
// has ended, and the compute stream waits from the update's end to the last copy's end, where
// the whole copy makes it wait for every byte.
TEST(TiledCopyBack, TheComputeStreamWaitsOnlyForWhatTheTilesLeftAfterTheUpdate) {
  TrainOptions o;
  o.model = llama_config("llama-8l", 8, 1536, 12, 4, 4096, 32000, 512);  // ~0.27B: 3 tiles
  o.batch = 1;
  o.seq = 512;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  const int64_t n = o.model.parameter_count();
  ASSERT_GT(n, 2 * plan::kCopyBackTileElements);
  for (const double gbps : {4.0, 16.0, 400.0}) {
    double waited_each[2] = {0.0, 0.0};
    for (const bool tiled : {false, true}) {
      o.plan.offload.tiled_copy_back = tiled;
      memory::Device device = memory::parse_device("meta:a100-40g");
      device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s = gbps * 1e9;
      nn::Runtime runtime(device);
      Trainer trainer(runtime, o);
      (void)trainer.step();
      const double waited_before = runtime.clock().waited_seconds(stream::Clock::compute_stream());
      const StepResult r = trainer.step();
      const double waited =
          runtime.clock().waited_seconds(stream::Clock::compute_stream()) - waited_before;
      // The copies from the update's start: 2 bytes a parameter (bf16) over the link.
      const double update = r.host_update_seconds;
      double copied = 0.0;  // when the copy stream is free, from the update's start
      const int64_t tile = tiled ? plan::kCopyBackTileElements : n;
      for (int64_t first = 0; first < n; first += tile) {
        const int64_t end = std::min(n, first + tile);
        const double tile_done = update * static_cast<double>(end) / static_cast<double>(n);
        copied =
            std::max(copied, tile_done) + static_cast<double>(2 * (end - first)) / (gbps * 1e9);
      }
      const double expected = copied - update;
      EXPECT_NEAR(waited, expected, 1e-9 * expected)
          << (tiled ? "tiled" : "whole") << " at " << gbps << " GB/s";
      waited_each[tiled ? 1 : 0] = waited;
    }
    EXPECT_LT(waited_each[1], waited_each[0]) << gbps << " GB/s: the tiles hid nothing";
  }
}

}  // namespace
}  // namespace vramlab::train
