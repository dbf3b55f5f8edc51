// Optimizer offload (Optimizer::keep_parameters_on): the states live on a host runtime, the
// parameters on a simulated device. Each step must leave the parameters bitwise as the device's
// own optimizer would, hold no state on the device, move exactly this rank's gradients down and
// its parameters up, and leave nothing behind when its first step runs out of host memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dist/shard_layout.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer_factory.h"
#include "common/platform/errors.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::optim {
namespace {

using Kind = plan::Optimizer;
using kernels::cpu::test_util::random_vector;

// Writes \p values (fp32) into \p out in out's dtype, through the runtime's cast kernel.
void fill(nn::Runtime& runtime, const memory::TensorView& out, std::vector<float> values) {
  const memory::TensorView source(values.data(), DType::f32, {out.numel()});
  runtime.kernels().cast(out, source);
}

int64_t requested(nn::Runtime& runtime, memory::MemoryCategory category) {
  return runtime.allocator().category_stats().requested(category).current;
}

// \p model's parameters on \p device: unsharded, or rank \p rank's store of 2 under \p sharding.
std::unique_ptr<nn::ParameterStore> make_store(nn::Runtime& device, const ModelConfig& model,
                                               const amp::PrecisionPolicy& precision,
                                               nn::StoreSharding sharding, int64_t rank) {
  std::unique_ptr<nn::ParameterStore> store =
      sharding == nn::StoreSharding::none
          ? std::make_unique<nn::ParameterStore>(device, model.parameters(), precision.parameters,
                                                 precision.gradients)
          : std::make_unique<nn::ParameterStore>(
                device, model.parameters(), precision.parameters, precision.gradients,
                dist::ShardLayout(model.parameters(), 2), rank, sharding);
  store->ensure_grads();
  return store;
}

// One model's store on a device, stepped by an optimizer on that device or on a host runtime.
struct Side {
  Side(const ModelConfig& model, const amp::PrecisionPolicy& precision, nn::StoreSharding sharding,
       int64_t rank)
      : device(memory::parse_device("sim:256MiB")),
        store(make_store(device, model, precision, sharding, rank)),
        params(*store) {}
  nn::Runtime device;
  std::unique_ptr<nn::ParameterStore> store;
  nn::ParameterStore& params;
};

struct Setting {
  const char* name;
  amp::PrecisionPolicy precision;
};

std::vector<Setting> settings() {
  return {{"fp32", amp::precision_policy(amp::Precision::fp32)},
          {"bf16", amp::precision_policy(amp::Precision::bf16)},
          {"bf16 stochastic", amp::precision_policy(amp::Precision::bf16, false, true)},
          {"mixed-bf16", amp::precision_policy(amp::Precision::mixed_bf16)},
          {"mixed-fp16", amp::precision_policy(amp::Precision::mixed_fp16)},
          {"mixed-bf16 fp32 grads", amp::precision_policy(amp::Precision::mixed_bf16, true)}};
}

TEST(OptimizerOffload, ParametersComeBackBitwiseAsTheDevicesOwnStepWithNoStateOnTheDevice) {
  // Odd sizes: vocab 29, hidden 12, seq 7.
  const ModelConfig model = gpt2_config("tiny", 2, 12, 2, 29, 7);
  for (const Kind kind : {Kind::sgd, Kind::sgd_momentum, Kind::adamw, Kind::lion}) {
    for (const Setting& setting : settings()) {
      for (const auto& [sharding, rank] : {std::pair{nn::StoreSharding::none, int64_t{0}},
                                           {nn::StoreSharding::optimizer_states, int64_t{1}}}) {
        const std::string name = std::string(plan::optimizer_name(kind)) + ", " + setting.name +
                                 (sharding == nn::StoreSharding::none ? "" : ", ZeRO-1 rank 1");
        Side own(model, setting.precision, sharding, rank);
        Side offloaded(model, setting.precision, sharding, rank);
        nn::Runtime host(memory::parse_device("cpu"));
        OptimizerSettings hp;
        hp.learning_rate = 0.01f;
        hp.weight_decay = 0.1f;
        const std::unique_ptr<optim::Optimizer> on_device =
            make_optimizer(own.device, kind, hp, setting.precision, &model);
        const std::unique_ptr<optim::Optimizer> on_host =
            make_optimizer(host, kind, hp, setting.precision, &model, &offloaded.device);
        ASSERT_TRUE(on_host->offloaded()) << name;
        ASSERT_FALSE(on_device->offloaded()) << name;
        const int64_t n = own.params.values().numel();
        const std::vector<float> initial = random_vector<float>(n, 7);
        fill(own.device, own.params.values().view(), initial);
        fill(offloaded.device, offloaded.params.values().view(), initial);
        const int64_t local = offloaded.params.local_numel();
        const int64_t value_bytes =
            local * static_cast<int64_t>(dtype_size_bytes(setting.precision.parameters));
        const int64_t grad_bytes =
            local * static_cast<int64_t>(dtype_size_bytes(setting.precision.gradients));
        const nn::TransferStats before = offloaded.device.transfer_stats();
        const int steps = 3;
        for (int step = 1; step <= steps; ++step) {
          const std::vector<float> grads =
              random_vector<float>(own.params.grads().numel(), 70 + step, -0.5, 0.5);
          fill(own.device, own.params.grads().view(), grads);
          fill(offloaded.device, offloaded.params.grads().view(), grads);
          on_device->step(own.params, 0.75f);
          on_host->step(offloaded.params, 0.75f);
          ASSERT_EQ(std::memcmp(own.params.values().view().data(),
                                offloaded.params.values().view().data(),
                                static_cast<size_t>(own.params.values().bytes())),
                    0)
              << name << ", step " << step;
        }
        EXPECT_EQ(on_host->steps(), steps) << name;
        EXPECT_EQ(on_host->state_bytes(), on_device->state_bytes()) << name;
        // The states are on the host, in the host's allocator; the device holds none.
        EXPECT_EQ(requested(offloaded.device, memory::MemoryCategory::optimizer_state), 0) << name;
        EXPECT_EQ(requested(host, memory::MemoryCategory::optimizer_state), on_host->state_bytes())
            << name;
        EXPECT_EQ(requested(host, memory::MemoryCategory::gradient), grad_bytes) << name;
        EXPECT_EQ(requested(host, memory::MemoryCategory::parameter), value_bytes) << name;
        // The traffic: the parameters once down at the first step, then per step this rank's
        // gradients down and its parameters up (4Ψ bytes a step in 16 bits).
        const nn::TransferStats& after = offloaded.device.transfer_stats();
        EXPECT_EQ(after.device_to_host_bytes - before.device_to_host_bytes,
                  value_bytes + steps * grad_bytes)
            << name;
        EXPECT_EQ(after.host_to_device_bytes - before.host_to_device_bytes, steps * value_bytes)
            << name;
      }
    }
  }
}

TEST(OptimizerOffload, AFirstStepThatRunsOutOfHostMemoryLeavesNothingBehind) {
  const ModelConfig model = gpt2_config("tiny", 2, 12, 2, 29, 7);
  const amp::PrecisionPolicy precision = amp::precision_policy(amp::Precision::mixed_bf16);
  for (const Kind kind : {Kind::sgd_momentum, Kind::adamw}) {
    const std::string name(plan::optimizer_name(kind));
    Side side(model, precision, nn::StoreSharding::none, 0);
    nn::Runtime host(memory::parse_device("sim:256MiB"));
    fill(side.device, side.params.values().view(),
         random_vector<float>(side.params.values().numel(), 11));
    fill(side.device, side.params.grads().view(),
         random_vector<float>(side.params.grads().numel(), 12));
    const std::vector<std::byte> values_before(
        static_cast<const std::byte*>(side.params.values().view().data()),
        static_cast<const std::byte*>(side.params.values().view().data()) +
            side.params.values().bytes());
    int64_t n = 0;  // the host allocations of a first step
    {
      nn::Runtime twin_host(memory::parse_device("sim:256MiB"));
      Side twin(model, precision, nn::StoreSharding::none, 0);
      const std::unique_ptr<optim::Optimizer> optimizer =
          make_optimizer(twin_host, kind, {}, precision, &model, &twin.device);
      optimizer->step(twin.params);
      n = twin_host.allocator().stats().allocation[memory::kAggregate].allocated;
    }
    ASSERT_GE(n, 4) << name << ": gradients, parameters, master and a state at least";
    const std::unique_ptr<optim::Optimizer> optimizer =
        make_optimizer(host, kind, {}, precision, &model, &side.device);
    for (int64_t k = 1; k <= n; ++k) {
      host.allocator().inject_out_of_memory(static_cast<uint64_t>(k));
      EXPECT_THROW(optimizer->step(side.params), memory::OutOfMemoryError) << name << ", k " << k;
      EXPECT_EQ(host.allocator().stats().allocated_bytes[memory::kAggregate].current, 0)
          << name << ": allocation " << k << " of " << n;
      EXPECT_EQ(optimizer->state_bytes(), 0) << name << ", k " << k;
      EXPECT_EQ(optimizer->steps(), 0) << name << ", k " << k;
      EXPECT_EQ(std::memcmp(side.params.values().view().data(), values_before.data(),
                            values_before.size()),
                0)
          << name << ": the parameters changed, k " << k;
      host.allocator().check_invariants();
    }
    optimizer->step(side.params);
    EXPECT_EQ(optimizer->steps(), 1) << name;
    EXPECT_GT(optimizer->state_bytes(), 0) << name;
  }
}

TEST(OptimizerOffload, OptimizersThatStepTensorByTensorAndLateCallsAreRefused) {
  const ModelConfig model = gpt2_config("tiny", 2, 12, 2, 29, 7);
  nn::Runtime device(memory::parse_device("sim:256MiB"));
  nn::Runtime host(memory::parse_device("cpu"));
  for (const Kind kind : {Kind::adam_mini, Kind::adafactor, Kind::adamw_8bit}) {
    try {
      (void)make_optimizer(host, kind, {}, {}, &model, &device);
      ADD_FAILURE() << plan::optimizer_name(kind) << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("tensor by tensor"), std::string::npos) << e.what();
    }
  }
  // The same runtime for both is no offload.
  EXPECT_FALSE(make_optimizer(device, Kind::adamw, {}, {}, &model, &device)->offloaded());
  nn::ParameterStore params(device, model.parameters());
  params.ensure_grads();
  const std::unique_ptr<optim::Optimizer> stepped = make_optimizer(host, Kind::sgd, {}, {}, &model);
  nn::ParameterStore host_params(host, model.parameters());
  host_params.ensure_grads();
  stepped->step(host_params);
  EXPECT_THROW(stepped->keep_parameters_on(device), std::logic_error);
}

}  // namespace
}  // namespace vramlab::optim
