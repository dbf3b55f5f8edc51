// DDP and ZeRO-1/2/3 on simulated ranks (common/dist/data_parallel.h): every stage trains the same
// model as DDP to the bit (with the optimizer offloaded too), every rank holds the model-state
// bytes `vramlab estimate` predicts to the byte, and every step sends the ZeRO paper's volumes
// (2Ψ, 3Ψ) as the ring counts them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/dist/data_parallel.h"
#include "common/dist/shard_layout.h"
#include "common/dist/simulated_communicator.h"
#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/nn/runtime.h"
#include "common/plan/plan.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/stream/clock.h"
#include "common/train/trainer.h"
#include "tests/temp_dir.h"

namespace vramlab {
namespace {

using dist::ZeroStage;

// A model whose units are not multiples of 2, 3 or 4 elements (vocab 97, odd norms), so every
// rank count pads.
ModelConfig odd_gpt2() {
  return gpt2_config("odd-gpt2", 2, 36, 3, 97, 16);
}
ModelConfig odd_llama() {
  return llama_config("odd-llama", 2, 48, 4, 2, 80, 101, 16);
}

train::TrainOptions options_for(const ModelConfig& model, ZeroStage zero,
                                amp::Precision precision) {
  train::TrainOptions o;
  o.model = model;
  o.batch = 2;
  o.seq = 12;
  o.plan.amp.precision = precision;
  o.plan.optimizer.learning_rate = 3e-3f;
  o.plan.parallel.zero = zero;
  return o;
}

struct RankRun {
  std::vector<double> losses;                  // per step
  train::ModelStateMeasured state;             // after the last step
  std::vector<dist::CommunicationStats> comm;  // per step
  int64_t gathered_peak = 0;
  std::optional<train::ModelStateMeasured> host;  // under --offload optimizer
  std::vector<unsigned char> parameters;          // the rank's store after the last step (not meta)
  nn::TransferStats copies;                       // between its device and the host
  // --offload-optimizer-device nvme: the files' bytes, the host's staging, what went to and
  // from the drive, and the drive's busy time on the device's clock
  int64_t nvme_file_bytes = 0, nvme_staging_bytes = 0;
  int64_t pinned_blocks = 0;  // the host's pinned model-state blocks (--offload-pin-memory on)
  optim::SwapTraffic nvme_traffic;
  double nvme_busy_seconds = 0.0;
  // --offload-param-device nvme: the parameters' files, what went to and from them, and the most
  // host memory a swapped-in unit took
  int64_t parameter_file_bytes = 0, parameter_read_bytes = 0, parameter_write_bytes = 0;
  int64_t host_parameter_peak = 0;
};

// Runs `steps` steps on N simulated ranks of `device`; returns every rank's run.
std::vector<RankRun> run_ranks(const train::TrainOptions& base, int64_t N, int steps,
                               const std::string& device = "sim:1GiB", bool prefetch = false) {
  std::vector<RankRun> runs(static_cast<size_t>(N));
  const memory::Device d = memory::parse_device(device);
  dist::run_simulated_ranks(N, d.kind != memory::DeviceKind::meta, [&](dist::Communicator& comm) {
    if (d.kind == memory::DeviceKind::meta) comm.set_move_data(false);
    nn::Runtime runtime(d);
    train::TrainOptions o = base;
    o.set_groups(&comm);
    o.plan.parallel.prefetch = prefetch;
    train::Trainer trainer(runtime, o);
    RankRun& run = runs[static_cast<size_t>(comm.rank())];
    for (int s = 0; s < steps; ++s) {
      const train::StepResult r = trainer.step();
      run.losses.push_back(r.loss);
      run.comm.push_back(r.communication);
    }
    run.state = trainer.model_state();
    run.host = trainer.host_model_state();
    run.pinned_blocks = trainer.host_pinned_model_state(true).total();
    run.gathered_peak = trainer.data_parallel()->gathered_peak_bytes();
    run.copies = runtime.transfer_stats();  // the training's, before the test reads the store
    if (const optim::StateSwap* swap = trainer.optimizer().state_swap()) {
      run.nvme_file_bytes = swap->file_bytes();
      run.nvme_staging_bytes = swap->staging_bytes();
      run.nvme_traffic = swap->traffic();
      run.nvme_busy_seconds = runtime.clock().busy_seconds(trainer.optimizer().nvme_lane());
    }
    nn::ParameterStore& store = trainer.model().parameters();
    run.parameter_file_bytes = store.nvme_file_bytes();
    run.parameter_read_bytes = store.nvme_read_bytes();
    run.parameter_write_bytes = store.nvme_write_bytes();
    run.host_parameter_peak = trainer.optimizer_runtime()
                                  .allocator()
                                  .category_stats()
                                  .requested(memory::MemoryCategory::parameter)
                                  .peak;
    // A meta store has no bytes, only a size.
    if (d.kind != memory::DeviceKind::meta) run.parameters = store.read_values();
  });
  return runs;
}

// What `vramlab estimate` says of \p o's plan on N data-parallel ranks.
estimate::Estimate estimate_for(const train::TrainOptions& o, int64_t N) {
  estimate::EstimateInputs in;
  in.model = o.model;
  in.micro_batch = o.batch;
  in.seq = o.seq;
  in.plan = o.plan;
  in.plan.parallel.data_parallel = N;
  return estimate::estimate_memory(in);
}

class EveryStage : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(EveryStage, LossesEqualDdpBitwiseAndStatesEqualTheEstimate) {
  const auto [stage, N] = GetParam();
  for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
    SCOPED_TRACE(model.name + ", zero " + std::to_string(stage) + ", N " + std::to_string(N));
    const train::TrainOptions zero =
        options_for(model, static_cast<ZeroStage>(stage), amp::Precision::fp32);
    const train::TrainOptions ddp = options_for(model, ZeroStage::ddp, amp::Precision::fp32);
    const std::vector<RankRun> z = run_ranks(zero, N, 3);
    const std::vector<RankRun> d = run_ranks(ddp, N, 3);
    const estimate::Estimate e = estimate_for(zero, N);
    for (int64_t r = 0; r < N; ++r) {
      const RankRun& run = z[static_cast<size_t>(r)];
      // The simulated communicator sums in rank order, whatever the call: the same bits.
      for (size_t s = 0; s < run.losses.size(); ++s)
        EXPECT_EQ(run.losses[s], d[0].losses[s]) << "rank " << r << " step " << s + 1;
      EXPECT_EQ(run.state.parameters, e.parameters.bytes) << "rank " << r;
      EXPECT_EQ(run.state.gradients, e.gradients.bytes) << "rank " << r;
      EXPECT_EQ(run.state.optimizer_states, e.optimizer_states.bytes) << "rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(StagesAndRanks, EveryStage,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values<int64_t>(1, 2, 3, 4)));

// `--offload optimizer` under ZeRO-1 and ZeRO-2: each rank updates its partition on the host
// (ZeRO-2 streams its shard of each unit's gradients as the unit's reduce-scatter ends) and
// trains bitwise as DDP; the device holds no optimizer state, the host what the estimator says,
// and each step moves the partition's gradients down and its parameters up: 1/N of the whole.
TEST(DataParallel, OffloadedOptimizerOnEveryPartitioningStageTrainsAsDdp) {
  for (const ZeroStage stage : {ZeroStage::optimizer_states, ZeroStage::gradients}) {
    for (const int64_t N : {2, 3}) {
      const ModelConfig model = stage == ZeroStage::gradients ? odd_llama() : odd_gpt2();
      SCOPED_TRACE(model.name + ", zero " + std::to_string(static_cast<int>(stage)) + ", N " +
                   std::to_string(N));
      train::TrainOptions offloaded = options_for(model, stage, amp::Precision::mixed_bf16);
      offloaded.plan.offload.optimizer = true;
      const train::TrainOptions ddp =
          options_for(model, ZeroStage::ddp, amp::Precision::mixed_bf16);
      constexpr int kSteps = 3;
      const std::vector<RankRun> o = run_ranks(offloaded, N, kSteps);
      const std::vector<RankRun> d = run_ranks(ddp, N, kSteps);
      const std::vector<RankRun> s =
          run_ranks(options_for(model, stage, amp::Precision::mixed_bf16), N, kSteps);
      const estimate::Estimate e = estimate_for(offloaded, N);
      for (int64_t r = 0; r < N; ++r) {
        const RankRun& run = o[static_cast<size_t>(r)];
        EXPECT_EQ(run.losses, d[0].losses) << "rank " << r;
        // The padded store's parameters, compared where DDP's unpadded store has them.
        const dist::ShardLayout layout(model.parameters(), N);
        for (const dist::ShardUnit& u : layout.units()) {
          const dist::ShardLayout one(model.parameters(), 1);
          const dist::ShardUnit& whole = one.units()[static_cast<size_t>(&u - &layout.units()[0])];
          const size_t bytes = static_cast<size_t>(u.numel) * 2;  // bf16 working copy
          EXPECT_EQ(
              std::memcmp(run.parameters.data() + static_cast<size_t>(u.offset) * 2,
                          d[0].parameters.data() + static_cast<size_t>(whole.offset) * 2, bytes),
              0)
              << "rank " << r << ", unit " << u.name;
        }
        EXPECT_EQ(run.state.optimizer_states, 0) << "rank " << r;
        EXPECT_EQ(run.state.gradients, e.gradients.bytes) << "rank " << r;
        ASSERT_TRUE(run.host.has_value()) << "rank " << r;
        EXPECT_EQ(run.host->optimizer_states, e.host_optimizer_state_bytes) << "rank " << r;
        EXPECT_EQ(run.host->gradients, e.host_gradient_bytes) << "rank " << r;
        EXPECT_EQ(run.host->parameters, e.host_parameter_bytes) << "rank " << r;
        // Per step the partition's bf16 gradients down and its bf16 parameters up; the first
        // step also copies the partition's parameters down once (the host's copy starts there).
        // Beyond what the same stage copies without offload (the batch, the loss, and whatever
        // the simulated collectives stage through the host).
        const RankRun& own = s[static_cast<size_t>(r)];
        const int64_t partition = e.host_parameter_bytes;
        EXPECT_EQ(run.copies.device_to_host_bytes - own.copies.device_to_host_bytes,
                  (kSteps + 1) * partition)
            << "rank " << r;
        EXPECT_EQ(run.copies.host_to_device_bytes - own.copies.host_to_device_bytes,
                  kSteps * partition)
            << "rank " << r;
      }
    }
  }
}

// ZeRO-2 with the optimizer offloaded keeps no gradient shard on the device: each reduced shard
// goes to the host as it is made, and a later micro-batch's adds to it there. Loss scaling and
// clipping then read the host's shards. Bitwise ZeRO-2's on the device, with both and two
// micro-batches (DDP sums the micro-batches before the ranks, ZeRO-2 after: other roundings).
TEST(DataParallel, OffloadedZero2AccumulatesScalesAndClipsOnTheHostAsOnTheDevice) {
  for (const int64_t N : {1, 2, 3}) {
    SCOPED_TRACE("N " + std::to_string(N));
    train::TrainOptions offloaded =
        options_for(odd_gpt2(), ZeroStage::gradients, amp::Precision::mixed_fp16);
    offloaded.plan.batch.grad_accum = 2;
    offloaded.plan.optimizer.max_grad_norm = 0.25f;
    offloaded.plan.offload.optimizer = true;
    train::TrainOptions own = offloaded;
    own.plan.offload.optimizer = false;
    const std::vector<RankRun> o = run_ranks(offloaded, N, 3);
    const std::vector<RankRun> d = run_ranks(own, N, 3);
    for (int64_t r = 0; r < N; ++r) {
      const auto i = static_cast<size_t>(r);
      EXPECT_EQ(o[i].losses, d[i].losses) << "rank " << r;
      EXPECT_EQ(o[i].parameters, d[i].parameters) << "rank " << r;
      EXPECT_EQ(o[i].state.gradients, 0) << "rank " << r;
      EXPECT_GT(d[i].state.gradients, 0) << "rank " << r;
    }
  }
}

// ZeRO-3 with the optimizer offloaded (`--offload optimizer`) and with the parameters too
// (`--offload both`, ZeRO-Infinity): bitwise ZeRO-3 on the device, with and without prefetch,
// accumulation and clipping. The device keeps no model state but, optimizer only, its parameter
// shard; the host holds what the estimator says. Per micro-batch each reduced gradient shard goes
// down; optimizer only, the updated shard goes up once a step (and down once, at the first);
// offloaded, nothing goes up after the update but each gather fetches its unit's shard: twice a
// micro-batch (the forward and the backward gather every unit once).
TEST(DataParallel, Zero3WithTheOptimizerAndTheParametersOffloadedTrainsAsOnTheDevice) {
  constexpr int kSteps = 3;
  for (const int64_t N : {1, 2, 3}) {
    for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
      for (const bool prefetch : {false, true}) {
        for (const int64_t accum : {1, 2}) {
          SCOPED_TRACE(model.name + ", N " + std::to_string(N) + (prefetch ? ", prefetch" : "") +
                       ", accum " + std::to_string(accum));
          train::TrainOptions own =
              options_for(model, ZeroStage::parameters, amp::Precision::mixed_bf16);
          own.plan.batch.grad_accum = accum;
          own.plan.optimizer.max_grad_norm = accum == 2 ? 0.05f : 0.0f;
          const std::vector<RankRun> d = run_ranks(own, N, kSteps, "sim:1GiB", prefetch);
          for (const char* offload : {"optimizer", "both"}) {
            SCOPED_TRACE(offload);
            train::TrainOptions o = own;
            o.plan.offload = plan::parse_offload(offload);
            const bool params = o.plan.offload.parameters;
            const std::vector<RankRun> runs = run_ranks(o, N, kSteps, "sim:1GiB", prefetch);
            const estimate::Estimate e = estimate_for(o, N);
            for (int64_t r = 0; r < N; ++r) {
              const RankRun& run = runs[static_cast<size_t>(r)];
              const RankRun& mine = d[static_cast<size_t>(r)];
              EXPECT_EQ(run.losses, mine.losses) << "rank " << r;
              EXPECT_EQ(run.parameters, mine.parameters) << "rank " << r;
              EXPECT_EQ(run.state.optimizer_states, 0) << "rank " << r;
              EXPECT_EQ(run.state.gradients, 0) << "rank " << r;
              EXPECT_EQ(run.state.parameters, params ? 0 : mine.state.parameters) << "rank " << r;
              EXPECT_EQ(run.state.parameters, e.parameters.bytes) << "rank " << r;
              EXPECT_EQ(run.state.gradients, e.gradients.bytes) << "rank " << r;
              ASSERT_TRUE(run.host.has_value()) << "rank " << r;
              EXPECT_EQ(run.host->optimizer_states, e.host_optimizer_state_bytes) << "rank " << r;
              EXPECT_EQ(run.host->gradients, e.host_gradient_bytes) << "rank " << r;
              EXPECT_EQ(run.host->parameters, e.host_parameter_bytes) << "rank " << r;
              EXPECT_EQ(run.pinned_blocks, e.host_pinned_bytes) << "rank " << r;
              const int64_t partition = e.host_parameter_bytes;  // the rank's bf16 shard
              EXPECT_EQ(partition, mine.state.parameters) << "rank " << r;
              EXPECT_EQ(run.copies.device_to_host_bytes - mine.copies.device_to_host_bytes,
                        (kSteps * accum + (params ? 0 : 1)) * partition)
                  << "rank " << r;
              EXPECT_EQ(run.copies.host_to_device_bytes - mine.copies.host_to_device_bytes,
                        (params ? 2 * accum : 1) * kSteps * partition)
                  << "rank " << r;
            }
          }
        }
      }
    }
  }
}

// ZeRO-Infinity's optimizer states on NVMe (--offload-optimizer-device nvme): in real files under
// a fresh directory, each step reading every unit's states (but the first's) and writing them
// back, the run trains to the bit as with the states in host memory, on 1-3 ranks, both
// families, fp32 and mixed precision (the master goes too), the parameters offloaded or not,
// and with the delayed update. The host holds two units' states, the drive a file per state and
// unit, each what the estimator says (files rounded to 4096 bytes: these odd units are not
// multiples of it); nothing is left in the directory after the run.
TEST(DataParallel, Zero3WithTheOptimizerStatesOnNvmeTrainsAsWithThemInHostMemory) {
  constexpr int kSteps = 3;
  for (const int64_t N : {1, 2, 3}) {
    for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
      for (const amp::Precision precision : {amp::Precision::fp32, amp::Precision::mixed_bf16}) {
        for (const char* offload : {"optimizer", "both"}) {
          for (const int64_t dpu : {0, 2}) {
            if (dpu > 0 && std::string(offload) == "both") continue;  // refused: one copy
            SCOPED_TRACE(model.name + ", N " + std::to_string(N) + ", " +
                         std::string(amp::precision_name(precision)) + ", " + offload + ", dpu " +
                         std::to_string(dpu));
            train::TrainOptions host = options_for(model, ZeroStage::parameters, precision);
            host.plan.offload = plan::parse_offload(offload);
            host.plan.offload.delay_update_from = dpu;
            host.plan.batch.grad_accum = 2;
            const std::vector<RankRun> h = run_ranks(host, N, kSteps);
            const test_build::TempDir dir;
            train::TrainOptions o = host;
            o.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
            o.nvme.files.path = dir.path;
            o.nvme.files.block_size = 8192;  // several requests for the larger files
            const std::vector<RankRun> runs = run_ranks(o, N, kSteps);
            EXPECT_EQ(dir.files(), 0) << "files left in " << dir.path;
            const estimate::Estimate e = estimate_for(o, N);
            const estimate::Estimate in_memory = estimate_for(host, N);
            for (int64_t r = 0; r < N; ++r) {
              const RankRun& run = runs[static_cast<size_t>(r)];
              const RankRun& mine = h[static_cast<size_t>(r)];
              EXPECT_EQ(run.losses, mine.losses) << "rank " << r;
              EXPECT_EQ(run.parameters, mine.parameters) << "rank " << r;
              ASSERT_TRUE(run.host.has_value()) << "rank " << r;
              EXPECT_EQ(run.host->optimizer_states, e.host_optimizer_state_bytes) << "rank " << r;
              EXPECT_EQ(run.host->optimizer_states, run.nvme_staging_bytes) << "rank " << r;
              EXPECT_EQ(run.host->gradients, mine.host->gradients) << "rank " << r;
              EXPECT_EQ(run.host->parameters, mine.host->parameters) << "rank " << r;
              EXPECT_EQ(run.nvme_file_bytes, e.nvme_optimizer_state_bytes) << "rank " << r;
              EXPECT_EQ(run.pinned_blocks, e.host_pinned_bytes) << "rank " << r;
              // Every state once: the files hold the rank's partition, padded per file.
              const int64_t partition = in_memory.host_optimizer_state_bytes;
              EXPECT_GE(run.nvme_file_bytes, partition) << "rank " << r;
              EXPECT_EQ(run.nvme_traffic.write_bytes, kSteps * partition) << "rank " << r;
              EXPECT_EQ(run.nvme_traffic.read_bytes, (kSteps - 1) * partition) << "rank " << r;
              EXPECT_NEAR(run.nvme_busy_seconds,
                          (kSteps - 1) * partition / o.nvme.read_bytes_per_s +
                              kSteps * partition / o.nvme.write_bytes_per_s,
                          1e-12)
                  << "rank " << r;
            }
          }
        }
      }
    }
  }
}

// ZeRO-Infinity with everything on NVMe (--offload-param-device nvme beside the states): each
// rank's parameter shard lives in a file per unit, written unit by unit at initialisation, read
// for every fetch (twice a micro-batch) and, without an fp32 master, for the update, which writes
// it back. The run trains to the bit as with the shard in host memory, on 1-3 ranks, both
// families, fp32 and mixed precision, with and without prefetch; the host never holds more than
// one unit's shard, the files are what the estimator says, and nothing is left after the run.
TEST(DataParallel, Zero3WithTheParametersOnNvmeTrainsAsWithThemInHostMemory) {
  constexpr int kSteps = 3;
  constexpr int64_t kAccum = 2;
  for (const int64_t N : {1, 2, 3}) {
    for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
      for (const amp::Precision precision : {amp::Precision::fp32, amp::Precision::mixed_bf16}) {
        for (const bool prefetch : {false, true}) {
          SCOPED_TRACE(model.name + ", N " + std::to_string(N) + ", " +
                       std::string(amp::precision_name(precision)) +
                       (prefetch ? ", prefetch" : ""));
          const test_build::TempDir dir;
          train::TrainOptions host = options_for(model, ZeroStage::parameters, precision);
          host.plan.offload = plan::parse_offload("both");
          host.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
          host.plan.batch.grad_accum = kAccum;
          host.nvme.files.path = dir.path;
          host.nvme.files.block_size = 8192;
          const std::vector<RankRun> h = run_ranks(host, N, kSteps, "sim:1GiB", prefetch);
          train::TrainOptions o = host;
          o.plan.offload.param_device = plan::OffloadDevice::nvme;
          const std::vector<RankRun> runs = run_ranks(o, N, kSteps, "sim:1GiB", prefetch);
          EXPECT_EQ(dir.files(), 0) << "files left in " << dir.path;
          const estimate::Estimate e = estimate_for(o, N);
          train::TrainOptions all_in_memory = host;
          all_in_memory.plan.offload.optimizer_device = plan::OffloadDevice::cpu;
          const estimate::Estimate in_memory = estimate_for(all_in_memory, N);
          for (int64_t r = 0; r < N; ++r) {
            const RankRun& run = runs[static_cast<size_t>(r)];
            const RankRun& mine = h[static_cast<size_t>(r)];
            EXPECT_EQ(run.losses, mine.losses) << "rank " << r;
            EXPECT_EQ(run.parameters, mine.parameters) << "rank " << r;
            EXPECT_EQ(run.state.parameters, 0) << "rank " << r;
            EXPECT_EQ(run.parameter_file_bytes, e.nvme_parameter_bytes) << "rank " << r;
            EXPECT_EQ(run.host_parameter_peak, e.host_parameter_bytes) << "rank " << r;
            EXPECT_LT(run.host_parameter_peak, mine.host_parameter_peak) << "rank " << r;
            EXPECT_EQ(run.nvme_file_bytes, e.nvme_optimizer_state_bytes) << "rank " << r;
            // The rank's shard: written at initialisation and by each update; read twice a
            // micro-batch, and by the update where it has no master (or makes it: step 1).
            const int64_t shard = in_memory.host_parameter_bytes;
            EXPECT_GE(run.parameter_file_bytes, shard) << "rank " << r;
            const int64_t update_reads = precision == amp::Precision::fp32 ? kSteps : 1;
            EXPECT_EQ(run.parameter_write_bytes, (1 + kSteps) * shard) << "rank " << r;
            EXPECT_EQ(run.parameter_read_bytes, (2 * kAccum * kSteps + update_reads) * shard)
                << "rank " << r;
            // One drive: the states' and the parameters' transfers on one timeline, fetches
            // included (the initialisation's writes are not on the clock).
            const int64_t states = in_memory.host_optimizer_state_bytes;
            EXPECT_NEAR(run.nvme_busy_seconds,
                        ((kSteps - 1) * states + (2 * kAccum * kSteps + update_reads) * shard) /
                                o.nvme.read_bytes_per_s +
                            kSteps * (states + shard) / o.nvme.write_bytes_per_s,
                        1e-12)
                << "rank " << r;
          }
        }
      }
    }
  }
}

// The delayed parameter update (--offload-dpu) on every data-parallel path of the offloaded
// optimizer: DDP's and ZeRO-1's gradients go to the host after the backward, ZeRO-2's shards as
// they are reduced. Each rank delays its own partition's update; the ranks' losses are DDP's to
// the bit (as without the delay, EveryStage), and from the step after the first delayed one they
// differ from a run updated at once (its forward is one update behind).
TEST(DataParallel, TheDelayedUpdateTrainsTheSameOnEveryStageItOffloads) {
  constexpr int kSteps = 4;
  for (const int64_t N : {1, 2, 3}) {
    for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
      SCOPED_TRACE(model.name + ", N " + std::to_string(N));
      std::vector<std::vector<RankRun>> runs;
      for (const ZeroStage stage :
           {ZeroStage::ddp, ZeroStage::optimizer_states, ZeroStage::gradients}) {
        train::TrainOptions o = options_for(model, stage, amp::Precision::fp32);
        o.plan.offload.optimizer = true;
        o.plan.offload.delay_update_from = 2;
        runs.push_back(run_ranks(o, N, kSteps));
      }
      train::TrainOptions at_once = options_for(model, ZeroStage::ddp, amp::Precision::fp32);
      at_once.plan.offload.optimizer = true;
      const std::vector<RankRun> plain = run_ranks(at_once, N, kSteps);
      for (size_t stage = 0; stage < runs.size(); ++stage)
        for (int64_t r = 0; r < N; ++r) {
          const std::vector<double>& losses = runs[stage][static_cast<size_t>(r)].losses;
          EXPECT_EQ(losses, runs[0][0].losses) << "stage " << stage << ", rank " << r;
          for (int s = 0; s < kSteps; ++s)
            EXPECT_EQ(losses[static_cast<size_t>(s)] == plain[0].losses[static_cast<size_t>(s)],
                      s < 2)
                << "stage " << stage << ", rank " << r << ", step " << s + 1;
        }
    }
  }
}

// ZeRO-Offload's headline (Ren et al., ATC 2021: a 13B model on one 32 GB V100): with the
// optimizer's states, its fp32 master and the gradients on the host, one device holds the fp16
// parameters (2 bytes each: 24.2 GiB for llama2-13b) and a step's activations. On 32 GiB it
// fits; on 24 GB the parameters alone do not.
TEST(DataParallel, ZeroOffloadTrainsLlama2_13bOnOne32GiBDeviceButNot24GBUnlessTheParametersGoToo) {
  train::TrainOptions o = options_for(model_config_by_name("llama2-13b"), ZeroStage::gradients,
                                      amp::Precision::mixed_fp16);
  o.batch = 1;
  o.seq = 1024;
  o.plan.recompute = recompute::parse_recompute_spec("full");
  o.plan.offload.optimizer = true;
  const std::vector<RankRun> runs = run_ranks(o, 1, 2, "meta:32GiB");
  EXPECT_EQ(runs[0].state.optimizer_states, 0);
  EXPECT_EQ(runs[0].state.gradients, 0);
  EXPECT_EQ(runs[0].state.parameters, 2 * o.model.parameter_count());
  ASSERT_TRUE(runs[0].host.has_value());
  EXPECT_EQ(runs[0].host->optimizer_states, 12 * o.model.parameter_count());  // master, m, v
  EXPECT_THROW((void)run_ranks(o, 1, 1, "meta:rtx4090-24g"), memory::OutOfMemoryError);
  // Without the offload the states alone (14 bytes a parameter) exceed 32 GiB many times over.
  train::TrainOptions own = o;
  own.plan.offload.optimizer = false;
  EXPECT_THROW((void)run_ranks(own, 1, 1, "meta:32GiB"), memory::OutOfMemoryError);
  // ZeRO-Infinity: ZeRO-3 with the parameters on the host too. The device keeps no model state
  // and holds a unit while it is gathered: 24 GB is enough, the host holds 2 + 2 + 12 bytes a
  // parameter (its shard of parameters, staged gradients, master and moments).
  train::TrainOptions infinity = o;
  infinity.plan.parallel.zero = ZeroStage::parameters;
  infinity.plan.offload = plan::parse_offload("both");
  const std::vector<RankRun> fits = run_ranks(infinity, 1, 2, "meta:rtx4090-24g");
  EXPECT_EQ(fits[0].state.parameters + fits[0].state.gradients + fits[0].state.optimizer_states, 0);
  ASSERT_TRUE(fits[0].host.has_value());
  const dist::ShardLayout layout(o.model.parameters(), 1);
  EXPECT_EQ(fits[0].host->parameters, 2 * layout.padded_numel());
  EXPECT_EQ(fits[0].host->gradients, 2 * layout.padded_numel());
  EXPECT_EQ(fits[0].host->optimizer_states, 12 * layout.padded_numel());
}

// Parameter offload on the clock (meta: every time exact). Without prefetch a unit's shard is
// fetched once the layers before it are done, so the compute stream waits for every fetch: at
// least all of their time is exposed. With prefetch a block's fetch runs beside the block
// before it, and on a link that moves a block faster than the device computes one, those hide:
// what stays exposed is less than the fetches' time, by at least the blocks fetched while another
// computed.
TEST(DataParallel, PrefetchHidesParameterFetchesBehindTheLayerBefore) {
  train::TrainOptions o = options_for(llama_config("llama-8l", 8, 1024, 16, 4, 2816, 32000, 1024),
                                      ZeroStage::parameters, amp::Precision::mixed_bf16);
  o.batch = 2;
  o.seq = 1024;
  o.plan.offload = plan::parse_offload("both");
  memory::Device device = memory::parse_device("meta:a100-40g");
  device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s = 400e9;
  struct Measured {
    double exposed = 0.0, fetches = 0.0, compute = 0.0;
  };
  const auto run = [&](bool prefetch) {
    Measured m;
    dist::run_simulated_ranks(1, false, [&](dist::Communicator& comm) {
      comm.set_move_data(false);
      nn::Runtime runtime(device);
      train::TrainOptions mine = o;
      mine.set_groups(&comm);
      mine.plan.parallel.prefetch = prefetch;
      train::Trainer trainer(runtime, mine);
      (void)trainer.step();
      const nn::TransferStats before = runtime.transfer_stats();
      const double busy = runtime.clock().busy_seconds(stream::Clock::compute_stream());
      const train::StepResult r = trainer.step();
      m.exposed = r.exposed_copy_seconds;
      m.fetches = runtime.transfer_stats().host_to_device_seconds - before.host_to_device_seconds;
      m.compute = runtime.clock().busy_seconds(stream::Clock::compute_stream()) - busy;
    });
    return m;
  };
  const Measured plain = run(false), ahead = run(true);
  std::printf(
      "parameter fetches %.4f s beside %.4f s of compute: exposed %.4f s, prefetched %.4f s\n",
      plain.fetches, plain.compute, plain.exposed, ahead.exposed);
  EXPECT_EQ(ahead.fetches, plain.fetches);
  EXPECT_EQ(ahead.compute, plain.compute);
  EXPECT_GE(plain.exposed, plain.fetches * (1 - 1e-9));
  // Of each pass's 8 blocks, 7 are fetched during the block before and hide whole (the first
  // comes after the embedding or the head, which prefetch does not look past).
  const dist::ShardLayout layout(o.model.parameters(), 1);
  const dist::ShardUnit& block = layout.units()[static_cast<size_t>(layout.find_unit(3))];
  const double block_fetch = static_cast<double>(2 * block.padded_numel) / 400e9;  // bf16
  EXPECT_NEAR(plain.exposed - ahead.exposed, 2 * 7 * block_fetch, 1e-9);
}

// The drive on the clock (Note [Optimizer states on NVMe]), on meta, where the host's update of a
// unit takes its operands' bytes over the host's bandwidth (16 a parameter for mixed-bf16 AdamW:
// master 4, gradient 2, m and v 4 each, the bf16 copy 2). Each step after the first: the drive
// reads unit 0, then unit p + 1 before it writes unit p, every transfer its bytes (12 a
// parameter) over the drive's bandwidth, one after another; the host updates unit p once its read
// is done and the unit before is updated, and the write of unit p starts when both the drive and
// that update are done (DeepSpeed's pipeline_read and pipeline_write). A drive fast enough hides
// every transfer but the first read: the step then takes what it takes with the states in host
// memory, plus that read.
TEST(DataParallel, NvmeReadsRunAheadOfTheHostsUpdateAndWritesFollowIt) {
  train::TrainOptions o = options_for(llama_config("llama-8l", 8, 1024, 16, 4, 2816, 32000, 1024),
                                      ZeroStage::parameters, amp::Precision::mixed_bf16);
  o.batch = 2;
  o.seq = 1024;
  o.plan.offload = plan::parse_offload("optimizer");
  constexpr double kHost = 204.8e9;
  o.host_memory_bytes_per_s = kHost;
  const dist::ShardLayout layout(o.model.parameters(), 1);
  const auto run = [&](bool nvme, double drive) {
    std::vector<stream::Span> lane;  // the drive's spans of the third step
    double step_seconds = 0.0;
    dist::run_simulated_ranks(1, false, [&](dist::Communicator& comm) {
      comm.set_move_data(false);
      nn::Runtime runtime(memory::parse_device("meta:a100-40g"));
      train::TrainOptions mine = o;
      mine.set_groups(&comm);
      if (nvme) mine.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
      mine.nvme.read_bytes_per_s = mine.nvme.write_bytes_per_s = drive;
      train::Trainer trainer(runtime, mine);
      (void)trainer.step();
      (void)trainer.step();
      runtime.clock().keep_spans(true);
      step_seconds = trainer.step().clock_seconds;
      for (const stream::Span& span : runtime.clock().spans())
        if (nvme && span.stream == trainer.optimizer().nvme_lane()) lane.push_back(span);
    });
    return std::pair{step_seconds, lane};
  };
  const double in_memory = run(false, 1.0).first;
  const size_t n = layout.units().size();
  for (const double drive : {1e9, 20e9, 1e15}) {
    SCOPED_TRACE("drive " + std::to_string(drive / 1e9) + " GB/s");
    // Named, not a structured binding: the lambdas below capture them (clang 14 cannot).
    const std::pair<double, std::vector<stream::Span>> measured = run(true, drive);
    const double seconds = measured.first;
    const std::vector<stream::Span>& lane = measured.second;
    ASSERT_EQ(lane.size(), 2 * n);
    const auto numel = [&](size_t p) { return static_cast<double>(layout.units()[p].numel); };
    size_t at = 0;
    double host = lane[0].start;  // the update's start: the drive idled before it (long forward)
    std::vector<double> read_end(n);
    // Unit p's read is enqueued once the host has updated unit p - 2 (units 0 and 1 at the
    // update's start), before it waits for unit p - 1's, and starts once the drive is free.
    const auto expect_read = [&](size_t p, double enqueued) {
      const stream::Span& s = lane[at++];
      EXPECT_EQ(s.name, "nvme read " + layout.units()[p].name);
      if (at > 1) {
        EXPECT_NEAR(s.start, std::max(lane[at - 2].end, enqueued), 1e-12 * s.end) << p;
      }
      EXPECT_NEAR(s.end - s.start, 12 * numel(p) / drive, 1e-12 * s.end);
      read_end[p] = s.end;
    };
    expect_read(0, host);
    for (size_t p = 0; p < n; ++p) {
      if (p + 1 < n) expect_read(p + 1, host);
      host = std::max(host, read_end[p]) + 16 * numel(p) / kHost;
      const stream::Span& w = lane[at++];
      EXPECT_EQ(w.name, "nvme write " + layout.units()[p].name);
      EXPECT_NEAR(w.start, std::max(lane[at - 2].end, host), 1e-12 * w.end) << "unit " << p;
      EXPECT_NEAR(w.end - w.start, 12 * numel(p) / drive, 1e-12 * w.end);
    }
    if (drive == 1e15)
      EXPECT_NEAR(seconds, in_memory + 12 * numel(0) / drive, 1e-12 * seconds);
    else
      EXPECT_GT(seconds, in_memory + 12 * numel(0) / drive);
  }
}

// Bytes a rank sends per step, counted from the layout alone (no communicator): DDP all-reduces
// the unpadded Ψ, ZeRO-1/2 reduce-scatter and all-gather each padded unit once, ZeRO-3 gathers
// each unit twice and reduce-scatters it once.
int64_t expected_sent(ZeroStage zero, const ModelConfig& model, int64_t N, int64_t rank,
                      int64_t e) {
  using dist::Collective;
  if (zero == ZeroStage::ddp)
    return dist::ring_bytes_sent(Collective::all_reduce, model.parameter_count(), e, rank, N);
  const dist::ShardLayout layout(model.parameters(), N);
  int64_t sent = 0;
  for (const dist::ShardUnit& u : layout.units()) {
    const int64_t rs =
        dist::ring_bytes_sent(Collective::reduce_scatter, u.padded_numel, e, rank, N);
    const int64_t ag = dist::ring_bytes_sent(Collective::all_gather, u.padded_numel, e, rank, N);
    sent += rs + (zero == ZeroStage::parameters ? 2 * ag : ag);
  }
  return sent;
}

TEST(DataParallel, BytesSentPerStepAreTheZeroPapersVolumes) {
  for (const ModelConfig& model : {odd_gpt2(), odd_llama()}) {
    for (const int64_t N : {2, 3, 4}) {
      for (const int stage : {0, 1, 2, 3}) {
        SCOPED_TRACE(model.name + ", zero " + std::to_string(stage) + ", N " + std::to_string(N));
        const auto zero = static_cast<ZeroStage>(stage);
        const std::vector<RankRun> runs =
            run_ranks(options_for(model, zero, amp::Precision::fp32), N, 2);
        for (int64_t r = 0; r < N; ++r) {
          const dist::CommunicationStats& c = runs[static_cast<size_t>(r)].comm.back();
          const int64_t sent = c.of(dist::Traffic::gradients).bytes_sent +
                               c.of(dist::Traffic::parameters).bytes_sent;
          EXPECT_EQ(sent, expected_sent(zero, model, N, r, 4)) << "rank " << r;
        }
        // The paper's ratio: ZeRO-3 moves 1.5x DDP's 2Ψ, ZeRO-1/2 the same 2Ψ (padding aside).
        const dist::ShardLayout layout(model.parameters(), N);
        const double padded = static_cast<double>(layout.padded_numel());
        const double volume = stage == 3 ? 3.0 : 2.0;
        int64_t total = 0;
        for (const RankRun& run : runs)
          total += run.comm.back().of(dist::Traffic::gradients).bytes_sent +
                   run.comm.back().of(dist::Traffic::parameters).bytes_sent;
        const double psi = stage == 0 ? static_cast<double>(model.parameter_count()) : padded;
        EXPECT_DOUBLE_EQ(static_cast<double>(total),
                         volume * psi * 4.0 * static_cast<double>(N - 1));
      }
    }
  }
}

TEST(DataParallel, MixedPrecisionZero3MatchesDdpAndTheEstimate) {
  for (const amp::Precision p :
       {amp::Precision::mixed_bf16, amp::Precision::mixed_fp16, amp::Precision::bf16}) {
    SCOPED_TRACE(std::string(amp::precision_name(p)));
    const train::TrainOptions z3 = options_for(odd_llama(), ZeroStage::parameters, p);
    const train::TrainOptions ddp = options_for(odd_llama(), ZeroStage::ddp, p);
    const std::vector<RankRun> z = run_ranks(z3, 4, 3);
    const std::vector<RankRun> d = run_ranks(ddp, 4, 3);
    const estimate::Estimate e = estimate_for(z3, 4);
    for (int64_t r = 0; r < 4; ++r) {
      EXPECT_EQ(z[static_cast<size_t>(r)].losses, d[0].losses) << "rank " << r;
      EXPECT_EQ(z[static_cast<size_t>(r)].state.parameters, e.parameters.bytes);
      EXPECT_EQ(z[static_cast<size_t>(r)].state.gradients, e.gradients.bytes);
      EXPECT_EQ(z[static_cast<size_t>(r)].state.optimizer_states, e.optimizer_states.bytes);
    }
  }
}

TEST(DataParallel, DdpOnTwoRanksTrainsWhatOneProcessDoesWithTwiceTheBatch) {
  const train::TrainOptions ddp = options_for(odd_gpt2(), ZeroStage::ddp, amp::Precision::fp32);
  const std::vector<RankRun> runs = run_ranks(ddp, 2, 4);
  train::TrainOptions single = ddp;
  single.batch = 2 * ddp.batch;
  nn::Runtime runtime(memory::parse_device("sim:1GiB"));
  train::Trainer trainer(runtime, single);
  for (size_t s = 0; s < runs[0].losses.size(); ++s) {
    const double one = trainer.step().loss;
    // Same rows, same weights; only the order of the gradient sums differs (two halves added vs
    // one GEMM over all rows), and the reported loss is an f32 all-reduce: a few f32 ulps.
    const double tolerance = 2e-6 * std::abs(one);
    EXPECT_NEAR(runs[0].losses[s], one, tolerance)
        << "step " << s + 1 << ": |diff| " << std::abs(runs[0].losses[s] - one);
  }
}

TEST(DataParallel, PrefetchHoldsTwoBlocksAtOnce) {
  const train::TrainOptions z3 =
      options_for(odd_llama(), ZeroStage::parameters, amp::Precision::fp32);
  const int64_t N = 3;
  const dist::ShardLayout layout(odd_llama().parameters(), N);
  int64_t largest_block = 0, embedding = 0, head = 0;
  for (const dist::ShardUnit& u : layout.units()) {
    if (u.layer >= 0) largest_block = std::max(largest_block, u.padded_numel * 4);
    if (u.name == "embedding") embedding = u.padded_numel * 4;
    if (u.name == "head") head = u.padded_numel * 4;
  }
  const std::vector<RankRun> plain = run_ranks(z3, N, 1);
  const std::vector<RankRun> prefetch = run_ranks(z3, N, 1, "sim:1GiB", true);
  // Untied: one unit at a time without prefetch (the embedding or the head is the largest);
  // with it, two blocks of the forward or backward at once.
  EXPECT_EQ(plain[0].gathered_peak, std::max({largest_block, embedding, head}));
  EXPECT_EQ(prefetch[0].gathered_peak, std::max({2 * largest_block, embedding, head}));
}

TEST(DataParallel, RefusesWhatCannotBeSharded) {
  train::TrainOptions o = options_for(odd_gpt2(), ZeroStage::gradients, amp::Precision::fp32);
  EXPECT_THROW(train::validate(o), UsageError);  // no data-parallel group
  o.plan.parallel.zero = ZeroStage::ddp;
  o.plan.parallel.prefetch = true;
  EXPECT_THROW(train::validate(o), UsageError);
  try {
    dist::run_simulated_ranks(2, true, [&](dist::Communicator& comm) {
      train::TrainOptions bad =
          options_for(odd_gpt2(), ZeroStage::optimizer_states, amp::Precision::fp32);
      bad.plan.optimizer.name = estimate::Optimizer::adam_mini;
      bad.set_groups(&comm);
      train::validate(bad);
    });
    FAIL() << "adam-mini under ZeRO-1 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("adam-mini"), std::string::npos) << e.what();
  }
}

// ZeRO-1 partitions the fp32 master weights as ZeRO-2 and ZeRO-3 do (EveryStage runs fp32 only,
// which has no master). Under mixed precision plain SGD keeps nothing but the master, so each
// rank's optimizer-state bytes are its master share: at every stage from 1 the same share, which
// covers 4Ψ over the N ranks with at most one padded element per unit per rank, and is what
// `vramlab estimate` predicts; DDP keeps the whole 4Ψ.
TEST(DataParallel, EveryStageFromOnePartitionsTheFp32MasterWeightsAlike) {
  const ModelConfig model = odd_gpt2();
  const int64_t psi = model.parameter_count();
  const int64_t units = model.layers + 3;  // at most: embedding, each block, final norm, head
  for (const int64_t N : {2, 3}) {
    std::vector<int64_t> share_by_stage;
    for (const int stage : {0, 1, 2, 3}) {
      SCOPED_TRACE("zero " + std::to_string(stage) + ", N " + std::to_string(N));
      train::TrainOptions o =
          options_for(model, static_cast<ZeroStage>(stage), amp::Precision::mixed_bf16);
      o.plan.optimizer.name = estimate::Optimizer::sgd;
      const std::vector<RankRun> runs = run_ranks(o, N, 1);
      const estimate::Estimate e = estimate_for(o, N);
      for (int64_t r = 0; r < N; ++r) {
        const int64_t master = runs[static_cast<size_t>(r)].state.optimizer_states;
        EXPECT_EQ(master, e.master_weight_bytes) << "rank " << r;
        if (stage == 0) {
          EXPECT_EQ(master, 4 * psi) << "rank " << r << ": DDP keeps the whole master";
        } else {
          EXPECT_GE(master * N, 4 * psi) << "rank " << r << ": the shares do not cover Ψ";
          EXPECT_LE(master * N, 4 * (psi + units * N)) << "rank " << r << ": not partitioned";
        }
      }
      share_by_stage.push_back(runs[0].state.optimizer_states);
    }
    EXPECT_EQ(share_by_stage[1], share_by_stage[2]) << "N " << N << ": ZeRO-1's share is ZeRO-2's";
    EXPECT_EQ(share_by_stage[1], share_by_stage[3]) << "N " << N << ": ZeRO-1's share is ZeRO-3's";
  }
}

TEST(DataParallel, AnOutOfMemoryErrorMidStepLeavesOnlyTheShards) {
  // Room for the states but not the step's activations at batch 512.
  train::TrainOptions o = options_for(odd_llama(), ZeroStage::parameters, amp::Precision::fp32);
  o.batch = 512;
  dist::run_simulated_ranks(2, true, [&](dist::Communicator& comm) {
    nn::Runtime runtime(memory::parse_device("sim:8MiB"));
    train::TrainOptions mine = o;
    mine.set_groups(&comm);
    train::Trainer trainer(runtime, mine);
    const train::ModelStateMeasured before = trainer.model_state();
    EXPECT_THROW(trainer.step(), memory::OutOfMemoryError);
    EXPECT_GT(trainer.data_parallel()->gathered_peak_bytes(), 0)
        << "the error came before any unit was gathered: the test proves nothing";
    const train::ModelStateMeasured after = trainer.model_state();
    EXPECT_EQ(after.parameters, before.parameters) << "a gathered unit outlived the error";
    EXPECT_EQ(after.gradients, 0) << "a unit gradient outlived the error";
    EXPECT_NO_THROW(runtime.allocator().check_invariants());
  });
}

// The step's cleanup after an error (DataParallel::release_all) looked up ZeRO-2/3's unit gradient
// slots at every stage: under DDP and ZeRO-1 it threw std::out_of_range, which replaced the
// out-of-memory error. Every stage, the error on both ranks at once (no peer is lost) and at the
// step's first allocation and a later one: each rank sees PyTorch's error.
TEST(DataParallel, AnOutOfMemoryErrorReachesTheCallerAtEveryStage) {
  for (const int stage : {0, 1, 2, 3}) {
    for (const uint64_t k : {1u, 20u}) {
      SCOPED_TRACE("zero " + std::to_string(stage) + ", allocation " + std::to_string(k));
      const train::TrainOptions o =
          options_for(odd_gpt2(), static_cast<ZeroStage>(stage), amp::Precision::fp32);
      dist::run_simulated_ranks(2, true, [&](dist::Communicator& comm) {
        nn::Runtime runtime(memory::parse_device("sim:1GiB"));
        train::TrainOptions mine = o;
        mine.set_groups(&comm);
        train::Trainer trainer(runtime, mine);
        runtime.allocator().inject_out_of_memory(k);
        try {
          (void)trainer.step();
          ADD_FAILURE() << "the step did not fail";
        } catch (const memory::OutOfMemoryError& e) {
          EXPECT_NE(std::string(e.what()).find("out of memory. Tried to allocate"),
                    std::string::npos)
              << e.what();
        }
        EXPECT_NO_THROW(runtime.allocator().check_invariants());
      });
    }
  }
}

TEST(DataParallel, Llama7bOnEightMetaRanksHoldsTheEstimatedBytes) {
  for (const int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(stage));
    train::TrainOptions o = options_for(model_config_by_name("llama2-7b"),
                                        static_cast<ZeroStage>(stage), amp::Precision::mixed_bf16);
    o.batch = 1;
    o.seq = 256;
    const std::vector<RankRun> runs = run_ranks(o, 8, 1, "meta");
    const estimate::Estimate e = estimate_for(o, 8);
    for (const RankRun& run : runs) {
      EXPECT_EQ(run.state.parameters, e.parameters.bytes);
      EXPECT_EQ(run.state.gradients, e.gradients.bytes);
      EXPECT_EQ(run.state.optimizer_states, e.optimizer_states.bytes);
    }
  }
}

}  // namespace
}  // namespace vramlab
