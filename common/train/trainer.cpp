// The training loop (see trainer.h).
#include "common/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/checkpoint/activation_peak.h"
#include "common/estimate/estimator.h"
#include "common/estimate/recompute_costs.h"
#include "common/memory/history.h"
#include "common/memory/host_memory.h"
#include "common/memory/oom_error.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"

namespace vramlab::train {

namespace {

// A sim or cpu device's memory is host RAM, and the allocator's host budget stops a run only at
// the allocation that crosses it, after however much of the forward pass fits (minutes for a large
// model). The parameters and every saved activation are live together at the end of the forward
// pass (with checkpointing: at the schedule's activation peak; with compression the bytes held
// when the forward ends, as the peak model does not count decompression): a lower bound on the
// step's peak,
// so a step that fits is never refused. A device holds at most its capacity, so a run that
// overflows the device first is left to the device's own out-of-memory error. Beyond the host's
// budget, stop before allocating anything.
void require_host_memory_for_step(const memory::Device& device, const TrainOptions& options,
                                  const checkpoint::RecomputeSchedule& schedule) {
  if (device.kind != memory::DeviceKind::sim && device.kind != memory::DeviceKind::cpu) return;
  const estimate::Estimate e = estimate_step(options);
  const int64_t activation_peak =
      options.compress_activations == nn::ActivationCompression::none
          ? checkpoint::activation_peak_bytes(
                estimate::runtime_chain_costs(options.model, options.batch, options.seq), schedule)
          : estimate::runtime_bytes_after_forward(options.model, options.batch, options.seq,
                                                  schedule, options.compress_activations);
  const auto held_after_forward = static_cast<uint64_t>(e.parameters.bytes + activation_peak);
  const uint64_t capacity = device.spec.capacity_bytes;  // 0 on cpu: none
  const uint64_t planned =
      capacity == 0 ? held_after_forward : std::min(held_after_forward, capacity);
  const std::string note =
      planned < held_after_forward
          ? "the device's " + memory::format_size(capacity) + ", which the step's " +
                memory::format_size(held_after_forward) + " of parameters and saved activations " +
                "would fill"
          : std::string(
                "the step's parameters and saved activations, live together at the end "
                "of the forward pass");
  memory::require_host_memory(device.name(), planned, note);
}

}  // namespace

void validate(const TrainOptions& options) {
  options.model.validate();
  if (options.batch < 1)
    throw UsageError("--batch must be >= 1, got " + std::to_string(options.batch));
  if (options.seq < 1 || options.seq > options.model.max_seq)
    throw UsageError("--seq " + std::to_string(options.seq) + " outside [1, " +
                     std::to_string(options.model.max_seq) + "] for model '" + options.model.name +
                     "'");
  optim::require_implemented(options.optimizer);
  if (!(options.dropout.p >= 0.0f && options.dropout.p < 1.0f))
    throw UsageError("--dropout " + std::to_string(options.dropout.p) + " outside [0, 1)");
}

checkpoint::RecomputeSchedule recompute_schedule(const TrainOptions& options) {
  validate(options);
  return checkpoint::make_schedule(
      options.recompute, estimate::runtime_chain_costs(options.model, options.batch, options.seq));
}

estimate::Estimate estimate_step(const TrainOptions& options) {
  validate(options);
  estimate::EstimateInputs in;
  in.model = options.model;
  in.micro_batch = options.batch;
  in.seq = options.seq;
  in.precision = estimate::Precision::fp32;
  in.optimizer = options.optimizer;
  return estimate::estimate_memory(in);
}

Trainer::Trainer(nn::Runtime& runtime, const TrainOptions& options)
    : runtime_(runtime),
      options_(options),
      data_(options.model.vocab, std::min<int64_t>(options.branching, options.model.vocab),
            options.seed) {
  validate(options_);
  schedule_ = recompute_schedule(options_);
  require_host_memory_for_step(runtime.device(), options_, schedule_);
  optim::OptimizerSettings optimizer_settings;
  optimizer_settings.learning_rate = options_.learning_rate;
  optimizer_settings.weight_decay = options_.weight_decay;
  optimizer_ = optim::make_optimizer(runtime, options_.optimizer, optimizer_settings);
  {
    // Named so that an allocator trace tells the parameters apart from the step's tensors.
    const memory::ContextLabelScope label("setup");
    model_ = std::make_unique<nn::DecoderModel>(runtime, options_.model, options_.seed);
  }
  model_->set_dropout(options_.dropout);
  const int64_t B = options_.batch, T = options_.seq;
  inputs_ = runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "inputs");
  targets_ = runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "targets");
  host_inputs_.resize(static_cast<size_t>(B * T));
  host_targets_.resize(static_cast<size_t>(B * T));
}

StepResult Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const int64_t B = options_.batch, T = options_.seq;
  data_.next_batch(host_inputs_.data(), host_targets_.data(), B, T);
  runtime_.copy_to_device(inputs_, host_inputs_.data());
  runtime_.copy_to_device(targets_, host_targets_.data());
  // Local to the step: unwinding from an out-of-memory error frees whatever was saved.
  nn::SavedActivations saved(runtime_, options_.model.layers);
  saved.set_plan(schedule_.layers);
  saved.set_compression(options_.compress_activations);
  const nn::StepObservers& observers = model_->observers();
  const nn::PhaseEvent zero_grad{nn::StepPhase::zero_grad, -1, &saved, model_.get()};
  if (!observers.empty()) observers.before(zero_grad);
  optim::Optimizer::zero_grad(model_->parameters(), options_.grads_to_none);
  if (!observers.empty()) observers.after(zero_grad);
  const double loss = model_->forward(saved, inputs_.view(), targets_.view(), B, T);
  const int64_t bytes_after_forward = saved.bytes();
  model_->backward(saved, inputs_.view(), targets_.view(), B, T);
  {
    const memory::ContextLabelScope label("optimizer");
    const nn::PhaseEvent optimizer_step{nn::StepPhase::optimizer_step, -1, &saved, model_.get()};
    if (!observers.empty()) observers.before(optimizer_step);
    optimizer_->step(model_->parameters());
    if (!observers.empty()) observers.after(optimizer_step);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++steps_done_;
  return StepResult{steps_done_,
                    loss,
                    seconds,
                    seconds > 0 ? static_cast<double>(B * T) / seconds : 0.0,
                    saved.peak_bytes(),
                    bytes_after_forward};
}

MemoryReport Trainer::memory_report() const {
  MemoryReport report;
  const memory::CategoryStats categories = runtime_.allocator().category_stats();
  for (size_t i = 0; i < memory::kMemoryCategoryCount; ++i) {
    report.peak_bytes[i] = categories.allocated_bytes[i].peak;
    report.current_bytes[i] = categories.allocated_bytes[i].current;
  }
  const memory::DeviceStats stats = runtime_.allocator().stats();
  report.peak_total_bytes = stats.allocated_bytes[memory::kAggregate].peak;
  report.reserved_peak_bytes = stats.reserved_bytes[memory::kAggregate].peak;
  return report;
}

double median(std::vector<double> seconds) {
  if (seconds.empty()) throw UsageError("median of no step times");
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  return n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
}

}  // namespace vramlab::train
