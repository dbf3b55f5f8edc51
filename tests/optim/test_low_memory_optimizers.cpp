// The low-memory optimizers in the runtime (lesson 09): the state layout they allocate from, its
// totals against the estimator's own per-tensor count, the bytes a run really keeps against
// `vramlab estimate` (exactly, for every optimizer, precision and model family, up to 70B on meta),
// that each one trains, and what they refuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/estimate/estimator.h"
#include "common/estimate/optimizer_state_counts.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/optim/low_memory_optimizers.h"
#include "common/optim/optimizer_factory.h"
#include "common/optim/state_layout.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::optim {
namespace {

using estimate::Optimizer;
using estimate::Precision;

constexpr Optimizer kAll[] = {Optimizer::sgd,        Optimizer::sgd_momentum, Optimizer::adamw,
                              Optimizer::adamw_8bit, Optimizer::lion,         Optimizer::adam_mini,
                              Optimizer::adafactor};

// A GPT-2 with odd sizes (vocab 97, 3C biases of 2304 elements and up, some tensors under 4096
// elements, some over) and a Llama with grouped-query attention.
std::vector<ModelConfig> models() {
  ModelConfig gpt2 = gpt2_config("gpt2-odd", 2, 96, 4, 997, 24);
  ModelConfig llama = llama_config("llama-gqa", 2, 128, 8, 2, 344, 1001, 32);
  return {gpt2, llama};
}

train::TrainOptions train_options(const ModelConfig& model, Optimizer optimizer,
                                  Precision precision) {
  train::TrainOptions o;
  o.model = model;
  o.batch = 2;
  o.seq = 8;
  o.plan.optimizer.name = optimizer;
  o.plan.amp.precision = precision;
  o.plan.optimizer.learning_rate = 1e-3f;
  return o;
}

int64_t estimated_state_bytes(const train::TrainOptions& o) {
  estimate::EstimateInputs in;
  in.model = o.model;
  in.plan.amp.precision = o.plan.amp.precision;
  in.plan.optimizer.name = o.plan.optimizer.name;
  in.plan.optimizer.eight_bit.block_size = o.plan.optimizer.eight_bit.block_size;
  in.plan.optimizer.eight_bit.min_8bit_size = o.plan.optimizer.eight_bit.min_8bit_size;
  in.plan.optimizer.eight_bit.fp32_embeddings = o.plan.optimizer.eight_bit.fp32_embeddings;
  return estimate::estimate_memory(in).optimizer_states.bytes;
}

std::string describe(const train::TrainOptions& o) {
  return o.model.name + " " + std::string(estimate::precision_name(o.plan.amp.precision)) + " " +
         std::string(estimate::optimizer_name(o.plan.optimizer.name)) +
         " B=" + std::to_string(o.plan.optimizer.eight_bit.block_size) +
         " min=" + std::to_string(o.plan.optimizer.eight_bit.min_8bit_size) +
         (o.plan.optimizer.eight_bit.fp32_embeddings ? " fp32-embeddings" : "");
}

TEST(OptimizerStateLayout, RunsCoverEveryTensorInOrder) {
  for (const ModelConfig& model : models()) {
    const auto layout = optim::optimizer_state_layout(model);
    const auto specs = model.parameters();
    ASSERT_EQ(layout.size(), specs.size());
    int64_t offset = 0;
    for (size_t i = 0; i < layout.size(); ++i) {
      const auto& t = layout[i];
      EXPECT_EQ(t.name, specs[i].name);
      EXPECT_EQ(t.offset, offset) << t.name;
      EXPECT_EQ(t.numel, specs[i].numel()) << t.name;
      int64_t covered = 0;
      for (const auto& run : t.adam_mini_runs) {
        EXPECT_EQ(run.offset, covered) << t.name << ": runs must tile the tensor in order";
        EXPECT_GE(run.block_size, 1) << t.name;
        EXPECT_GE(run.count, 1) << t.name;
        covered += run.block_size * run.count;
      }
      EXPECT_EQ(covered, t.numel) << t.name;
      EXPECT_EQ(t.rows * t.cols, t.numel) << t.name;
      EXPECT_EQ(t.adafactor_factored, specs[i].shape.size() == 2) << t.name;
      offset += t.numel;
    }
    EXPECT_EQ(offset, model.parameter_count());
  }
}

TEST(OptimizerStateLayout, AdamMiniSplitsQueriesAndKeysByHeadUnderGroupedQueryAttention) {
  const ModelConfig llama = models()[1];  // 8 query heads, 2 key/value heads, head_dim 16
  const int64_t hd = llama.head_dim(), C = llama.hidden;
  for (const auto& t : optim::optimizer_state_layout(llama)) {
    if (t.name.ends_with(".attn.q.weight")) {
      ASSERT_EQ(t.adam_mini_runs.size(), 1u);
      EXPECT_EQ(t.adam_mini_runs[0].count, 8);
      EXPECT_EQ(t.adam_mini_runs[0].block_size, hd * C);
    } else if (t.name.ends_with(".attn.k.weight")) {
      EXPECT_EQ(t.adam_mini_runs[0].count, 2) << "K is split by key/value head, not query head";
    } else if (t.name.ends_with(".attn.v.weight")) {
      EXPECT_EQ(t.adam_mini_runs[0].count, 2 * hd) << "V is split by output neuron";
    }
  }
}

TEST(OptimizerStateLayout, EightBitKeepsSmallTensorsAndOptionallyEmbeddingsInFp32) {
  const ModelConfig gpt2 = models()[0];
  plan::EightBitOptions options;
  options.block_size = 100;
  for (const auto& t : optim::optimizer_state_layout(gpt2, options)) {
    EXPECT_EQ(t.eight_bit_quantized, t.numel >= 4096) << t.name;
    EXPECT_EQ(t.absmax_blocks, t.eight_bit_quantized ? (t.numel + 99) / 100 : 0) << t.name;
  }
  options.fp32_embeddings = true;
  for (const auto& t : optim::optimizer_state_layout(gpt2, options)) {
    if (t.name == "wte" || t.name == "wpe") {
      EXPECT_FALSE(t.eight_bit_quantized) << t.name;
    }
  }
  options.min_8bit_size = 0;
  options.fp32_embeddings = false;
  for (const auto& t : optim::optimizer_state_layout(gpt2, options))
    EXPECT_TRUE(t.eight_bit_quantized) << t.name;
  options.block_size = 0;
  EXPECT_THROW((void)optim::optimizer_state_layout(gpt2, options), UsageError);
}

// The runtime's layout and the estimator's count are written apart (common/optim/state_layout.cpp
// and common/estimate/optimizer_state_counts.cpp); every total must agree for every built-in model
// (up to 70B) and for random shapes: odd widths, grouped-query attention, tensors either side of
// the 8-bit minimum size, blocks of 1 element to more than a tensor.
TEST(OptimizerStateLayout, TotalsEqualTheEstimatorsCountForBuiltInAndRandomModels) {
  std::vector<ModelConfig> all;
  for (const std::string_view name : model_config_names())
    all.push_back(model_config_by_name(name));
  std::mt19937_64 rng(4093);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 40; ++i) {
    const int64_t kv_heads = pick(1, 3), heads = kv_heads * pick(1, 4), head_dim = pick(1, 9);
    const int64_t hidden = heads * head_dim, vocab = pick(2, 3001), seq = pick(1, 97);
    all.push_back(i % 2 == 0 ? gpt2_config("gpt2-random-" + std::to_string(i), pick(1, 3), hidden,
                                           heads, vocab, seq)
                             : llama_config("llama-random-" + std::to_string(i), pick(1, 3), hidden,
                                            heads, kv_heads, pick(1, 700), vocab, seq));
  }
  for (const ModelConfig& model : all) {
    const std::vector<int64_t> numels = [&model] {
      std::vector<int64_t> out;
      for (const ParameterSpec& p : model.parameters()) out.push_back(p.numel());
      return out;
    }();
    for (int trial = 0; trial < 4; ++trial) {
      plan::EightBitOptions eight_bit;
      eight_bit.block_size = trial == 0 ? 256 : trial == 1 ? 1 : pick(2, 70000);
      // The minimum at a tensor's exact size: that tensor is quantized, one element fewer is not.
      eight_bit.min_8bit_size = trial == 0 ? 4096 : numels[pick(0, int64_t(numels.size()) - 1)];
      eight_bit.fp32_embeddings = trial % 2 == 1;
      const StateTotals runtime = state_totals(optimizer_state_layout(model, eight_bit));
      const estimate::OptimizerStateCounts estimated =
          estimate::optimizer_state_counts(model, eight_bit);
      const std::string where = model.name + " B=" + std::to_string(eight_bit.block_size) +
                                " min=" + std::to_string(eight_bit.min_8bit_size) +
                                (eight_bit.fp32_embeddings ? " fp32-embeddings" : "");
      EXPECT_EQ(runtime.adam_mini_v, estimated.adam_mini_v) << where;
      EXPECT_EQ(runtime.adafactor, estimated.adafactor) << where;
      EXPECT_EQ(runtime.eight_bit_quantized, estimated.eight_bit_quantized) << where;
      EXPECT_EQ(runtime.eight_bit_absmax, estimated.eight_bit_absmax) << where;
      EXPECT_EQ(runtime.eight_bit_fp32, estimated.eight_bit_fp32) << where;
      EXPECT_EQ(estimated.eight_bit_quantized + estimated.eight_bit_fp32, model.parameter_count())
          << where;
    }
  }
}

// The optimizer's own count, the allocator's optimizer_state category and the estimator agree:
// the first two up to the allocator's rounding of each state tensor, the first and the third
// exactly.
TEST(LowMemoryOptimizers, StateBytesEqualTheEstimatorForEveryOptimizerAndPrecision) {
  for (const ModelConfig& model : models()) {
    for (const Precision precision : {Precision::fp32, Precision::bf16, Precision::mixed_bf16}) {
      for (const Optimizer optimizer : kAll) {
        train::TrainOptions o = train_options(model, optimizer, precision);
        if (optimizer == Optimizer::adamw_8bit) o.plan.optimizer.eight_bit.block_size = 100;
        const std::string where = describe(o);
        nn::Runtime runtime(memory::parse_device("cpu"));
        train::Trainer trainer(runtime, o);
        EXPECT_EQ(trainer.optimizer().state_bytes(), 0) << where << ": states are lazy";
        (void)trainer.step();
        const int64_t measured = trainer.optimizer().state_bytes();
        EXPECT_EQ(measured, estimated_state_bytes(o)) << where;
        const int64_t allocated = runtime.allocator()
                                      .category_stats()
                                      .of(memory::MemoryCategory::optimizer_state)
                                      .current;
        EXPECT_GE(allocated, measured) << where;
        EXPECT_LE(allocated, measured + 7 * 512) << where << ": at most 7 state tensors rounded";
      }
    }
  }
}

TEST(LowMemoryOptimizers, EightBitOptionsChangeTheBytesAsTheEstimatorSays) {
  const ModelConfig gpt2 = models()[0];
  int64_t previous = -1;
  for (const int64_t block : {64, 256, 2048}) {
    for (const int64_t min_size : {0, 4096}) {
      for (const bool embeddings : {false, true}) {
        train::TrainOptions o = train_options(gpt2, Optimizer::adamw_8bit, Precision::fp32);
        o.plan.optimizer.eight_bit = {block, min_size, embeddings};
        nn::Runtime runtime(memory::parse_device("cpu"));
        train::Trainer trainer(runtime, o);
        (void)trainer.step();
        const int64_t measured = trainer.optimizer().state_bytes();
        EXPECT_EQ(measured, estimated_state_bytes(o)) << describe(o);
        EXPECT_NE(measured, previous) << describe(o) << ": every setting changes the layout";
        previous = measured;
      }
    }
  }
}

// At scale on meta: 7B and 70B states are counted by the meta allocator, 64-bit throughout.
TEST(LowMemoryOptimizers, MetaRunsAtSeventyBillionMatchTheEstimator) {
  for (const char* name : {"llama2-7b", "llama2-70b"}) {
    for (const Optimizer optimizer : {Optimizer::adamw, Optimizer::adamw_8bit, Optimizer::lion,
                                      Optimizer::adam_mini, Optimizer::adafactor}) {
      train::TrainOptions o =
          train_options(model_config_by_name(name), optimizer, Precision::mixed_bf16);
      o.batch = 1;
      nn::Runtime runtime(memory::parse_device("meta"));
      train::Trainer trainer(runtime, o);
      (void)trainer.step();
      EXPECT_EQ(trainer.optimizer().state_bytes(), estimated_state_bytes(o)) << describe(o);
      EXPECT_GT(trainer.optimizer().state_bytes(), 4 * o.model.parameter_count())
          << describe(o) << ": the fp32 master alone is 4 bytes per parameter";
    }
  }
}

// Every optimizer lowers the loss of a small model by 15% within 40 steps, from the same start;
// the learning rates follow each family's usual scale (Lion's 3x below AdamW's, Adafactor's
// relative step is capped by its own 1/sqrt(t)).
TEST(LowMemoryOptimizers, EveryOptimizerTrains) {
  const ModelConfig model = gpt2_config("gpt2-train", 2, 64, 4, 64, 16);
  // Plain SGD is left out: without momentum it needs far more than 40 steps on a transformer (its
  // update is checked against torch.optim's formula in test_optimizers.cpp).
  for (const Optimizer optimizer : kAll) {
    if (optimizer == Optimizer::sgd) continue;
    train::TrainOptions o = train_options(model, optimizer, Precision::fp32);
    o.batch = 8;
    o.seq = 16;
    o.plan.optimizer.learning_rate = optimizer == Optimizer::lion           ? 1e-3f
                                     : optimizer == Optimizer::sgd_momentum ? 0.3f
                                     : optimizer == Optimizer::adafactor    ? 1e-2f
                                                                            : 3e-3f;
    o.plan.optimizer.eight_bit.min_8bit_size =
        0;  // quantize every tensor, the 8-bit path under test
    o.plan.optimizer.eight_bit.block_size = 64;
    nn::Runtime runtime(memory::parse_device("cpu"));
    train::Trainer trainer(runtime, o);
    const double first = trainer.step().loss;
    double last = first;
    for (int step = 1; step < 40; ++step) last = trainer.step().loss;
    EXPECT_LT(last, 0.85 * first) << describe(o) << ": loss " << first << " -> " << last;
  }
}

// An out-of-memory error while the first step allocates the states leaves none of them behind
// (each optimizer allocates all its states or none), at every memory limit from "nothing fits"
// to "everything fits"; the step then succeeds once the limit is lifted.
TEST(LowMemoryOptimizers, AnOutOfMemoryErrorAtTheFirstStepLeavesNoHalfStates) {
  // 4.2M parameters: each fp32 state (16.8 MB) is above the allocator's 10 MiB large-segment
  // threshold and gets a segment of its own, so a limit can fit one state and not the next.
  const ModelConfig model = model_config_by_name("gpt2-tiny");
  int64_t failures = 0;
  for (const Optimizer optimizer : {Optimizer::adamw, Optimizer::adamw_8bit, Optimizer::lion,
                                    Optimizer::adam_mini, Optimizer::adafactor}) {
    const std::string name(estimate::optimizer_name(optimizer));
    int64_t state_bytes = 0;  // of a step that fits, to size the limits
    {
      nn::Runtime runtime(memory::parse_device("sim:96MiB"));
      nn::ParameterStore store(runtime, model.parameters(), DType::f32, DType::f32);
      store.ensure_grads();
      auto opt = make_optimizer(runtime, optimizer, {}, {}, &model);
      opt->step(store);
      state_bytes = opt->state_bytes();
    }
    for (int i = 0; i <= 12; ++i) {
      nn::Runtime runtime(memory::parse_device("sim:96MiB"));
      memory::CachingAllocator& allocator = runtime.allocator();
      nn::ParameterStore store(runtime, model.parameters(), DType::f32, DType::f32);
      store.ensure_grads();
      auto opt = make_optimizer(runtime, optimizer, {}, {}, &model);
      const memory::DeviceStats stats = allocator.stats();
      const int64_t before = stats.allocated_bytes[memory::kAggregate].current;
      const auto total = static_cast<int64_t>(allocator.capacity_bytes());
      // The fraction caps reserved bytes (PyTorch's rule): from what is reserved now to that
      // plus one and a half times the states.
      const int64_t limit = stats.reserved_bytes[memory::kAggregate].current + state_bytes * i / 8;
      allocator.set_memory_fraction(static_cast<double>(limit) / static_cast<double>(total));
      try {
        opt->step(store);
        EXPECT_EQ(opt->state_bytes(), state_bytes) << name << " limit " << limit;
      } catch (const memory::OutOfMemoryError&) {
        ++failures;
        EXPECT_EQ(opt->state_bytes(), 0) << name << " limit " << limit << ": half the states";
        EXPECT_EQ(allocator.stats().allocated_bytes[memory::kAggregate].current, before)
            << name << " limit " << limit;
        allocator.set_memory_fraction(1.0);
        opt->step(store);  // the retry allocates everything
        EXPECT_EQ(opt->state_bytes(), state_bytes) << name << " limit " << limit;
      }
    }
  }
  EXPECT_GT(failures, 0) << "no limit was tight enough to fail";
}

TEST(LowMemoryOptimizers, RefuseAStoreLaidOutForAnotherModel) {
  const ModelConfig a = models()[0];
  const ModelConfig b = gpt2_config("other", 1, 96, 4, 997, 24);
  nn::Runtime runtime(memory::parse_device("cpu"));
  nn::ParameterStore store(runtime, b.parameters(), DType::f32, DType::f32);
  store.ensure_grads();
  for (const Optimizer optimizer :
       {Optimizer::adamw_8bit, Optimizer::adam_mini, Optimizer::adafactor}) {
    auto opt = make_optimizer(runtime, optimizer, {}, {}, &a);
    EXPECT_THROW(opt->step(store), std::logic_error) << estimate::optimizer_name(optimizer);
  }
}

TEST(LowMemoryOptimizers, BadHyperparametersNameTheValue) {
  nn::Runtime runtime(memory::parse_device("cpu"));
  const ModelConfig model = models()[0];
  const auto message = [](const auto& make) -> std::string {
    try {
      make();
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  kernels::cpu::LionHyperparameters lion;
  lion.beta2 = 1.0f;
  EXPECT_NE(message([&] { Lion(runtime, lion); }).find("beta2 1"), std::string::npos);
  kernels::cpu::AdafactorHyperparameters adafactor;
  adafactor.beta2_decay = 0.5f;
  EXPECT_NE(message([&] { Adafactor(runtime, model, adafactor); }).find("beta2 decay 0.5"),
            std::string::npos);
  kernels::cpu::AdamWHyperparameters adamw;
  adamw.learning_rate = -1.0f;
  EXPECT_NE(message([&] { AdamMini(runtime, model, adamw); }).find("learning rate -1"),
            std::string::npos);
  EXPECT_NE(message([&] { AdamW8bit(runtime, model, adamw); }).find("learning rate -1"),
            std::string::npos);
}

}  // namespace
}  // namespace vramlab::optim
