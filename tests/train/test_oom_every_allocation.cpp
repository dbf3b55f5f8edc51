// An out-of-memory error at every allocation of a training step (issue #20, part 3).
//   build/tests/bin/test_train_backends_and_oom --gtest_filter='OomAtEveryAllocation.*'
//
// For each configuration the runtime supports, the allocator's fault injection
// (CachingAllocator::inject_out_of_memory) fails the k-th allocation of a step, for every k from
// 1 to the step's allocation count N, on the same trainer and runtime. Each time:
//   - the step throws OutOfMemoryError with PyTorch's text;
//   - the allocator's invariants hold and it counted the OOM;
//   - allocated bytes are back where they were before the step (nothing leaked), less the
//     previous step's gradients under grads_to_none (the failed step's zero-grad released them);
//   - the next step, with a smaller batch, succeeds, and its loss and parameters are bitwise a
//     fresh run's after the same successful steps (the failed steps leave no trace).
// Two phases per configuration: the first step (a fresh trainer per k on the same runtime: the
// first step also allocates the optimizer states), then steady steps (one trainer for every k).
// Data and tensor parallelism on simulated ranks follow (see the note above them): a lost rank
// stops the job, so there each k restarts the job instead of retrying in it.
// Under the sanitizers (VRAMLAB_SANITIZE) only every 7th k runs, and the output says so.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dist/communicator.h"
#include "common/dist/parallel_options.h"
#include "common/dist/simulated_communicator.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/plan/plan.h"
#include "common/recompute/recompute_spec.h"
#include "common/storage/nvme_tier.h"
#include "common/train/trainer.h"
#include "tests/file_size_limit.h"
#include "tests/sanitized_build.h"
#include "tests/temp_dir.h"

namespace vramlab::train {
namespace {

constexpr int64_t kEveryKth = test_build::kSanitized ? 7 : 1;  // the output says so

constexpr int64_t kFailingBatch = 3;  // B of the steps that fail
constexpr int64_t kRetryBatch = 2;    // B of the retries (and of the fresh run)
const char* const kDevice = "sim:1GiB";

TrainOptions tiny(ModelFamily family) {
  TrainOptions o;
  o.model = family == ModelFamily::gpt2 ? gpt2_config("oom-gpt2", 4, 16, 2, 24, 8)
                                        : llama_config("oom-llama", 4, 16, 2, 1, 24, 24, 8);
  o.batch = kFailingBatch;
  o.seq = 7;  // odd, below max_seq
  o.seed = 20;
  return o;
}

// What a step leaves that a later step can see: the loss, the parameters' bytes, the optimizer's
// step count and the loss scaler's state.
struct StepOutcome {
  double loss = 0.0;
  std::vector<unsigned char> parameters;  // (parameter bytes) as stored, any dtype
  int64_t optimizer_steps = 0;
  double loss_scale = 0.0;
  int64_t growth_tracker = 0;
};

StepOutcome outcome(Trainer& trainer, double loss) {
  StepOutcome o;
  o.loss = loss;
  o.optimizer_steps = trainer.optimizer().steps();
  o.loss_scale = trainer.scaler().scale();
  o.growth_tracker = trainer.scaler().growth_tracker();
  o.parameters = trainer.model().parameters().read_values();
  return o;
}

// Bitwise: the same kernels on the same data in the same order.
void expect_same(const StepOutcome& got, const StepOutcome& fresh, const std::string& where) {
  EXPECT_EQ(std::memcmp(&got.loss, &fresh.loss, sizeof(double)), 0)
      << where << ": loss " << got.loss << ", a fresh run's " << fresh.loss;
  EXPECT_EQ(got.optimizer_steps, fresh.optimizer_steps) << where << ": optimizer steps";
  EXPECT_EQ(got.loss_scale, fresh.loss_scale) << where << ": loss scale";
  EXPECT_EQ(got.growth_tracker, fresh.growth_tracker) << where << ": the scaler's growth tracker";
  ASSERT_EQ(got.parameters.size(), fresh.parameters.size()) << where;
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < got.parameters.size(); ++i) {
    if (got.parameters[i] != fresh.parameters[i] && differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0u) << where << ": " << differing << " of " << got.parameters.size()
                           << " parameter bytes differ from a fresh run's, the first at byte "
                           << first;
}

int64_t allocations_so_far(nn::Runtime& runtime) {
  return runtime.allocator().stats().allocation[memory::kAggregate].allocated;
}

int64_t allocated_bytes(nn::Runtime& runtime) {
  return runtime.allocator().stats().allocated_bytes[memory::kAggregate].current;
}

// Fails the k-th allocation of trainer.step() at the failing batch and checks the error, the
// invariants and the bytes. The caller then retries with the smaller batch.
void fail_step_at(nn::Runtime& runtime, Trainer& trainer, int64_t k, int64_t n,
                  const std::string& where) {
  trainer.set_batch(kFailingBatch);
  memory::CachingAllocator& allocator = runtime.allocator();
  const memory::CategoryStats categories_before = allocator.category_stats();
  // What the trainer keeps across a failed step: all it held, less the previous step's gradients
  // under grads_to_none (the failed step's zero-grad released them; its own partial ones go too).
  const int64_t bytes_before =
      allocated_bytes(runtime) -
      (trainer.options().grads_to_none
           ? categories_before
                 .allocated_bytes[static_cast<size_t>(memory::MemoryCategory::gradient)]
                 .current
           : 0);
  const int64_t ooms_before = allocator.stats().num_ooms;
  allocator.inject_out_of_memory(static_cast<uint64_t>(k));
  try {
    (void)trainer.step();
    ADD_FAILURE() << where << ": allocation " << k << " of " << n << " did not fail the step";
  } catch (const memory::OutOfMemoryError& e) {
    const std::string expected = std::string(kDevice) + " out of memory. Tried to allocate ";
    EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << where << ": " << e.what();
  }
  EXPECT_EQ(allocator.injected_out_of_memory_countdown(), 0u) << where;
  allocator.inject_out_of_memory(0);
  EXPECT_NO_THROW(allocator.check_invariants()) << where;
  EXPECT_EQ(allocator.stats().num_ooms, ooms_before + 1) << where;
  const int64_t bytes_after = allocated_bytes(runtime);
  if (bytes_after != bytes_before) {
    const memory::CategoryStats categories_after = allocator.category_stats();
    std::ostringstream leaked;
    for (size_t c = 0; c < memory::kMemoryCategoryCount; ++c) {
      const int64_t d = categories_after.allocated_bytes[c].current -
                        categories_before.allocated_bytes[c].current;  // incl. released gradients
      if (d != 0)
        leaked << " " << memory::category_name(static_cast<memory::MemoryCategory>(c)) << " " << d;
    }
    ADD_FAILURE() << where << ": allocated bytes " << bytes_before << " before the step, "
                  << bytes_after << " after its out-of-memory error (by category:" << leaked.str()
                  << ")";
  }
}

struct Counts {
  int64_t failed = 0;
  double seconds = 0.0;
};

// Every k of one configuration (see the file comment). Returns how many allocations failed.
Counts fail_every_allocation(const std::string& name, TrainOptions options) {
  const auto start = std::chrono::steady_clock::now();
  const memory::Device device = memory::parse_device(kDevice);
  options.batch = kFailingBatch;
  TrainOptions retry_options = options;
  retry_options.batch = kRetryBatch;

  // N of a first step and of a steady step, counted on a twin; N + 1 must not fail a step.
  int64_t first_n = 0, steady_n = 0;
  {
    nn::Runtime runtime(device);
    Trainer twin(runtime, options);
    int64_t before = allocations_so_far(runtime);
    (void)twin.step();
    first_n = allocations_so_far(runtime) - before;
    before = allocations_so_far(runtime);
    runtime.allocator().inject_out_of_memory(static_cast<uint64_t>(first_n + 1));
    (void)twin.step();
    steady_n = allocations_so_far(runtime) - before;
    EXPECT_EQ(runtime.allocator().injected_out_of_memory_countdown(),
              static_cast<uint64_t>(first_n + 1 - steady_n))
        << name << ": the steady step made " << steady_n << " allocations";
  }
  EXPECT_GT(first_n, 0);
  EXPECT_GT(steady_n, 0);

  int64_t failed = 0;
  // The first step: a fresh trainer per k, on one runtime.
  nn::Runtime runtime(device);
  nn::Runtime fresh_runtime(device);
  Trainer fresh(fresh_runtime, retry_options);
  const StepOutcome fresh_first = outcome(fresh, fresh.step().loss);
  for (int64_t k = 1; k <= first_n; k += kEveryKth) {
    const std::string where =
        name + ", first step, allocation " + std::to_string(k) + " of " + std::to_string(first_n);
    Trainer trainer(runtime, options);
    fail_step_at(runtime, trainer, k, first_n, where);
    ++failed;
    trainer.set_batch(kRetryBatch);
    expect_same(outcome(trainer, trainer.step().loss), fresh_first, where);
    if (testing::Test::HasFailure()) return {failed, 0.0};
  }

  // Steady steps: one trainer for every k, a fresh run beside it step for step.
  Trainer trainer(runtime, options);
  trainer.set_batch(kRetryBatch);
  expect_same(outcome(trainer, trainer.step().loss), fresh_first, name + ", step 1");
  for (int64_t k = 1; k <= steady_n; k += kEveryKth) {
    const std::string where = name + ", step " + std::to_string(k + 1) + ", allocation " +
                              std::to_string(k) + " of " + std::to_string(steady_n);
    fail_step_at(runtime, trainer, k, steady_n, where);
    ++failed;
    trainer.set_batch(kRetryBatch);
    const StepOutcome retried = outcome(trainer, trainer.step().loss);
    expect_same(retried, outcome(fresh, fresh.step().loss), where);
    if (testing::Test::HasFailure()) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "oom at every allocation: %-26s %4lld failed (first step %lld + steady step %lld "
      "allocations%s) in %.2f s\n",
      name.c_str(), static_cast<long long>(failed), static_cast<long long>(first_n),
      static_cast<long long>(steady_n),
      kEveryKth > 1 ? ", only every 7th k under the sanitizers" : "", seconds);
  return {failed, seconds};
}

TEST(OomAtEveryAllocation, Gpt2MixedBf16OptimizerOffloaded) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  EXPECT_GT(fail_every_allocation("gpt2 mixed-bf16 offloaded", o).failed, 0);
}

// With the update delayed from the first step (--offload-dpu 1) an update is always waiting to
// reach the device while a step runs: a failed step must leave it waiting, not lost or applied
// twice, so the retry trains as a run without the failure would.
TEST(OomAtEveryAllocation, Gpt2MixedBf16OptimizerOffloadedWithTheUpdateDelayed) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  o.plan.offload.delay_update_from = 1;
  EXPECT_GT(fail_every_allocation("gpt2 mixed-bf16 delayed", o).failed, 0);
}

// Under --offload optimizer the host's allocations (the first step's states and staged copies;
// later steps allocate nothing there) fail in turn: the host's "cpu out of memory" error, both
// allocators consistent, nothing kept on either side, and a retry that trains as a fresh run.
TEST(OomAtEveryAllocation, OffloadedOptimizersHostAllocations) {
  for (const plan::Optimizer kind :
       {plan::Optimizer::adamw, plan::Optimizer::sgd_momentum, plan::Optimizer::lion}) {
    TrainOptions options = tiny(ModelFamily::llama);
    options.plan.amp.precision = amp::Precision::mixed_bf16;
    options.plan.optimizer.name = kind;
    options.plan.offload.optimizer = true;
    // Every host buffer on the host runtime's allocator; the pinned pool's refusals are
    // PinnedOffload.ARefusedPinnedAllocationLeavesNothingAndARetryTrainsAsFresh's.
    options.plan.offload.pin_memory = false;
    TrainOptions retry = options;
    retry.batch = kRetryBatch;
    const std::string name = "llama mixed-bf16 " + std::string(plan::optimizer_name(kind)) +
                             " offloaded, host allocation ";
    const memory::Device device = memory::parse_device(kDevice);
    nn::Runtime fresh_runtime(device);
    Trainer fresh(fresh_runtime, retry);
    const StepOutcome fresh_first = outcome(fresh, fresh.step().loss);
    int64_t host_n = 0;
    {
      nn::Runtime runtime(device);
      Trainer twin(runtime, options);
      (void)twin.step();
      host_n =
          twin.optimizer_runtime().allocator().stats().allocation[memory::kAggregate].allocated;
    }
    EXPECT_GE(host_n, 2) << name;
    for (int64_t k = 1; k <= host_n; ++k) {
      const std::string where = name + std::to_string(k) + " of " + std::to_string(host_n);
      nn::Runtime runtime(device);
      Trainer trainer(runtime, options);
      memory::CachingAllocator& host = trainer.optimizer_runtime().allocator();
      const int64_t device_before = allocated_bytes(runtime);
      host.inject_out_of_memory(static_cast<uint64_t>(k));
      try {
        (void)trainer.step();
        ADD_FAILURE() << where << ": did not fail the step";
      } catch (const memory::OutOfMemoryError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("cpu out of memory. Tried to allocate ", 0), 0u)
            << where << ": " << e.what();
      }
      host.inject_out_of_memory(0);
      EXPECT_NO_THROW(host.check_invariants()) << where;
      EXPECT_NO_THROW(runtime.allocator().check_invariants()) << where;
      EXPECT_EQ(host.stats().allocated_bytes[memory::kAggregate].current, 0) << where;
      EXPECT_EQ(allocated_bytes(runtime), device_before) << where;
      trainer.set_batch(kRetryBatch);
      expect_same(outcome(trainer, trainer.step().loss), fresh_first, where);
      if (testing::Test::HasFailure()) return;
    }
  }
}

TEST(OomAtEveryAllocation, Gpt2Fp32) {
  EXPECT_GT(fail_every_allocation("gpt2 fp32", tiny(ModelFamily::gpt2)).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaFp32) {
  EXPECT_GT(fail_every_allocation("llama fp32", tiny(ModelFamily::llama)).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2Fp32GradientsZeroedNotReleased) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.grads_to_none = false;
  EXPECT_GT(fail_every_allocation("gpt2 fp32 zeroed grads", o).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2FullRecompute) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.recompute = recompute::parse_recompute_spec("full");
  EXPECT_GT(fail_every_allocation("gpt2 recompute full", o).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaSelectiveRecompute) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.recompute = recompute::parse_recompute_spec("selective");
  EXPECT_GT(fail_every_allocation("llama recompute selective", o).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2MixedBf16) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.amp.precision = amp::Precision::mixed_bf16;  // bf16 autocast with fp32 master weights
  EXPECT_GT(fail_every_allocation("gpt2 mixed bf16", o).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaPureBf16) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.amp.precision = amp::Precision::bf16;
  o.plan.amp.stochastic_rounding = true;  // its rounding seed follows the optimizer's step count
  EXPECT_GT(fail_every_allocation("llama pure bf16", o).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaMixedFp16WithGradScaler) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.amp.precision = amp::Precision::mixed_fp16;  // dynamic loss scaling by default
  o.plan.optimizer.max_grad_norm = 1.0f;
  EXPECT_GT(fail_every_allocation("llama mixed fp16 scaler", o).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2GradAccumulationWithDropoutAndCheckpoints) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.batch.grad_accum = 2;
  o.plan.dropout.p = 0.1f;  // its masks replay in the recomputed layers
  o.plan.recompute = recompute::parse_recompute_spec("every:2");
  EXPECT_GT(fail_every_allocation("gpt2 accum 2 dropout every:2", o).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaFlashAttentionWithInt8Activations) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.attention = AttentionKind::flash;
  o.plan.activations.compression = nn::ActivationCompression::int8_block;
  EXPECT_GT(fail_every_allocation("llama flash int8 acts", o).failed, 0);
}

// Activation offload allocates each tensor's way back during the backward (prefetch) and frees
// device blocks the copy stream still reads: a failure anywhere leaves neither allocator holding
// anything of the step, and the retry trains as a fresh run.
TEST(OomAtEveryAllocation, Gpt2MixedBf16ActivationsOffloadedWithCheckpoints) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.recompute = recompute::parse_recompute_spec("every:2");
  o.plan.activations.offload = true;
  o.plan.offload.optimizer = true;
  EXPECT_GT(fail_every_allocation("gpt2 activations offloaded", o).failed, 0);
}

TEST(OomAtEveryAllocation, EveryOtherOptimizer) {
  for (const estimate::Optimizer kind :
       {estimate::Optimizer::sgd_momentum, estimate::Optimizer::lion,
        estimate::Optimizer::adam_mini, estimate::Optimizer::adafactor,
        estimate::Optimizer::adamw_8bit}) {
    TrainOptions o = tiny(ModelFamily::gpt2);
    o.plan.optimizer.name = kind;
    o.plan.optimizer.eight_bit.min_8bit_size =
        64;  // the tiny model's matrices are quantized, not kept in fp32
    o.plan.amp.precision = amp::Precision::mixed_bf16;
    EXPECT_GT(
        fail_every_allocation("gpt2 mixed bf16 " + std::string(estimate::optimizer_name(kind)), o)
            .failed,
        0);
  }
}

// ---- Data parallelism on simulated ranks ----
//
// A rank that runs out of memory leaves its peers in a collective: in PyTorch they hang in NCCL
// until a timeout, and the job restarts. The simulated world instead reports the lost rank: each
// peer's pending or next call throws PeerFailure naming it. So each k runs one world where rank r's
// k-th allocation fails: rank r gets PyTorch's error, its peers a PeerFailure (or finish their
// step, when the failure came after their last collective), and every rank's trainer cleans up
// (invariants, bytes back to before the step, all freed with the trainer). Then the job restarts,
// as torchrun would, on the same devices (runtimes) with the smaller batch, and its first step is
// bitwise a fresh job's. Two phases, as above: the first step, and a step after one that
// succeeded.

int64_t ranks_allocations(std::vector<std::unique_ptr<nn::Runtime>>& runtimes, size_t r) {
  return allocations_so_far(*runtimes[r]);
}

enum class Group { data_parallel, tensor_parallel };

Counts fail_every_allocation_on_ranks(const std::string& name, TrainOptions options, int64_t ranks,
                                      Group group = Group::data_parallel) {
  const auto start = std::chrono::steady_clock::now();
  const memory::Device device = memory::parse_device(kDevice);
  options.batch = kFailingBatch;
  TrainOptions retry_options = options;
  retry_options.batch = kRetryBatch;
  const auto make_runtimes = [&] {
    std::vector<std::unique_ptr<nn::Runtime>> runtimes;
    for (int64_t r = 0; r < ranks; ++r) runtimes.push_back(std::make_unique<nn::Runtime>(device));
    return runtimes;
  };
  const auto on_rank = [&](dist::Communicator& comm, TrainOptions o) {
    if (group == Group::data_parallel)
      o.set_groups(&comm, nullptr);
    else
      o.set_groups(nullptr, &comm);
    return o;
  };

  // N per rank: of a first step, and of a step after a successful one.
  std::vector<int64_t> first_n(static_cast<size_t>(ranks)), steady_n(static_cast<size_t>(ranks));
  {
    std::vector<std::unique_ptr<nn::Runtime>> runtimes = make_runtimes();
    dist::run_simulated_ranks(ranks, true, [&](dist::Communicator& comm) {
      const auto r = static_cast<size_t>(comm.rank());
      Trainer trainer(*runtimes[r], on_rank(comm, options));
      int64_t before = ranks_allocations(runtimes, r);
      (void)trainer.step();
      first_n[r] = ranks_allocations(runtimes, r) - before;
      trainer.set_batch(kRetryBatch);
      (void)trainer.step();
      trainer.set_batch(kFailingBatch);
      before = ranks_allocations(runtimes, r);
      (void)trainer.step();
      steady_n[r] = ranks_allocations(runtimes, r) - before;
    });
  }
  // A fresh job's first step at the retry batch, per rank.
  std::vector<StepOutcome> fresh(static_cast<size_t>(ranks));
  {
    std::vector<std::unique_ptr<nn::Runtime>> runtimes = make_runtimes();
    dist::run_simulated_ranks(ranks, true, [&](dist::Communicator& comm) {
      const auto r = static_cast<size_t>(comm.rank());
      Trainer trainer(*runtimes[r], on_rank(comm, retry_options));
      fresh[r] = outcome(trainer, trainer.step().loss);
    });
  }

  std::vector<std::unique_ptr<nn::Runtime>> runtimes = make_runtimes();  // the job's devices
  int64_t failed = 0, peers_failed = 0, peers_finished = 0;
  for (const bool after_a_step : {false, true}) {
    for (int64_t failing_rank = 0; failing_rank < ranks; ++failing_rank) {
      const auto f = static_cast<size_t>(failing_rank);
      const int64_t n = after_a_step ? steady_n[f] : first_n[f];
      for (int64_t k = 1; k <= n; k += kEveryKth) {
        const std::string where = name + (after_a_step ? ", second step" : ", first step") +
                                  ", rank " + std::to_string(failing_rank) + ", allocation " +
                                  std::to_string(k) + " of " + std::to_string(n);
        std::vector<int> peer_failed(static_cast<size_t>(ranks), 0);
        try {
          dist::run_simulated_ranks(ranks, true, [&](dist::Communicator& comm) {
            const int64_t rank = comm.rank();
            const auto r = static_cast<size_t>(rank);
            nn::Runtime& runtime = *runtimes[r];
            Trainer trainer(runtime, on_rank(comm, options));
            if (after_a_step) {
              trainer.set_batch(kRetryBatch);
              (void)trainer.step();
            }
            if (rank != failing_rank) {
              trainer.set_batch(kFailingBatch);
              const auto category_bytes = [&](memory::MemoryCategory c) {
                return runtime.allocator()
                    .category_stats()
                    .allocated_bytes[static_cast<size_t>(c)]
                    .current;
              };
              const int64_t before =
                  allocated_bytes(runtime) - category_bytes(memory::MemoryCategory::gradient);
              const int64_t states_before = category_bytes(memory::MemoryCategory::optimizer_state);
              const int64_t steps_before = trainer.optimizer().steps();
              try {
                (void)trainer.step();
                return;  // the failure came after this rank's last collective
              } catch (const dist::PeerFailure& e) {
                peer_failed[r] = 1;
                EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(failing_rank)),
                          std::string::npos)
                    << where << ", rank " << rank << ": " << e.what();
              }
              EXPECT_NO_THROW(runtime.allocator().check_invariants()) << where;
              // A peer lost after this rank's optimizer step keeps the states that step made (the
              // optimizer owns them; they go with the trainer, checked below): its shard is
              // updated but not gathered, and only a restart recovers, as in PyTorch.
              const int64_t states_made =
                  trainer.optimizer().steps() > steps_before
                      ? category_bytes(memory::MemoryCategory::optimizer_state) - states_before
                      : 0;
              EXPECT_EQ(allocated_bytes(runtime), before + states_made)
                  << where << ": rank " << rank << " after its peer failed";
              return;
            }
            fail_step_at(runtime, trainer, k, n, where);
            throw std::runtime_error("the job stops: " + where);
          });
          ADD_FAILURE() << where << ": the job did not stop";
        } catch (const std::runtime_error& e) {
          EXPECT_EQ(std::string(e.what()), "the job stops: " + where);
        }
        ++failed;
        for (int64_t r = 0; r < ranks; ++r) {
          if (r == failing_rank) continue;
          (peer_failed[static_cast<size_t>(r)] != 0 ? peers_failed : peers_finished) += 1;
        }
        // The trainers are gone: nothing they allocated may outlive them.
        for (int64_t r = 0; r < ranks; ++r) {
          nn::Runtime& runtime = *runtimes[static_cast<size_t>(r)];
          EXPECT_NO_THROW(runtime.allocator().check_invariants()) << where;
          EXPECT_EQ(allocated_bytes(runtime), 0)
              << where << ": rank " << r << " after its trainer was destroyed";
        }
        // The restart, on the same devices, with the smaller batch.
        std::vector<StepOutcome> retried(static_cast<size_t>(ranks));
        dist::run_simulated_ranks(ranks, true, [&](dist::Communicator& comm) {
          const auto r = static_cast<size_t>(comm.rank());
          Trainer trainer(*runtimes[r], on_rank(comm, retry_options));
          retried[r] = outcome(trainer, trainer.step().loss);
        });
        for (int64_t r = 0; r < ranks; ++r) {
          expect_same(retried[static_cast<size_t>(r)], fresh[static_cast<size_t>(r)],
                      where + ", restarted rank " + std::to_string(r));
        }
        if (testing::Test::HasFailure()) return {failed, 0.0};
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "oom at every allocation: %-26s %4lld failed (%lld ranks, first step %lld + second "
      "step %lld allocations per rank%s; peers: %lld lost the rank, %lld had finished "
      "their step) in %.2f s\n",
      name.c_str(), static_cast<long long>(failed), static_cast<long long>(ranks),
      static_cast<long long>(first_n[0]), static_cast<long long>(steady_n[0]),
      kEveryKth > 1 ? ", only every 7th k under the sanitizers" : "",
      static_cast<long long>(peers_failed), static_cast<long long>(peers_finished), seconds);
  return {failed, seconds};
}

TEST(OomAtEveryAllocation, Gpt2DdpOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.parallel.zero = dist::ZeroStage::ddp;
  EXPECT_GT(fail_every_allocation_on_ranks("gpt2 ddp", o, 2).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaZero1MixedBf16OnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::optimizer_states;
  o.plan.amp.precision = amp::Precision::mixed_bf16;  // the master weights are partitioned too
  EXPECT_GT(fail_every_allocation_on_ranks("llama zero-1 mixed bf16", o, 2).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2Zero2OnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.parallel.zero = dist::ZeroStage::gradients;
  EXPECT_GT(fail_every_allocation_on_ranks("gpt2 zero-2", o, 2).failed, 0);
}

// ZeRO-Offload: each reduced gradient shard goes to the host as it is made, a copy in flight
// while the backward allocates the next unit's gradient (the device's allocations fail in turn).
TEST(OomAtEveryAllocation, Gpt2Zero2OptimizerOffloadedOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::gpt2);
  o.plan.parallel.zero = dist::ZeroStage::gradients;
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  EXPECT_GT(fail_every_allocation_on_ranks("gpt2 zero-2 offloaded", o, 2).failed, 0);
}

TEST(OomAtEveryAllocation, LlamaZero3WithPrefetchOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::parameters;
  o.plan.parallel.prefetch = true;
  EXPECT_GT(fail_every_allocation_on_ranks("llama zero-3 prefetch", o, 2).failed, 0);
}

// ZeRO-Infinity: ZeRO-3 with the parameters and the optimizer on the host. Each gather allocates
// the unit's fetched shard beside it (its copy in flight on the fetch stream, prefetched one
// block ahead), recomputed blocks fetch theirs again, and each reduced gradient shard goes down.
TEST(OomAtEveryAllocation, LlamaZero3ParametersOffloadedWithPrefetchAndCheckpointsOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::parameters;
  o.plan.parallel.prefetch = true;
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload = plan::parse_offload("both");
  o.plan.recompute = recompute::parse_recompute_spec("every:2");
  EXPECT_GT(fail_every_allocation_on_ranks("llama zero-3 params offloaded", o, 2).failed, 0);
}

TEST(OomAtEveryAllocation, Gpt2TensorParallelOnTwoRanks) {
  EXPECT_GT(fail_every_allocation_on_ranks("gpt2 tp 2", tiny(ModelFamily::gpt2), 2,
                                           Group::tensor_parallel)
                .failed,
            0);
}

// ZeRO-Infinity's optimizer states on NVMe, on two ranks: the device's allocations fail in turn
// as everywhere else, the files under a directory of their own.
TEST(OomAtEveryAllocation, LlamaZero3OptimizerStatesOnNvmeOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::parameters;
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  o.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
  const test_build::TempDir dir;
  o.nvme.files.path = dir.path;
  EXPECT_GT(fail_every_allocation_on_ranks("llama zero-3 states on nvme", o, 2).failed, 0);
  EXPECT_EQ(dir.files(), 0) << "files left in " << dir.path;
}

// ZeRO-Infinity with the parameters on NVMe too, prefetched: each gather reads its unit's shard
// into host memory first, and the update reads and writes the parameters beside the states.
TEST(OomAtEveryAllocation, LlamaZero3ParametersAndStatesOnNvmeWithPrefetchOnTwoRanks) {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::parameters;
  o.plan.parallel.prefetch = true;
  o.plan.amp.precision = amp::Precision::fp32;
  o.plan.offload = plan::parse_offload("both");
  o.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
  o.plan.offload.param_device = plan::OffloadDevice::nvme;
  const test_build::TempDir dir;
  o.nvme.files.path = dir.path;
  EXPECT_GT(fail_every_allocation_on_ranks("llama zero-3 everything on nvme", o, 2).failed, 0);
  EXPECT_EQ(dir.files(), 0) << "files left in " << dir.path;
}

using test_build::FileSizeLimit;

// One rank's ZeRO-3 job with its optimizer states on NVMe under \p dir (a communicator of one,
// as `vramlab train --simulate-ranks 1` makes).
template <typename Body>
void on_one_rank(const TrainOptions& options, const std::string& dir, Body body) {
  dist::run_simulated_ranks(1, true, [&](dist::Communicator& comm) {
    TrainOptions o = options;
    o.set_groups(&comm);
    o.nvme.files.path = dir;
    nn::Runtime runtime(memory::parse_device(kDevice));
    body(runtime, o);
  });
}

TrainOptions states_on_nvme() {
  TrainOptions o = tiny(ModelFamily::llama);
  o.plan.parallel.zero = dist::ZeroStage::parameters;
  o.plan.amp.precision = amp::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  o.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
  o.batch = kRetryBatch;
  return o;
}

// The first step makes the files, then the host's staging: an out-of-memory error at each of the
// host's allocations, or a disk too small for the files, leaves no file, no host byte and no
// step, and the step run again trains as a fresh job's first.
TEST(NvmeOptimizerStates, AFirstStepThatFailsLeavesNothingAndARetryTrainsAsFresh) {
  const test_build::TempDir dir;
  StepOutcome fresh;
  int64_t host_n = 0;
  on_one_rank(states_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
    Trainer trainer(runtime, o);
    fresh = outcome(trainer, trainer.step().loss);
    host_n =
        trainer.optimizer_runtime().allocator().stats().allocation[memory::kAggregate].allocated;
  });
  EXPECT_GE(host_n, 3);  // the staged gradients, parameters and states at least
  for (int64_t k = 0; k <= host_n; ++k) {
    const std::string where =
        k == 0 ? std::string("a full disk") : "host allocation " + std::to_string(k);
    on_one_rank(states_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
      Trainer trainer(runtime, o);
      memory::CachingAllocator& host = trainer.optimizer_runtime().allocator();
      try {
        if (k == 0) {
          const FileSizeLimit full(4096);  // every file of the tiny model's units is larger
          (void)trainer.step();
        } else {
          host.inject_out_of_memory(static_cast<uint64_t>(k));
          (void)trainer.step();
        }
        ADD_FAILURE() << where << ": the step did not fail";
      } catch (const storage::StorageError& e) {
        EXPECT_EQ(k, 0) << where << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(dir.path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("the disk is full"), std::string::npos) << e.what();
      } catch (const memory::OutOfMemoryError& e) {
        EXPECT_NE(k, 0) << where << ": " << e.what();
      }
      host.inject_out_of_memory(0);
      EXPECT_EQ(dir.files(), 0) << where << ": files left";
      EXPECT_NO_THROW(host.check_invariants()) << where;
      EXPECT_EQ(host.stats().allocated_bytes[memory::kAggregate].current, 0) << where;
      EXPECT_EQ(trainer.optimizer().steps(), 0) << where;
      expect_same(outcome(trainer, trainer.step().loss), fresh, where);
    });
    if (testing::Test::HasFailure()) return;
  }
}

TrainOptions everything_on_nvme() {
  TrainOptions o = states_on_nvme();
  o.plan.amp.precision = amp::Precision::fp32;  // the update reads the parameters every step
  o.plan.offload = plan::parse_offload("both");
  o.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
  o.plan.offload.param_device = plan::OffloadDevice::nvme;
  return o;
}

// With the parameters on NVMe the files are made and written with the model: a disk too small
// for them stops the trainer before it starts (one StorageError naming the path, no file left);
// then each of the host's allocations of the first step fails in turn (the fetches' shards, the
// update's), leaving no step and only the parameters' files, and the step run again trains as a
// fresh job's first.
TEST(NvmeParameters, AFullDiskStopsTheTrainerAndAFailedFirstStepLeavesNoStep) {
  const test_build::TempDir dir;
  on_one_rank(everything_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
    const FileSizeLimit full(4096);
    try {
      Trainer trainer(runtime, o);
      ADD_FAILURE() << "the trainer wrote its parameters past the file-size limit";
    } catch (const storage::StorageError& e) {
      EXPECT_NE(std::string(e.what()).find(dir.path), std::string::npos) << e.what();
    }
  });
  EXPECT_EQ(dir.files(), 0) << "files left after a full disk";
  StepOutcome fresh;
  int64_t host_n = 0, parameter_files = 0;
  on_one_rank(everything_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
    Trainer trainer(runtime, o);
    parameter_files = dir.files();
    const memory::CachingAllocator& host = trainer.optimizer_runtime().allocator();
    const int64_t before = host.stats().allocation[memory::kAggregate].allocated;
    const double loss = trainer.step().loss;
    host_n = host.stats().allocation[memory::kAggregate].allocated - before;
    fresh = outcome(trainer, loss);
  });
  EXPECT_GT(parameter_files, 0);
  EXPECT_GE(host_n, 6);  // a shard per fetch and update, the staged gradients, the states
  for (int64_t k = 1; k <= host_n; ++k) {
    const std::string where = "host allocation " + std::to_string(k) + " of the first step";
    on_one_rank(everything_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
      Trainer trainer(runtime, o);
      memory::CachingAllocator& host = trainer.optimizer_runtime().allocator();
      const int64_t held = host.stats().allocated_bytes[memory::kAggregate].current;
      host.inject_out_of_memory(static_cast<uint64_t>(k));
      try {
        (void)trainer.step();
        ADD_FAILURE() << where << ": the step did not fail";
      } catch (const memory::OutOfMemoryError&) {
      }
      host.inject_out_of_memory(0);
      EXPECT_EQ(dir.files(), parameter_files) << where << ": more than the parameters' files";
      EXPECT_NO_THROW(host.check_invariants()) << where;
      EXPECT_EQ(host.stats().allocated_bytes[memory::kAggregate].current, held) << where;
      EXPECT_EQ(trainer.optimizer().steps(), 0) << where;
      expect_same(outcome(trainer, trainer.step().loss), fresh, where);
    });
    if (testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(dir.files(), 0);
}

// After the first step the files are the only copy of the states: a write that fails (the disk
// gives out) is one StorageError naming the path, and the next step refuses to go on rather than
// update from states that are half one step's and half the next's.
TEST(NvmeOptimizerStates, AWriteThatFailsLaterStopsTheRunWithAClearError) {
  const test_build::TempDir dir;
  on_one_rank(states_on_nvme(), dir.path, [&](nn::Runtime& runtime, const TrainOptions& o) {
    Trainer trainer(runtime, o);
    (void)trainer.step();
    {
      const FileSizeLimit full(4096);
      try {
        (void)trainer.step();
        ADD_FAILURE() << "the step wrote past the file-size limit";
      } catch (const storage::StorageError& e) {
        EXPECT_NE(std::string(e.what()).find(dir.path), std::string::npos) << e.what();
      }
    }
    try {
      (void)trainer.step();
      ADD_FAILURE() << "the step after a failed write went on";
    } catch (const storage::StorageError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot go on"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(runtime.allocator().check_invariants());
    EXPECT_NO_THROW(trainer.optimizer_runtime().allocator().check_invariants());
  });
  EXPECT_EQ(dir.files(), 0);
}

// Where the files cannot go, the job stops before it starts: a path that is not a directory, one
// this process cannot write (a directory made read-only; root writes anywhere, so not as root),
// and no path at all on a device that makes files.
TEST(NvmeOptimizerStates, APathTheTierCannotUseStopsTheTrainerBeforeItStarts) {
  const test_build::TempDir dir;
  nn::Runtime runtime(memory::parse_device(kDevice));
  const auto refused = [&](const std::string& path, const std::string& says) {
    on_one_rank(states_on_nvme(), path, [&](nn::Runtime& rank_runtime, const TrainOptions& o) {
      try {
        Trainer trainer(rank_runtime, o);
        ADD_FAILURE() << "'" << path << "' was accepted";
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      }
      EXPECT_EQ(rank_runtime.allocator().stats().allocated_bytes[memory::kAggregate].current, 0);
    });
  };
  refused(dir.path + "/missing", dir.path + "/missing");
  refused("", "--nvme-path");
  if (::geteuid() != 0) {
    const std::string locked = dir.path + "/locked";
    std::filesystem::create_directory(locked);
    std::filesystem::permissions(
        locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    refused(locked, locked);
  }
}

}  // namespace
}  // namespace vramlab::train
