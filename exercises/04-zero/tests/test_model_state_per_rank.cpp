// Tests of exercise 04.4 (one rank's model-state bytes with ZeRO and tensor parallelism). They
// run against your code (`vramlab check 04.4`) and against the reference (ctest:
// test_ex_04_4_ref).
// Expectations: without tensor parallelism, the estimator (estimate::estimate_memory with
// zero_stage and data_parallel: the runtime's padded layout, to the byte) for GPT-2 124M,
// Llama 2 7B and 70B and random models, every stage, every precision, N in {1, 2, 3, 4, 7, 8, 64,
// 1000}; with t in {2, 3, 4, 8}, dist::ShardLayout over what one TP rank holds (Megatron's
// split: QKV, fc/gate/up by output rows, proj/o/down by input columns; norms, row-parallel
// biases, embeddings and the LM head replicated); and what every simulated rank's allocator holds
// after one training step of the runtime's DDP and ZeRO-1/2/3 on the meta device. Every value is
// exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dist/shard_layout.h"
#include "common/dist/simulated_communicator.h"
#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/04-zero/api/model_state_per_rank.h"

namespace vramlab::lesson04 {
namespace {

using dist::ZeroStage;
using workbook::Comparison;
using workbook::Unit;

constexpr int64_t kWorldSizes[] = {1, 2, 3, 4, 7, 8, 64, 1000};
constexpr ZeroStage kStages[] = {ZeroStage::ddp, ZeroStage::optimizer_states, ZeroStage::gradients,
                                 ZeroStage::parameters};

bool ends_with(const std::string& name, std::string_view suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Megatron's split (Shoeybi et al. 2019, §3): column-parallel weights and biases, row-parallel
// weights. Row-parallel biases are added once, after the all-reduce: replicated.
bool split_by_megatron(const std::string& name) {
  for (const std::string_view suffix :
       {".attn.qkv.weight", ".attn.qkv.bias", ".attn.q.weight", ".attn.k.weight", ".attn.v.weight",
        ".mlp.fc.weight", ".mlp.fc.bias", ".mlp.gate.weight", ".mlp.up.weight", ".attn.proj.weight",
        ".attn.o.weight", ".mlp.proj.weight", ".mlp.down.weight"})
    if (ends_with(name, suffix)) return true;
  return false;
}

std::vector<StateTensor> state_tensors(const ModelConfig& model) {
  const std::vector<ParameterSpec> specs = model.parameters();
  const dist::ShardLayout layout(specs, 1);
  std::vector<StateTensor> tensors;
  for (size_t i = 0; i < specs.size(); ++i)
    tensors.push_back({specs[i].numel(), layout.unit_of_tensor(static_cast<int64_t>(i)),
                       split_by_megatron(specs[i].name)});
  return tensors;
}

// What one TP rank holds, as parameter specs dist::ShardLayout can cut into units.
std::vector<ParameterSpec> tensor_parallel_rank_specs(const ModelConfig& model, int64_t t) {
  std::vector<ParameterSpec> specs = model.parameters();
  for (ParameterSpec& spec : specs)
    if (split_by_megatron(spec.name)) spec.shape = {spec.numel() / t};
  return specs;
}

std::string case_name(const ModelConfig& model, amp::Precision precision, ZeroStage stage,
                      int64_t n, int64_t t) {
  return model.name + " (" + std::to_string(model.parameter_count()) + " params) " +
         std::string(amp::precision_name(precision)) + " " +
         std::string(dist::zero_stage_name(stage)) + " N=" + std::to_string(n) +
         " t=" + std::to_string(t);
}

struct BytesChecks {
  Comparison parameters;
  Comparison gradients;
  Comparison optimizer_states;

  explicit BytesChecks(const std::string& against)
      : parameters("parameter bytes per rank (" + against + ")", Unit::kBytes),
        gradients("gradient bytes per rank (" + against + ")", Unit::kBytes),
        optimizer_states(
            "optimizer-state bytes per rank, master weights included (" + against + ")",
            Unit::kBytes) {
    parameters.per_unit("parameter");
    gradients.per_unit("parameter");
    optimizer_states.per_unit("parameter");
  }
  void add(const std::string& where, const RankModelStateBytes& expected,
           const RankModelStateBytes& got, double psi) {
    parameters.add(where, static_cast<double>(expected.parameters),
                   static_cast<double>(got.parameters), psi);
    gradients.add(where, static_cast<double>(expected.gradients),
                  static_cast<double>(got.gradients), psi);
    optimizer_states.add(where, static_cast<double>(expected.optimizer_states),
                         static_cast<double>(got.optimizer_states), psi);
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(parameters);
    VRAMLAB_EXPECT_PASSES(gradients);
    VRAMLAB_EXPECT_PASSES(optimizer_states);
  }
};

RankModelStateBytes estimator_bytes(const ModelConfig& model, amp::Precision precision,
                                    ZeroStage stage, int64_t n) {
  estimate::EstimateInputs in;
  in.model = model;
  in.plan.amp.precision = precision;
  in.plan.optimizer.name = estimate::Optimizer::adamw;
  in.plan.parallel.zero = stage;
  in.plan.parallel.data_parallel = n;
  const estimate::Estimate e = estimate::estimate_memory(in);
  return {e.parameters.bytes, e.gradients.bytes, e.optimizer_states.bytes};
}

std::vector<ModelConfig> random_models(std::mt19937_64& rng, int count) {
  std::uniform_int_distribution<int64_t> layers(1, 5), head_dim(1, 24), heads(1, 6), vocab(3, 900),
      seq(1, 300), ffn(1, 300);
  std::vector<ModelConfig> models;
  for (int i = 0; i < count; ++i) {
    // Heads, kv heads and F multiples of 8 so that t in {2, 4, 8} splits them.
    const int64_t h = 8 * heads(rng), hd = head_dim(rng);
    if (i % 2 == 0)
      models.push_back(gpt2_config("random-gpt2-" + std::to_string(i), layers(rng), h * hd, h,
                                   vocab(rng), seq(rng)));
    else
      models.push_back(llama_config("random-llama-" + std::to_string(i), layers(rng), h * hd, h, 8,
                                    8 * ffn(rng), vocab(rng), seq(rng)));
  }
  return models;
}

//! [test]
TEST(ModelStatePerRank, WithoutTensorParallelismEqualsTheEstimatorFrom124MTo70B) {
  std::mt19937_64 rng(441);
  std::vector<ModelConfig> models = {model_config_by_name("gpt2-124m"),
                                     model_config_by_name("llama2-7b"),
                                     model_config_by_name("llama2-70b")};
  for (ModelConfig& m : random_models(rng, 12)) models.push_back(std::move(m));
  BytesChecks checks("estimate_memory with zero_stage and data_parallel");
  for (const ModelConfig& model : models) {
    ParallelModelStates states;
    states.tensors = state_tensors(model);
    for (const amp::Precision precision : amp::kAllPrecisions)
      for (const ZeroStage stage : kStages)
        for (const int64_t n : kWorldSizes) {
          states.precision = precision;
          states.stage = stage;
          states.data_parallel = n;
          checks.add(
              case_name(model, precision, stage, n, 1), estimator_bytes(model, precision, stage, n),
              model_state_bytes_per_rank(states), static_cast<double>(model.parameter_count()));
        }
  }
  checks.expect_passes();
}
//! [test]

TEST(ModelStatePerRank, EqualsWhatEveryRanksAllocatorHoldsAfterOneStepOnSimulatedRanks) {
  // One step of the runtime's DDP and ZeRO-1/2/3 (common/dist/data_parallel.h) per case, every
  // rank on the meta device: the requested bytes of its parameters, gradients and optimizer
  // states (train::Trainer::model_state), gradients kept after the step.
  BytesChecks checks("train::Trainer::model_state after one step");
  for (const std::string_view name : {"gpt2-mini", "llama-tiny", "gpt2-124m", "llama2-7b"}) {
    const ModelConfig model = model_config_by_name(name);
    ParallelModelStates states;
    states.tensors = state_tensors(model);
    for (const int64_t n : {2, 3})
      for (const amp::Precision precision : amp::kAllPrecisions)
        for (const ZeroStage stage : kStages) {
          std::vector<RankModelStateBytes> measured(static_cast<size_t>(n));
          dist::run_simulated_ranks(n, false, [&](dist::Communicator& comm) {
            comm.set_move_data(false);
            nn::Runtime runtime(memory::parse_device("meta"));
            train::TrainOptions options;
            options.model = model;
            options.batch = 1;
            options.seq = 16;
            options.plan.amp.precision = precision;
            options.grads_to_none = false;
            options.set_groups(&comm);
            options.plan.parallel.zero = stage;
            train::Trainer trainer(runtime, options);
            (void)trainer.step();
            const train::ModelStateMeasured m = trainer.model_state();
            measured[static_cast<size_t>(comm.rank())] = {m.parameters, m.gradients,
                                                          m.optimizer_states};
          });
          states.precision = precision;
          states.stage = stage;
          states.data_parallel = n;
          const RankModelStateBytes predicted = model_state_bytes_per_rank(states);
          for (int64_t r = 0; r < n; ++r)
            checks.add(case_name(model, precision, stage, n, 1) + " rank " + std::to_string(r),
                       measured[static_cast<size_t>(r)], predicted,
                       static_cast<double>(model.parameter_count()));
        }
  }
  checks.expect_passes();
}

TEST(ModelStatePerRank, WithTensorParallelismEqualsTheShardLayoutOfOneTensorParallelRank) {
  std::mt19937_64 rng(442);
  std::vector<std::pair<ModelConfig, std::vector<int64_t>>> cases = {
      {model_config_by_name("gpt2-124m"), {2, 3, 4}},
      {model_config_by_name("llama2-7b"), {2, 4, 8}},
      {model_config_by_name("llama2-70b"), {2, 4, 8}}};
  for (ModelConfig& m : random_models(rng, 8)) cases.push_back({std::move(m), {2, 4, 8}});
  BytesChecks checks("dist::ShardLayout over one tensor-parallel rank's tensors");
  for (const auto& [model, tensor_parallel] : cases) {
    ParallelModelStates states;
    states.tensors = state_tensors(model);
    for (const int64_t t : tensor_parallel) {
      const std::vector<ParameterSpec> rank_specs = tensor_parallel_rank_specs(model, t);
      for (const int64_t n : kWorldSizes) {
        const dist::ShardLayout layout(rank_specs, n);
        for (const amp::Precision precision : amp::kAllPrecisions)
          for (const ZeroStage stage : kStages) {
            // Bytes per element: parameter, gradient, optimizer states (master included).
            const int64_t p = precision == amp::Precision::fp32 ? 4 : 2, g = p;
            const int64_t o = precision == amp::Precision::fp32   ? 8
                              : precision == amp::Precision::bf16 ? 4
                                                                  : 12;
            // Stage 0 keeps the unpadded store; from stage 1 on the store is padded per unit.
            const int64_t store = stage == ZeroStage::ddp ? layout.numel() : layout.padded_numel();
            const int64_t shard = layout.shard_numel();
            const RankModelStateBytes expected{
                p * (stage == ZeroStage::parameters ? shard : store),
                g * (stage >= ZeroStage::gradients ? shard : store),
                o * (stage >= ZeroStage::optimizer_states ? shard : store)};
            states.precision = precision;
            states.stage = stage;
            states.data_parallel = n;
            states.tensor_parallel = t;
            checks.add(case_name(model, precision, stage, n, t), expected,
                       model_state_bytes_per_rank(states),
                       static_cast<double>(model.parameter_count()));
          }
      }
    }
  }
  checks.expect_passes();
}

TEST(ModelStatePerRank, TensorsOf2To40ElementsAndOddUnitsAreExact) {
  // One 2⁴⁰ + 4-element split tensor and a replicated 7-element one in unit 0, a 5-element one
  // in unit 2 and nothing in unit 1; double holds every byte count exactly (below 2⁵³).
  const int64_t huge = (int64_t{1} << 40) + 4;
  BytesChecks checks("a hand count");
  for (const int64_t n : {1, 3, 1000})
    for (const ZeroStage stage : kStages) {
      ParallelModelStates states;
      states.tensors = {{huge, 0, true}, {7, 0, false}, {5, 2, false}};
      states.precision = amp::Precision::mixed_bf16;
      states.stage = stage;
      states.data_parallel = n;
      states.tensor_parallel = 4;
      const auto ceil = [n](int64_t x) { return x / n + (x % n != 0 ? 1 : 0); };
      const int64_t unit0 = huge / 4 + 7;
      const int64_t whole = unit0 + 5, shard = ceil(unit0) + ceil(5), padded = shard * n;
      const int64_t store = stage == ZeroStage::ddp ? whole : padded;
      const RankModelStateBytes expected{
          2 * (stage == ZeroStage::parameters ? shard : store),
          2 * (stage >= ZeroStage::gradients ? shard : store),
          12 * (stage >= ZeroStage::optimizer_states ? shard : store)};
      checks.add("2^40 + 16 elements, " + std::string(dist::zero_stage_name(stage)) +
                     ", N=" + std::to_string(n) + ", t=4",
                 expected, model_state_bytes_per_rank(states), static_cast<double>(huge + 12));
    }
  checks.expect_passes();
}

template <typename F>
void expect_usage_error_naming(const std::string& call, const std::string& value, F f) {
  try {
    f();
    ADD_FAILURE() << call << " accepted " << value;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos)
        << call << ": the message should name " << value << ": " << e.what();
  }
}

TEST(ModelStatePerRank, RejectsBadInputNamingTheValue) {
  const auto with = [](std::vector<StateTensor> tensors, int64_t n, int64_t t) {
    ParallelModelStates states;
    states.tensors = std::move(tensors);
    states.stage = ZeroStage::parameters;
    states.data_parallel = n;
    states.tensor_parallel = t;
    return states;
  };
  expect_usage_error_naming("N = 0", "0", [&] {
    (void)model_state_bytes_per_rank(with({{8, 0, true}}, 0, 1));
  });
  expect_usage_error_naming("t = -4", "-4", [&] {
    (void)model_state_bytes_per_rank(with({{8, 0, true}}, 2, -4));
  });
  expect_usage_error_naming("a tensor of -6 elements", "-6", [&] {
    (void)model_state_bytes_per_rank(with({{-6, 0, false}}, 2, 1));
  });
  expect_usage_error_naming("unit 5 of 2 tensors", "5", [&] {
    (void)model_state_bytes_per_rank(with({{8, 0, false}, {8, 5, false}}, 2, 1));
  });
  expect_usage_error_naming("a split tensor of 10 elements over t = 4", "10", [&] {
    (void)model_state_bytes_per_rank(with({{10, 0, true}}, 2, 4));
  });
  // 2⁶² elements of 12 optimizer bytes: any message will do, but not a wrapped count.
  expect_usage_error_naming("bytes past 2^63", "", [&] {
    (void)model_state_bytes_per_rank(with({{int64_t{1} << 62, 0, false}}, 1, 1));
  });
}

}  // namespace
}  // namespace vramlab::lesson04
