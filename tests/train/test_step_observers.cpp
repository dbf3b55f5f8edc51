// Observers of the training step: every phase announced in the order it runs, with the block
// index (forward 0..L-1, backward L-1..0), at the moment the block's tensors appear and disappear;
// a passive observer changes no loss bit; meta announces the same phases; the trainer's setup and
// optimizer training phases; an unimplemented optimizer refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/estimate/model_state_memory.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/history.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

using nn::PhaseEvent;
using nn::StepPhase;

struct Notice {
  bool before;
  StepPhase phase;
  int64_t layer;
  int observer;
  bool operator==(const Notice&) const = default;
};

void PrintTo(const Notice& n, std::ostream* os) {
  *os << (n.before ? "before " : "after ") << nn::step_phase_name(n.phase) << "(" << n.layer
      << ") to observer " << n.observer;
}

// Records what it is told, and checks that the event describes the step it came from.
class Recorder final : public nn::StepObserver {
 public:
  Recorder(std::vector<Notice>& log, int id) : log_(log), id_(id) {}
  void before(const PhaseEvent& e) override { record(true, e); }
  void after(const PhaseEvent& e) override { record(false, e); }
  nn::DecoderModel* model = nullptr;  // what every event must carry
  // Per block: the tensors it had saved when its forward or backward phase was announced.
  std::vector<int64_t> saved_before_forward, saved_after_forward, saved_before_backward,
      saved_after_backward;

 private:
  void record(bool before, const PhaseEvent& e) {
    log_.push_back({before, e.phase, e.layer, id_});
    EXPECT_EQ(e.model, model);
    ASSERT_NE(e.saved, nullptr);
    if (e.phase != StepPhase::forward_layer && e.phase != StepPhase::backward_layer) return;
    int64_t count = 0;
    for (const nn::SavedActivationInfo& s : e.saved->list()) count += s.layer == e.layer ? 1 : 0;
    const auto l = static_cast<size_t>(e.layer);
    auto& where = e.phase == StepPhase::forward_layer
                      ? (before ? saved_before_forward : saved_after_forward)
                      : (before ? saved_before_backward : saved_after_backward);
    if (where.size() <= l) where.resize(l + 1, -1);
    where[l] = count;
  }
  std::vector<Notice>& log_;
  int id_;
};

// What one step must announce, written out from the step's definition.
std::vector<Notice> expected_step(int64_t layers, int observers) {
  std::vector<Notice> out;
  const auto both = [&](StepPhase phase, int64_t layer) {
    for (int o = 0; o < observers; ++o) out.push_back({true, phase, layer, o});
    for (int o = 0; o < observers; ++o) out.push_back({false, phase, layer, o});
  };
  const auto one = [&](bool before, StepPhase phase) {
    for (int o = 0; o < observers; ++o) out.push_back({before, phase, -1, o});
  };
  both(StepPhase::zero_grad, -1);
  one(true, StepPhase::forward);
  both(StepPhase::forward_embedding, -1);
  for (int64_t l = 0; l < layers; ++l) both(StepPhase::forward_layer, l);
  both(StepPhase::forward_head, -1);
  both(StepPhase::loss, -1);
  one(false, StepPhase::forward);
  one(true, StepPhase::backward);
  both(StepPhase::backward_head, -1);
  for (int64_t l = layers - 1; l >= 0; --l) both(StepPhase::backward_layer, l);
  both(StepPhase::backward_embedding, -1);
  one(false, StepPhase::backward);
  both(StepPhase::optimizer_step, -1);
  return out;
}

TrainOptions options_for(const ModelConfig& model, uint64_t seed) {
  TrainOptions o;
  o.model = model;
  o.batch = 2;
  o.seq = 11;
  o.seed = seed;
  return o;
}

std::vector<ModelConfig> models(int64_t layers) {
  return {gpt2_config("obs-gpt2", layers, 32, 4, 40, 16),
          llama_config("obs-llama", layers, 32, 4, 2, 64, 40, 16)};
}

void expect_announced(const std::string& device, const ModelConfig& model) {
  SCOPED_TRACE(device + " " + model.name + " L=" + std::to_string(model.layers));
  nn::Runtime runtime(memory::parse_device(device));
  Trainer trainer(runtime, options_for(model, 3));
  std::vector<Notice> log;
  Recorder first(log, 0), second(log, 1);
  first.model = second.model = &trainer.model();
  trainer.add_observer(first);
  trainer.add_observer(second);
  trainer.step();
  trainer.step();
  std::vector<Notice> expected = expected_step(model.layers, 2);
  const std::vector<Notice> one_step = expected;
  expected.insert(expected.end(), one_step.begin(), one_step.end());
  EXPECT_EQ(log, expected);

  // Each block's tensors appear during its own forward phase and are gone after its backward.
  const auto L = static_cast<size_t>(model.layers);
  EXPECT_EQ(first.saved_before_forward, std::vector<int64_t>(L, 0));
  EXPECT_EQ(first.saved_after_backward, std::vector<int64_t>(L, 0));
  ASSERT_EQ(first.saved_after_forward.size(), L);
  for (size_t l = 0; l < L; ++l) {
    EXPECT_GT(first.saved_after_forward[l], 0) << "block " << l;
    EXPECT_EQ(first.saved_before_backward[l], first.saved_after_forward[l]) << "block " << l;
  }

  // Unregistered: told nothing more.
  trainer.remove_observer(first);
  trainer.remove_observer(second);
  const size_t told = log.size();
  trainer.step();
  EXPECT_EQ(log.size(), told);
}

TEST(StepObservers, EveryPhaseInOrderWithTheBlockIndices) {
  std::mt19937 rng(20261123);
  const int64_t layers = std::uniform_int_distribution<int64_t>(2, 5)(rng);
  for (const ModelConfig& model : models(layers)) expect_announced("cpu", model);
  for (const ModelConfig& model : models(1)) expect_announced("sim:t4-16g", model);
}

TEST(StepObservers, MetaAnnouncesTheSamePhases) {
  for (const ModelConfig& model : models(3)) expect_announced("meta", model);
  // The same phases for a model whose step only exists as allocations.
  ModelConfig big = model_config_by_name("llama2-7b");
  big.max_seq = 64;
  nn::Runtime runtime(memory::parse_device("meta"));
  TrainOptions o = options_for(big, 1);
  Trainer trainer(runtime, o);
  std::vector<Notice> log;
  Recorder recorder(log, 0);
  recorder.model = &trainer.model();
  trainer.add_observer(recorder);
  EXPECT_EQ(trainer.step().loss, 0.0);
  EXPECT_EQ(log, expected_step(big.layers, 1));
}

TEST(StepObservers, APassiveObserverChangesNoLossBit) {
  for (const ModelConfig& model : models(2)) {
    for (const estimate::Optimizer kind :
         {estimate::Optimizer::adamw, estimate::Optimizer::sgd_momentum}) {
      TrainOptions o = options_for(model, 7);
      o.plan.optimizer.name = kind;
      o.plan.optimizer.learning_rate = 1e-2f;
      nn::Runtime plain_runtime(memory::parse_device("cpu"));
      nn::Runtime observed_runtime(memory::parse_device("cpu"));
      Trainer plain(plain_runtime, o);
      Trainer observed(observed_runtime, o);
      std::vector<Notice> log;
      Recorder recorder(log, 0);
      recorder.model = &observed.model();
      observed.add_observer(recorder);
      std::vector<double> a, b;
      for (int s = 0; s < 4; ++s) {
        a.push_back(plain.step().loss);
        b.push_back(observed.step().loss);
      }
      EXPECT_EQ(a, b) << model.name << " " << estimate::optimizer_name(kind);
      EXPECT_NE(a.front(), a.back()) << "the runs did not train, so equal losses prove little";
      EXPECT_FALSE(log.empty());
      EXPECT_EQ(plain.memory_report().peak_bytes, observed.memory_report().peak_bytes);
    }
  }
}

// Reads the parameters and gradients around the optimizer step: plain SGD's update is
// p ← p - lr·g, observed from outside the optimizer.
class UpdateReader final : public nn::StepObserver {
 public:
  void before(const PhaseEvent& e) override {
    if (e.phase != StepPhase::optimizer_step) return;
    const nn::ParameterStore& p = e.model->parameters();
    const float* values = p.values().f32();  // (numel)
    const float* grads = p.grads().f32();    // (numel)
    values_before.assign(values, values + p.values().numel());
    grads_before.assign(grads, grads + p.grads().numel());
  }
  void after(const PhaseEvent& e) override {
    if (e.phase != StepPhase::optimizer_step) return;
    const float* values = e.model->parameters().values().f32();  // (numel)
    values_after.assign(values, values + e.model->parameters().values().numel());
  }
  std::vector<float> values_before, grads_before, values_after;
};

TEST(StepObservers, SeeTheOptimizerStepOfPlainSgd) {
  TrainOptions o = options_for(models(2)[0], 11);
  o.plan.optimizer.name = estimate::Optimizer::sgd;
  o.plan.optimizer.learning_rate = 0.25f;
  nn::Runtime runtime(memory::parse_device("cpu"));
  Trainer trainer(runtime, o);
  UpdateReader reader;
  trainer.add_observer(reader);
  trainer.step();
  trainer.step();  // the second step: a momentum buffer would now make a difference
  ASSERT_EQ(reader.values_after.size(), reader.values_before.size());
  ASSERT_EQ(reader.grads_before.size(), reader.values_before.size());
  size_t moved = 0;
  for (size_t i = 0; i < reader.values_before.size(); ++i) {
    const float want = reader.values_before[i] - 0.25f * reader.grads_before[i];
    ASSERT_NEAR(reader.values_after[i], want, 1e-6f * (1.0f + std::fabs(want))) << "element " << i;
    moved += reader.values_after[i] != reader.values_before[i] ? 1 : 0;
  }
  EXPECT_GT(moved, reader.values_before.size() / 2);
  EXPECT_EQ(trainer.optimizer().state_bytes(), 0);
}

TEST(Trainer, LabelsTheParametersSetupAndTheStatesOptimizer) {
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
  runtime.allocator().record_history(memory::RecordMode::all);
  Trainer trainer(runtime, options_for(models(2)[1], 5));
  trainer.step();
  int parameters = 0, inputs = 0, states = 0, activations = 0;
  for (const memory::TraceEntry& e : runtime.allocator().trace()) {
    if (e.action != memory::TraceAction::alloc) continue;
    const std::string_view phase = memory::training_phase_name(e.phase);
    if (e.category == memory::MemoryCategory::parameter) {
      ++parameters;
      EXPECT_EQ(phase, "setup") << e.name;
    } else if (e.category == memory::MemoryCategory::input) {
      ++inputs;
      EXPECT_EQ(phase, "setup") << e.name;
    } else if (e.category == memory::MemoryCategory::optimizer_state) {
      ++states;
      EXPECT_EQ(phase, "optimizer") << e.name;
      EXPECT_EQ(e.module, "optimizer") << e.name;
    } else if (e.category == memory::MemoryCategory::activation) {
      ++activations;
      EXPECT_EQ(phase, "forward") << e.name << " in " << e.module;
      EXPECT_FALSE(e.module.empty()) << e.name;
    }
  }
  EXPECT_EQ(parameters, 1);
  EXPECT_EQ(inputs, 2);  // the tokens and the targets
  EXPECT_EQ(states, 2);  // AdamW's m and v
  EXPECT_GT(activations, 0);
}

}  // namespace
}  // namespace vramlab::train
