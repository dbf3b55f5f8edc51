// Lesson 01's measurement: one training step on a fresh Runtime with the allocator's history on
// (see measure_step.h).
#include "lessons/01-memory-breakdown/measure_step.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>

#include "common/memory/caching_allocator.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer.h"
#include "common/platform/errors.h"
#include "common/train/synthetic_tokens.h"

namespace vramlab::lesson01 {

namespace {

std::unique_ptr<optim::Optimizer> make_optimizer(nn::Runtime& runtime,
                                                 const std::string& optimizer) {
  if (optimizer == "adamw")
    return std::make_unique<optim::AdamW>(runtime, kernels::cpu::AdamWHyperparameters{});
  return std::make_unique<optim::Sgd>(runtime, 1e-3f, 0.9f);
}

}  // namespace

estimate::Optimizer estimator_optimizer(const std::string& optimizer) {
  if (optimizer == "adamw") return estimate::Optimizer::adamw;
  if (optimizer == "sgd") return estimate::Optimizer::sgd_momentum;
  throw UsageError("unknown optimizer '" + optimizer + "' (expected adamw or sgd)");
}

void validate(const StepSettings& settings) {
  settings.model.validate();
  if (settings.batch < 1)
    throw UsageError("--batch must be >= 1, got " + std::to_string(settings.batch));
  if (settings.seq < 1 || settings.seq > settings.model.max_seq)
    throw UsageError("--seq " + std::to_string(settings.seq) + " outside [1, " +
                     std::to_string(settings.model.max_seq) + "] for model '" +
                     settings.model.name + "'");
  estimator_optimizer(settings.optimizer);
  if (settings.device.kind == memory::DeviceKind::cuda)
    throw UsageError("device '" + settings.device.name() +
                     "': lesson 01 runs on cpu, sim or meta in this build");
}

estimate::Estimate estimate_step(const StepSettings& settings) {
  validate(settings);
  estimate::EstimateInputs in;
  in.model = settings.model;
  in.micro_batch = settings.batch;
  in.seq = settings.seq;
  in.precision = estimate::Precision::fp32;
  in.optimizer = estimator_optimizer(settings.optimizer);
  return estimate::estimate_memory(in);
}

StepMeasurement measure_training_step(const StepSettings& settings) {
  validate(settings);
  const int64_t B = settings.batch, T = settings.seq;
  StepMeasurement m;
  m.parameter_count = settings.model.parameter_count();

  nn::Runtime runtime(settings.device);
  memory::CachingAllocator& allocator = runtime.allocator();
  allocator.record_history(memory::RecordMode::all);
  train::SyntheticTokenStream data(settings.model.vocab, std::min<int64_t>(4, settings.model.vocab),
                                   settings.seed);
  std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(runtime, settings.optimizer);
  std::unique_ptr<nn::DecoderModel> model;
  {
    const memory::ContextLabelScope label("setup");
    model = std::make_unique<nn::DecoderModel>(runtime, settings.model, settings.seed);
  }
  nn::DeviceBuffer inputs =
      runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "inputs");  // (B, T)
  nn::DeviceBuffer targets =
      runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "targets");  // (B, T)
  m.input_requested_bytes = inputs.bytes() + targets.bytes();
  std::vector<int32_t> host_inputs(static_cast<size_t>(B * T));   // (B, T)
  std::vector<int32_t> host_targets(static_cast<size_t>(B * T));  // (B, T)
  data.next_batch(host_inputs.data(), host_targets.data(), B, T);
  if (runtime.runs_kernels()) {
    std::memcpy(inputs.data(), host_inputs.data(), host_inputs.size() * sizeof(int32_t));
    std::memcpy(targets.data(), host_targets.data(), host_targets.size() * sizeof(int32_t));
  }

  const auto start = std::chrono::steady_clock::now();
  {
    // Local to the step, as in the trainer: an out-of-memory error frees what was saved.
    nn::SavedActivations saved(runtime, settings.model.layers);
    optim::Optimizer::zero_grad(model->parameters(), true);
    m.loss = model->forward(saved, inputs.i32(), targets.i32(), B, T);
    m.saved = saved.list();
    m.saved_requested_bytes = saved.bytes();
    model->backward(saved, inputs.i32(), targets.i32(), B, T);
    m.gradient_requested_bytes = model->parameters().grads().bytes();
    const memory::ContextLabelScope label("optimizer");
    optimizer->step(model->parameters());
  }
  m.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.parameter_requested_bytes = model->parameters().values().bytes();
  m.optimizer_state_requested_bytes = optimizer->state_bytes();

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

std::vector<TraceEvent> trace_events(const std::vector<memory::TraceEntry>& trace,
                                     std::vector<std::string>* contexts) {
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
      if (contexts != nullptr) contexts->push_back(e.context);
    } else if (e.action == memory::TraceAction::free_requested) {
      const auto it = live_name_by_address.find(e.address);
      if (it == live_name_by_address.end()) continue;  // allocated before recording began
      events.push_back({TraceAction::kFree, it->second, 0, e.category});
      if (contexts != nullptr) contexts->push_back(e.context);
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
