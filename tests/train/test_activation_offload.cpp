// `--offload-activations on` (Note [Activation offload]): the saved tensors go to pinned host
// memory after each layer's forward and come back ahead of its backward. It must change no bit of
// training; the device keeps what the estimator says when the forward ends and the host's pinned
// blocks are what it says, rounding included; every byte crosses the link once each way; and on
// the clock a slow link shows as the compute stream waiting, a fast one hides.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/plan/plan.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/stream/clock.h"
#include "common/train/trainer.h"
#include "tests/train/varied_train_cases.h"

namespace vramlab::train {
namespace {

using OffloadCase = test_cases::NamedRun;

// The varied runs (tests/train/varied_train_cases.h).
std::vector<OffloadCase> offload_cases() {
  return test_cases::varied_runs(31);
}

std::vector<unsigned char> parameter_bytes(nn::Runtime& runtime, Trainer& trainer) {
  const memory::Tensor& values = trainer.model().parameters().values();
  std::vector<unsigned char> bytes(static_cast<size_t>(values.bytes()));
  runtime.copy_to_host(bytes.data(), values);
  return bytes;
}

// The backward reads the bytes the forward saved, whichever memory held them in between.
TEST(ActivationOffload, TrainsBitwiseAsKeepingThemOnTheDevice) {
  for (const OffloadCase& c : offload_cases()) {
    for (const bool optimizer_offloaded : {false, true}) {
      TrainOptions kept = c.options, offloaded = c.options;
      offloaded.plan.activations.offload = true;
      kept.plan.offload.optimizer = offloaded.plan.offload.optimizer = optimizer_offloaded;
      const std::string name = c.name + (optimizer_offloaded ? ", optimizer offloaded" : "");
      nn::Runtime kept_runtime(memory::parse_device("sim:1GiB"));
      nn::Runtime offloaded_runtime(memory::parse_device("sim:1GiB"));
      Trainer kept_trainer(kept_runtime, kept);
      Trainer offloaded_trainer(offloaded_runtime, offloaded);
      for (int step = 1; step <= 3; ++step) {
        const StepResult k = kept_trainer.step(), o = offloaded_trainer.step();
        EXPECT_EQ(o.loss, k.loss) << name << ", step " << step;
        EXPECT_LT(o.activation_bytes_after_forward, k.activation_bytes_after_forward) << name;
      }
      EXPECT_EQ(parameter_bytes(offloaded_runtime, offloaded_trainer),
                parameter_bytes(kept_runtime, kept_trainer))
          << name << ": parameters after 3 steps";
    }
  }
}

// What stays on the device when the forward ends and what the pinned blocks hold, against the
// estimator (runtime_offloaded_activation_bytes), which counts them from the layout; and the
// link carries each offloaded byte once down and once up per step.
TEST(ActivationOffload, DeviceAndPinnedHostBytesAreTheEstimators) {
  for (const OffloadCase& c : offload_cases()) {
    TrainOptions o = c.options;
    o.plan.activations.offload = true;
    const estimate::Estimate e = estimate_step(o);
    ASSERT_GT(e.host_activation_bytes, 0) << c.name;
    ASSERT_GE(e.host_activation_bytes, e.host_activation_requested_bytes) << c.name;
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer trainer(runtime, o);
    const int64_t input_copies = runtime.transfer_stats().host_to_device_bytes;
    const int steps = 2;
    for (int step = 1; step <= steps; ++step) {
      const StepResult r = trainer.step();
      EXPECT_EQ(r.activation_bytes_after_forward, e.runtime_bytes_after_forward)
          << c.name << ", step " << step;
      EXPECT_EQ(r.activation_peak_bytes, e.runtime_schedule_peak_bytes)
          << c.name << ", step " << step;
    }
    const memory::CategoryStats host = runtime.host_allocator().category_stats();
    EXPECT_EQ(host.of(memory::MemoryCategory::activation).peak, e.host_activation_bytes) << c.name;
    EXPECT_EQ(host.requested(memory::MemoryCategory::activation).peak,
              e.host_activation_requested_bytes)
        << c.name;
    // Every pinned block is back in the cache between steps.
    EXPECT_EQ(host.of(memory::MemoryCategory::activation).current, 0) << c.name;
    // Micro-batches each send their own tensors: the requested bytes of every one of them.
    int64_t all_micro_batches = 0;
    for (const int64_t b : step_micro_batches(o)) {
      TrainOptions one = o;
      one.batch = b;
      one.plan.batch = {};
      all_micro_batches += estimate_step(one).host_activation_requested_bytes;
    }
    const nn::TransferStats moved = runtime.transfer_stats();
    EXPECT_EQ(moved.device_to_host_bytes, steps * all_micro_batches) << c.name;
    const int64_t batch_bytes = 2 * o.batch * o.seq * static_cast<int64_t>(sizeof(int32_t));
    EXPECT_EQ(moved.host_to_device_bytes - input_copies, steps * (all_micro_batches + batch_bytes))
        << c.name;
  }
}

// On a meta device every time on the clock is exact. A link slower than the forward makes
// tensors shows as the compute stream waiting in the backward; a far faster one hides nearly all
// of it, and the exposed time never exceeds what the copies take.
TEST(ActivationOffload, ASlowLinkIsExposedAFastOneHides) {
  TrainOptions o;
  o.model = llama_config("llama-8l", 8, 1024, 16, 4, 2816, 32000, 1024);
  o.batch = 2;
  o.seq = 1024;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  o.plan.activations.offload = true;
  double previous_exposed = -1.0;
  for (const double gbps : {2000.0, 64.0, 4.0}) {
    memory::Device device = memory::parse_device("meta:a100-40g");
    device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s = gbps * 1e9;
    nn::Runtime runtime(device);
    Trainer trainer(runtime, o);
    (void)trainer.step();
    const nn::TransferStats before = runtime.transfer_stats();
    const double busy_before = runtime.clock().busy_seconds(stream::Clock::compute_stream());
    const StepResult r = trainer.step();
    const nn::TransferStats after = runtime.transfer_stats();
    const double copies = (after.device_to_host_seconds - before.device_to_host_seconds) +
                          (after.host_to_device_seconds - before.host_to_device_seconds);
    const double compute =
        runtime.clock().busy_seconds(stream::Clock::compute_stream()) - busy_before;
    const std::string name = std::to_string(gbps) + " GB/s";
    EXPECT_GE(r.exposed_copy_seconds, 0.0) << name;
    EXPECT_LE(r.exposed_copy_seconds, copies + 1e-12) << name;
    EXPECT_NEAR(r.clock_seconds, compute + r.exposed_copy_seconds, 1e-9 * r.clock_seconds) << name;
    std::printf("activation offload at %g GB/s: compute %.4f s, copies %.4f s, exposed %.4f s\n",
                gbps, compute, copies, r.exposed_copy_seconds);
    if (gbps >= 2000.0) {
      EXPECT_LT(r.exposed_copy_seconds, 0.01 * compute) << name;
    }
    if (gbps <= 4.0) {
      EXPECT_GT(r.exposed_copy_seconds, 0.5 * (copies - compute)) << name;
    }
    EXPECT_GT(r.exposed_copy_seconds, previous_exposed) << name;
    previous_exposed = r.exposed_copy_seconds;
  }
}

// A device block the copy stream still reads is not handed out again until the copy is done
// (record_stream): the caching allocator keeps it, so a forward that outruns the link holds more
// device memory, as on a GPU.
TEST(ActivationOffload, ABlockStillBeingCopiedIsNotReused) {
  memory::Device device = memory::parse_device("meta:a100-40g");
  device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s = 1e9;
  nn::Runtime runtime(device);
  const stream::StreamId copies = runtime.clock().new_stream("activation offload");
  const std::unique_ptr<nn::ActivationStorage> storage =
      nn::make_offloading_activation_storage(copies);
  std::uint64_t first_address = 0;
  std::unique_ptr<nn::PackedActivation> packed;
  {
    memory::Tensor t = runtime.allocate({1 << 20}, DType::bf16, memory::MemoryCategory::activation,
                                        "blocks.0.fch");  // (2^20) 2 MiB: 2.1 ms at 1 GB/s
    first_address = reinterpret_cast<std::uint64_t>(t.view().data());
    packed = storage->pack(runtime, t);
  }
  {
    const memory::Tensor again = runtime.allocate(
        {1 << 20}, DType::bf16, memory::MemoryCategory::activation, "blocks.1.fch");  // (2^20)
    EXPECT_NE(reinterpret_cast<std::uint64_t>(again.view().data()), first_address)
        << "reused while the copy stream still reads it";
  }
  runtime.clock().synchronize();
  const memory::Tensor later =
      runtime.allocate({1 << 20}, DType::bf16, memory::MemoryCategory::activation, "blocks.2.fch");
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(later.view().data()), first_address)
      << "once the copy is done the cached block serves the same size again";
  EXPECT_EQ(packed->bytes(), 0) << "nothing of it on the device until prefetch";
}

TEST(ActivationOffload, RefusesInt8CompressionBesideIt) {
  TrainOptions o;
  o.model = gpt2_config("test-gpt2", 1, 32, 4, 48, 16);
  o.batch = 2;
  o.seq = 16;
  o.plan.activations.offload = true;
  o.plan.activations.compression = plan::ActivationCompression::int8;
  try {
    validate(o);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("int8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vramlab::train
