// Lesson 02's measurements: steps under a recompute schedule on a fresh Runtime (see
// measure_schedules.h).
#include "lessons/02-checkpointing/measure_schedules.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/estimate/recompute_costs.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/history.h"
#include "common/memory/oom_error.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/recompute_schedule.h"
#include "common/train/trainer.h"

namespace vramlab::lesson02 {

namespace {

// The phases whose saved bytes the timeline shows: the ones that run one module (the containing
// forward and backward phases would only repeat their last child).
bool is_leaf(nn::StepPhase phase) {
  switch (phase) {
    case nn::StepPhase::forward_embedding:
    case nn::StepPhase::forward_layer:
    case nn::StepPhase::forward_head:
    case nn::StepPhase::loss:
    case nn::StepPhase::backward_head:
    case nn::StepPhase::recompute_layer:
    case nn::StepPhase::backward_layer:
    case nn::StepPhase::backward_embedding:
      return true;
    default:
      return false;
  }
}

std::string phase_label(const nn::PhaseEvent& event) {
  const std::string layer = std::to_string(event.layer);
  switch (event.phase) {
    case nn::StepPhase::forward_embedding:
      return "embedding";
    case nn::StepPhase::forward_layer:
      return "forward " + layer;
    case nn::StepPhase::forward_head:
      return "head";
    case nn::StepPhase::loss:
      return "loss";
    case nn::StepPhase::backward_head:
      return "backward head";
    case nn::StepPhase::recompute_layer:
      return "recompute " + layer;
    case nn::StepPhase::backward_layer:
      return "backward " + layer;
    case nn::StepPhase::backward_embedding:
      return "backward embedding";
    default:
      return std::string(nn::step_phase_name(event.phase));
  }
}

// Copies the gradients after step 1's backward and, while the allocator records its history,
// replays it phase by phase: the store allocates every saved tensor (and only those) in the
// activation category, so the running sum of their requested bytes is the store's bytes() at
// every allocation and free. At the end of each leaf phase the recorder drains the history
// (re-enabling recording clears it, so each entry is read once); what happened since the previous
// phase ended (a span's kept output freed before its recompute, a decompression before a
// backward) counts towards this phase.
class StepRecorder final : public nn::StepObserver {
 public:
  StepRecorder(bool copy_gradients, bool replay_phases, PolicyRun& run)
      : copy_gradients_(copy_gradients), replay_phases_(replay_phases), run_(run) {}

  void before(const nn::PhaseEvent& event) override {
    if (event.phase == nn::StepPhase::zero_grad) ++step_;
  }

  void after(const nn::PhaseEvent& event) override {
    if (step_ != 1) return;
    if (event.phase == nn::StepPhase::backward && copy_gradients_) {
      nn::ParameterStore& parameters = event.model->parameters();
      run_.gradients.resize(static_cast<size_t>(parameters.grads().numel()));  // (numel)
      event.model->runtime().copy_to_host(run_.gradients.data(), parameters.grads());
    }
    if (replay_phases_ && is_leaf(event.phase)) {
      memory::CachingAllocator& allocator = event.model->runtime().allocator();
      int64_t high = bytes_;
      for (const memory::TraceEntry& e : allocator.trace()) {
        if (e.category != memory::MemoryCategory::activation) continue;
        if (e.action == memory::TraceAction::alloc) bytes_ += static_cast<int64_t>(e.size);
        if (e.action == memory::TraceAction::free_requested) bytes_ -= static_cast<int64_t>(e.size);
        high = std::max(high, bytes_);
      }
      allocator.record_history(memory::RecordMode::all);
      run_.timeline.push_back({phase_label(event), high, bytes_});
      run_.timeline_peak_bytes = std::max(run_.timeline_peak_bytes, high);
    }
  }

 private:
  bool copy_gradients_;
  bool replay_phases_;
  PolicyRun& run_;
  int64_t step_ = 0;
  int64_t bytes_ = 0;  // the store's bytes as replayed so far
};

train::TrainOptions train_options(const RunSettings& settings, const recompute::RecomputeSpec& spec,
                                  nn::ActivationCompression compression) {
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.seed = settings.seed;
  options.plan.recompute = spec;
  options.plan.dropout.p = settings.dropout;
  options.dropout_seed = settings.seed;
  options.plan.activations.compression = compression;
  options.plan.attention = settings.attention;
  return options;
}

}  // namespace

PolicyRun run_policy(const RunSettings& settings, const recompute::RecomputeSpec& spec,
                     nn::ActivationCompression compression) {
  if (settings.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(settings.steps));
  const train::TrainOptions options = train_options(settings, spec, compression);
  PolicyRun run;
  run.name = recompute::to_string(spec);
  run.compression = std::string(nn::compression_name(compression));

  nn::Runtime runtime(settings.device);
  train::Trainer trainer(runtime, options);
  const bool computes = settings.device.kind != memory::DeviceKind::meta;
  StepRecorder recorder(computes, settings.record_timeline, run);
  trainer.add_observer(recorder);
  run.pattern = recompute::schedule_pattern(trainer.schedule());
  run.predicted_activation_peak_bytes = recompute::activation_peak_bytes(
      estimate::runtime_chain_costs(settings.model, settings.batch, settings.seq, DType::f32,
                                    settings.attention),
      trainer.schedule());
  run.predicted_bytes_after_forward = estimate::runtime_bytes_after_forward(
      settings.model, settings.batch, settings.seq, trainer.schedule(), compression, DType::f32,
      settings.attention);
  run.recomputed_forward_fraction = estimate::recomputed_forward_fraction(
      settings.model, settings.batch, settings.seq, trainer.schedule(), settings.attention);

  memory::CachingAllocator& allocator = runtime.allocator();
  if (settings.record_timeline) allocator.record_history(memory::RecordMode::all);
  for (int64_t s = 0; s < settings.steps; ++s) {
    const train::StepResult step = trainer.step();
    if (s == 0) {
      run.activation_peak_bytes = step.activation_peak_bytes;
      run.bytes_after_forward = step.activation_bytes_after_forward;
      // The later steps are timed: no history to record.
      if (settings.record_timeline) allocator.record_history(memory::RecordMode::off);
    }
    run.step_seconds.push_back(step.seconds);
    run.losses.push_back(step.loss);
  }
  run.peak_bytes = trainer.memory_report().peak_total_bytes;
  nn::ParameterStore& parameters = trainer.model().parameters();
  for (const nn::ParameterView& view : parameters.views())
    run.parameter_ranges.push_back({view.name, view.offset, view.numel});
  if (computes) {
    run.parameters.resize(static_cast<size_t>(parameters.values().numel()));  // (numel)
    runtime.copy_to_host(run.parameters.data(), parameters.values());
  }
  return run;
}

bool step_fits(const RunSettings& settings, const recompute::RecomputeSpec& spec,
               const memory::Device& device, int64_t batch) {
  RunSettings at = settings;
  at.batch = batch;
  at.device = device;
  const train::TrainOptions options = train_options(at, spec, nn::ActivationCompression::none);
  // A budget that no schedule meets at this batch is a batch that does not fit that budget.
  if (spec.kind == recompute::RecomputeSpec::Kind::budget) {
    try {
      (void)train::recompute_schedule(options);
    } catch (const UsageError&) {
      return false;
    }
  }
  nn::Runtime runtime(device);
  try {
    train::Trainer trainer(runtime, options);
    (void)trainer.step();
  } catch (const memory::OutOfMemoryError&) {
    return false;
  }
  return true;
}

int64_t max_batch(const RunSettings& settings, const recompute::RecomputeSpec& spec,
                  const memory::Device& device, int64_t limit) {
  if (limit < 1) throw UsageError("the batch limit must be >= 1, got " + std::to_string(limit));
  if (!step_fits(settings, spec, device, 1)) return 0;
  int64_t fits = 1;   // the largest batch known to fit
  int64_t fails = 0;  // the smallest batch known not to fit, 0 while none is known
  while (fails == 0) {
    const int64_t next = std::min(fits * 2, limit);
    if (next == fits) return limit;
    if (step_fits(settings, spec, device, next))
      fits = next;
    else
      fails = next;
  }
  while (fails - fits > 1) {
    const int64_t mid = fits + (fails - fits) / 2;
    if (step_fits(settings, spec, device, mid))
      fits = mid;
    else
      fails = mid;
  }
  return fits;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b, int64_t offset,
                      int64_t count) {
  if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > a.size() ||
      a.size() != b.size())
    throw InternalError("relative_error: range [" + std::to_string(offset) + ", +" +
                        std::to_string(count) + ") outside vectors of " + std::to_string(a.size()) +
                        " and " + std::to_string(b.size()));
  double diff = 0.0;
  double norm = 0.0;
  for (int64_t i = offset; i < offset + count; ++i) {
    const double x = a[static_cast<size_t>(i)];
    const double y = b[static_cast<size_t>(i)];
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  if (norm == 0.0) return diff == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace vramlab::lesson02
