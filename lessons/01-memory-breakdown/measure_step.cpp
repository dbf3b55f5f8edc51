// Lesson 01's measurement: one training step on a fresh Runtime with the allocator's history on
// (see measure_step.h).
#include "lessons/01-memory-breakdown/measure_step.h"

#include <set>
#include <unordered_map>

#include "common/memory/caching_allocator.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/optim/optimizer_factory.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::lesson01 {

namespace {

// Reads the two moments the trainer's step does not return: the saved tensors after forward
// (backward frees them) and the gradient block after backward.
class StepReader final : public nn::StepObserver {
 public:
  explicit StepReader(StepMeasurement& m) : m_(m) {}
  void after(const nn::PhaseEvent& event) override {
    if (event.phase == nn::StepPhase::forward) {
      m_.saved = event.saved->list();
      m_.saved_requested_bytes = event.saved->bytes();
    } else if (event.phase == nn::StepPhase::backward) {
      m_.gradient_requested_bytes = event.model->parameters().grads().bytes();
    }
  }

 private:
  StepMeasurement& m_;
};

// The trainer's options for the lesson's step: its seed, and the trainer's defaults otherwise
// (AdamW's or SGD's default hyperparameters, a 4-successor token chain).
train::TrainOptions train_options(const StepSettings& settings) {
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.plan.optimizer.name = estimate::parse_optimizer(settings.optimizer);
  options.seed = settings.seed;
  options.plan.attention = settings.attention;
  return options;
}

}  // namespace

void validate(const StepSettings& settings) {
  train::validate(train_options(settings));
}

estimate::Estimate estimate_step(const StepSettings& settings) {
  return train::estimate_step(train_options(settings));
}

StepMeasurement measure_training_step(const StepSettings& settings) {
  const train::TrainOptions options = train_options(settings);
  train::validate(options);
  StepMeasurement m;
  m.parameter_count = settings.model.parameter_count();

  nn::Runtime runtime(settings.device);
  memory::CachingAllocator& allocator = runtime.allocator();
  // Before the trainer exists, so that the trace starts with the parameters.
  allocator.record_history(memory::RecordMode::all);
  train::Trainer trainer(runtime, options);
  StepReader reader(m);
  trainer.add_observer(reader);
  m.input_requested_bytes = trainer.inputs().bytes() + trainer.targets().bytes();

  const train::StepResult step = trainer.step();
  m.loss = step.loss;
  m.step_seconds = step.seconds;
  m.parameter_requested_bytes = trainer.model().parameters().values().bytes();
  m.optimizer_state_requested_bytes = trainer.optimizer().state_bytes();

  const memory::CategoryStats categories = allocator.category_stats();
  for (const memory::MemoryCategory c : memory::kAllMemoryCategories)
    m.category_peak_bytes[static_cast<size_t>(c)] = categories.of(c).peak;
  const memory::DeviceStats stats = allocator.stats();
  m.peak_allocated_bytes = stats.allocated_bytes[memory::kAggregate].peak;
  m.peak_reserved_bytes = stats.reserved_bytes[memory::kAggregate].peak;
  m.segment_count_peak = stats.segment[memory::kAggregate].peak;
  m.trace = allocator.trace();
  m.snapshot = allocator.snapshot();
  return m;
}

std::string owner_label(const memory::TraceEntry& entry) {
  std::string label(memory::training_phase_name(entry.phase));
  if (!entry.module.empty()) label += " in " + entry.module;
  return label;
}

std::vector<TraceEvent> trace_events(const std::vector<memory::TraceEntry>& trace,
                                     std::vector<std::string>* owners) {
  std::vector<TraceEvent> events;
  std::unordered_map<uint64_t, std::string> live_name_by_address;
  std::set<std::string> live_names;
  for (const memory::TraceEntry& e : trace) {
    if (e.action == memory::TraceAction::alloc) {
      std::string name = e.name.empty() ? "unnamed" : e.name;
      for (int64_t k = 2; live_names.count(name) != 0; ++k)
        name = (e.name.empty() ? "unnamed" : e.name) + "#" + std::to_string(k);
      live_names.insert(name);
      live_name_by_address[e.address] = name;
      events.push_back({TraceAction::kAlloc, name, static_cast<int64_t>(e.size), e.category});
      if (owners != nullptr) owners->push_back(owner_label(e));
    } else if (e.action == memory::TraceAction::free_requested) {
      const auto it = live_name_by_address.find(e.address);
      if (it == live_name_by_address.end()) continue;  // allocated before recording began
      events.push_back({TraceAction::kFree, it->second, 0, e.category});
      if (owners != nullptr) owners->push_back(owner_label(e));
      live_names.erase(it->second);
      live_name_by_address.erase(it);
    }
  }
  return events;
}

std::vector<LayerActivations> activations_by_layer(
    const std::vector<nn::SavedActivationInfo>& saved, int64_t layers) {
  std::vector<LayerActivations> out(static_cast<size_t>(layers + 1));
  for (size_t i = 0; i < out.size(); ++i) out[i].layer = static_cast<int64_t>(i) - 1;
  for (const nn::SavedActivationInfo& s : saved) {
    LayerActivations& a = out.at(static_cast<size_t>(s.layer + 1));
    ++a.tensors;
    a.bytes += s.bytes;
  }
  return out;
}

}  // namespace vramlab::lesson01
