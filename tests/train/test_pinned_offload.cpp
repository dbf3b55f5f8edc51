// The offloaded optimizer's host buffers pinned or not (--offload-pin-memory, DeepSpeed's
// pin_memory): the same numbers either way; pinned, the staged gradients and parameters and the
// fp32 master sit in the device's pinned pool, each block a power of two, as the estimator says,
// and the moments stay pageable; a refused pinned allocation leaves nothing and a retry trains as
// a fresh run.
//   build/tests/bin/test_train --gtest_filter='PinnedOffload.*'
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/memory/host_memory.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

TrainOptions offloaded(amp::Precision precision, plan::Optimizer optimizer, bool pin) {
  TrainOptions o;
  o.model = llama_config("pin-llama", 2, 40, 4, 2, 72, 53, 16);  // odd sizes: no power of two
  o.batch = 2;
  o.seq = 9;
  o.plan.amp.precision = precision;
  o.plan.optimizer.name = optimizer;
  o.plan.offload.optimizer = true;
  o.plan.offload.pin_memory = pin;
  return o;
}

std::vector<unsigned char> trained_parameters(nn::Runtime& runtime, Trainer& trainer) {
  const memory::Tensor& values = trainer.model().parameters().values();
  std::vector<unsigned char> out(static_cast<size_t>(values.bytes()));
  runtime.copy_to_host(out.data(), values);
  return out;
}

TEST(PinnedOffload, PinnedOrNotTheStepIsTheSameAndThePoolHoldsWhatTheEstimatorSays) {
  for (const amp::Precision precision : {amp::Precision::fp32, amp::Precision::mixed_bf16}) {
    for (const plan::Optimizer optimizer : {plan::Optimizer::adamw, plan::Optimizer::sgd}) {
      const std::string name = std::string(amp::precision_name(precision)) + ", " +
                               std::string(plan::optimizer_name(optimizer));
      SCOPED_TRACE(name);
      nn::Runtime paged_runtime(memory::parse_device("sim:1GiB"));
      Trainer paged(paged_runtime, offloaded(precision, optimizer, false));
      nn::Runtime pinned_runtime(memory::parse_device("sim:1GiB"));
      const TrainOptions o = offloaded(precision, optimizer, true);
      Trainer pinned(pinned_runtime, o);
      for (int step = 1; step <= 3; ++step)
        EXPECT_EQ(pinned.step().loss, paged.step().loss) << "step " << step;
      EXPECT_EQ(trained_parameters(pinned_runtime, pinned),
                trained_parameters(paged_runtime, paged));

      const estimate::Estimate e = estimate_step(o);
      const estimate::Estimate e_paged = estimate_step(offloaded(precision, optimizer, false));
      // Pinned or not, the host holds the same bytes; pinned, the pool has the staged copies and
      // the master in power-of-two blocks, and the host runtime's own allocator the moments.
      EXPECT_EQ(pinned.host_model_state()->total(), paged.host_model_state()->total());
      EXPECT_EQ(pinned.host_model_state()->total(), e.cpu_offload_bytes);
      EXPECT_EQ(pinned.host_pinned_model_state(false).total(), e.host_pinned_requested_bytes);
      EXPECT_EQ(pinned.host_pinned_model_state(true).total(), e.host_pinned_bytes);
      EXPECT_EQ(paged.host_pinned_model_state(true).total(), 0);
      EXPECT_EQ(e_paged.host_pinned_bytes, 0);
      const int64_t psi = o.model.parameter_count();
      const int64_t p = precision == amp::Precision::fp32 ? 4 : 2;
      const int64_t master = precision == amp::Precision::fp32 ? 0 : 4 * psi;
      EXPECT_EQ(e.host_pinned_requested_bytes, 2 * p * psi + master);
      int64_t blocks = 2 * static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(p * psi)));
      if (master > 0) blocks += static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(master)));
      EXPECT_EQ(e.host_pinned_bytes, blocks);
      const int64_t moments = optimizer == plan::Optimizer::adamw ? 8 * psi : 0;
      EXPECT_EQ(pinned.optimizer_runtime()
                    .allocator()
                    .category_stats()
                    .requested(memory::MemoryCategory::optimizer_state)
                    .current,
                moments);
    }
  }
}

// Each pinned allocation of the first step refused in turn (a host out of page-locked memory):
// the host budget's HostMemoryError, nothing left in the pool or on the host runtime, the
// device as before the step, and a retry that trains as a fresh run.
TEST(PinnedOffload, ARefusedPinnedAllocationLeavesNothingAndARetryTrainsAsFresh) {
  const TrainOptions o = offloaded(amp::Precision::mixed_bf16, plan::Optimizer::adamw, true);
  nn::Runtime fresh_runtime(memory::parse_device("sim:1GiB"));
  Trainer fresh(fresh_runtime, o);
  const double fresh_loss = fresh.step().loss;
  const std::vector<unsigned char> fresh_parameters = trained_parameters(fresh_runtime, fresh);
  int64_t pinned_n = 0;
  {
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer twin(runtime, o);
    const int64_t before = runtime.host_allocator().host_memory_stats().active_requests.allocated;
    (void)twin.step();
    pinned_n = runtime.host_allocator().host_memory_stats().active_requests.allocated - before;
  }
  EXPECT_EQ(pinned_n, 3);  // the staged gradients and parameters, the master
  for (int64_t k = 1; k <= pinned_n; ++k) {
    const std::string where = "pinned allocation " + std::to_string(k);
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer trainer(runtime, o);
    const int64_t device_before =
        runtime.allocator().stats().allocated_bytes[memory::kAggregate].current;
    runtime.host_allocator().inject_refusal(static_cast<uint64_t>(k));
    try {
      (void)trainer.step();
      ADD_FAILURE() << where << ": the step did not fail";
    } catch (const memory::HostMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("pinned host allocator"), std::string::npos)
          << where << ": " << e.what();
    }
    EXPECT_EQ(trainer.host_pinned_model_state(true).total(), 0) << where;
    EXPECT_EQ(
        trainer.optimizer_runtime().allocator().stats().allocated_bytes[memory::kAggregate].current,
        0)
        << where;
    EXPECT_EQ(runtime.allocator().stats().allocated_bytes[memory::kAggregate].current,
              device_before)
        << where;
    EXPECT_EQ(trainer.optimizer().steps(), 0) << where;
    const double loss = trainer.step().loss;
    EXPECT_EQ(std::memcmp(&loss, &fresh_loss, sizeof loss), 0) << where;
    EXPECT_EQ(trained_parameters(runtime, trainer), fresh_parameters) << where;
  }
}

}  // namespace
}  // namespace vramlab::train
