// The training loop (see trainer.h).
#include "common/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>

#include "common/estimate/estimator.h"
#include "common/estimate/recompute_costs.h"
#include "common/memory/device.h"
#include "common/memory/history.h"
#include "common/memory/host_memory.h"
#include "common/memory/oom_error.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/stream/clock.h"

namespace vramlab::train {

namespace {

// The largest micro-batch: it sets the activation peak.
int64_t max_micro_batch(const TrainOptions& options) {
  const std::vector<int64_t> sizes = step_micro_batches(options);
  return *std::max_element(sizes.begin(), sizes.end());
}

// What the plan's parallel layout asks of the optimizer and the model, whether or not the
// ranks exist yet (estimate_step for degrees only, so the planner offers nothing the trainer
// would refuse).
void check_parallel_plan(const TrainOptions& options, int64_t tensor_parallel) {
  const plan::Plan& plan = options.plan;
  if (plan.parallel.zero != plan::ZeroStage::ddp && optim::needs_model(plan.optimizer.name))
    throw UsageError("--optimizer " + std::string(plan::optimizer_name(plan.optimizer.name)) +
                     " keeps per-tensor states, which ZeRO's flat shards cut across: use --zero 0, "
                     "or sgd, sgd-momentum, adamw or lion");
  if (tensor_parallel > 1 && optim::needs_model(plan.optimizer.name))
    throw UsageError("--optimizer " + std::string(plan::optimizer_name(plan.optimizer.name)) +
                     " lays its states out by the whole model's tensors, not a tensor-parallel "
                     "rank's: use --tp 1, or sgd, sgd-momentum, adamw or lion");
  if (tensor_parallel > 1) options.model.validate_tensor_parallel(tensor_parallel);
}

// validate() for what a schedule or an estimate needs, before the parallel groups exist (the
// command line sizes simulated ranks first): everything but the groups.
void validate_without_groups(const TrainOptions& options) {
  TrainOptions without_groups = options;
  without_groups.groups = {};
  without_groups.plan.parallel = {};
  // Both need ZeRO-3, which is the parallel plan's.
  without_groups.plan.offload.parameters = false;
  without_groups.plan.offload.optimizer_device = plan::OffloadDevice::cpu;
  without_groups.plan.offload.param_device = plan::OffloadDevice::cpu;
  validate(without_groups);
}

// A sim or cpu device's memory is host RAM, and the allocator's host budget stops a run only at
// the allocation that crosses it, after however much of the forward pass fits (minutes for a large
// model). Beyond the host's budget, stop before allocating anything (step_host_bytes says why its
// bytes are a lower bound). A device holds at most its capacity, so a run that overflows the
// device first is left to the device's own out-of-memory error.
void require_host_memory_for_step(const memory::Device& device, const TrainOptions& options,
                                  const recompute::RecomputeSchedule& schedule) {
  if (device.kind != memory::DeviceKind::sim && device.kind != memory::DeviceKind::cpu) return;
  const auto held_after_forward =
      static_cast<uint64_t>(step_host_bytes(options, schedule, options.groups.data_parallel_size(),
                                            options.groups.tensor_parallel_size()));
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

void TrainOptions::set_groups(dist::Communicator* data_parallel,
                              dist::Communicator* tensor_parallel) {
  groups = {data_parallel, tensor_parallel};
  plan.parallel.data_parallel = groups.data_parallel_size();
  plan.parallel.tensor_parallel = groups.tensor_parallel_size();
}

uint64_t dropout_seed(const TrainOptions& options) {
  return options.dropout_seed.value_or(options.seed + 0x9E3779B97F4A7C15ull);
}

void validate(const TrainOptions& options) {
  options.model.validate();
  if (options.batch < 1)
    throw UsageError("--batch must be >= 1, got " + std::to_string(options.batch));
  if (options.seq < 1 || options.seq > options.model.max_seq)
    throw UsageError("--seq " + std::to_string(options.seq) + " outside [1, " +
                     std::to_string(options.model.max_seq) + "] for model '" + options.model.name +
                     "'");
  const plan::Plan& plan = options.plan;
  plan::validate(plan);
  if (options.keep_outputs && plan.activations.loss_chunks > 1)
    throw UsageError("--keep-outputs keeps each step's (B, T, V) logits, and --loss-chunks " +
                     std::to_string(plan.activations.loss_chunks) +
                     " never makes them whole: choose one");
  (void)amp::precision_policy(plan.amp.precision, plan.amp.fp32_grads,
                              plan.amp.stochastic_rounding);
  if (plan.parallel.sequence_parallel)
    throw UsageError(
        "sequence parallelism is the estimator's only (vramlab estimate --sp): the "
        "runtime's tensor parallelism keeps the norms' activations whole");
  if (plan.offload.parameters && !plan.offload.optimizer)
    throw UsageError(
        "--offload params: the runtime offloads the parameters with the optimizer (--offload "
        "both), whose host update then writes them where they lie");
  if (plan.offload.parameters && plan.offload.delay_update_from > 0)
    throw UsageError(
        "--offload-dpu " + std::to_string(plan.offload.delay_update_from) +
        " with --offload both: a delayed update needs the device to keep the parameters the "
        "update does not touch, and offloaded parameters have one copy, on the host");
  if (plan.offload.parameters && plan.offload.tiled_copy_back)
    throw UsageError(
        "--offload-copy-back tiled with --offload both: offloaded parameters are not copied back "
        "after the update (each gather fetches them)");
  if (!std::isfinite(options.host_memory_bytes_per_s) || options.host_memory_bytes_per_s <= 0.0)
    throw UsageError("the host's memory bandwidth must be positive and finite, got " +
                     std::to_string(options.host_memory_bytes_per_s) + " bytes/s");
  if (plan.offload.optimizer && !plan.offload.overlap &&
      plan.parallel.zero >= plan::ZeroStage::gradients)
    throw UsageError("--offload-overlap off: under --zero " +
                     std::to_string(static_cast<int64_t>(plan.parallel.zero)) +
                     " each reduced gradient shard goes to the host as the backward makes it, so "
                     "there is nothing to copy after it");
  const dist::ParallelGroups& groups = options.groups;
  if (plan.parallel.data_parallel != groups.data_parallel_size())
    throw UsageError("the plan's data_parallel " + std::to_string(plan.parallel.data_parallel) +
                     " needs as many data-parallel ranks, got " +
                     std::to_string(groups.data_parallel_size()));
  if (plan.parallel.tensor_parallel != groups.tensor_parallel_size())
    throw UsageError("the plan's tensor_parallel " + std::to_string(plan.parallel.tensor_parallel) +
                     " needs as many tensor-parallel ranks, got " +
                     std::to_string(groups.tensor_parallel_size()));
  if (plan.parallel.zero != plan::ZeroStage::ddp && groups.data_parallel == nullptr)
    throw UsageError("--zero " + std::to_string(static_cast<int64_t>(plan.parallel.zero)) +
                     " needs data-parallel ranks (run under mpirun or with --simulate-ranks N)");
  check_parallel_plan(options, groups.tensor_parallel_size());
}

std::vector<int64_t> step_micro_batches(const TrainOptions& options) {
  plan::validate(options.plan);
  const plan::BatchPlan& batch = options.plan.batch;
  if (batch.micro_batch_sizes.empty())
    return std::vector<int64_t>(static_cast<size_t>(batch.grad_accum), options.batch);
  return batch.micro_batch_sizes;
}

amp::LossScaleSpec effective_loss_scale(const TrainOptions& options) {
  return plan::effective_loss_scale(options.plan.amp);
}

recompute::RecomputeSchedule recompute_schedule(const TrainOptions& options) {
  validate_without_groups(options);
  const int64_t micro = max_micro_batch(options);
  const DType act =
      amp::precision_policy(options.plan.amp.precision, options.plan.amp.fp32_grads).activations;
  return recompute::make_schedule(
      options.plan.recompute,
      estimate::runtime_chain_costs(options.model, micro, options.seq, act, options.plan.attention,
                                    options.plan.activations.loss_chunks));
}

estimate::Estimate estimate_step(const TrainOptions& options) {
  validate(options);
  return estimate_step(options, options.groups.data_parallel_size(),
                       options.groups.tensor_parallel_size());
}

int64_t step_host_bytes(const TrainOptions& options, const recompute::RecomputeSchedule& schedule,
                        int64_t data_parallel, int64_t tensor_parallel) {
  const estimate::Estimate e = estimate_step(options, data_parallel, tensor_parallel);
  const int64_t micro = max_micro_batch(options);
  const DType act =
      amp::precision_policy(options.plan.amp.precision, options.plan.amp.fp32_grads).activations;
  const int64_t activation_peak =
      options.plan.activations.compression == nn::ActivationCompression::none
          ? recompute::activation_peak_bytes(
                estimate::runtime_chain_costs(options.model, micro, options.seq, act,
                                              options.plan.attention,
                                              options.plan.activations.loss_chunks),
                schedule)
          : estimate::runtime_bytes_after_forward(
                options.model, micro, options.seq, schedule, options.plan.activations.compression,
                act, options.plan.attention, options.plan.activations.loss_chunks);
  // A tensor-parallel rank saves less than 1/t of them (norm inputs and the residual stay
  // whole): dividing all of them by t keeps this a lower bound.
  return e.parameters.bytes + activation_peak / tensor_parallel;
}

estimate::Estimate estimate_step(const TrainOptions& options, int64_t data_parallel,
                                 int64_t tensor_parallel) {
  validate_without_groups(options);
  check_parallel_plan(options, tensor_parallel);
  estimate::EstimateInputs in;
  in.model = options.model;
  in.micro_batch = max_micro_batch(options);
  in.seq = options.seq;
  in.plan = options.plan;
  in.plan.parallel.data_parallel = data_parallel;
  in.plan.parallel.tensor_parallel = tensor_parallel;
  return estimate::estimate_memory(in);
}

Trainer::Trainer(nn::Runtime& runtime, const TrainOptions& options)
    : runtime_(runtime),
      options_(options),
      data_(options.model.vocab, std::min<int64_t>(options.branching, options.model.vocab),
            options.seed),
      scaler_(effective_loss_scale(options)) {
  validate(options_);
  const bool cuda_kernels = runtime.kernel_kind() == nn::KernelKind::cuda ||
                            runtime.kernel_kind() == nn::KernelKind::cuda_emulated;
  // The CUDA flash kernels keep a row's accumulators in registers (as FlashAttention does).
  if (options_.plan.attention == AttentionKind::flash && cuda_kernels &&
      options_.model.head_dim() > 256)
    throw UsageError("--attention flash with the CUDA kernels needs a head dimension <= 256, got " +
                     std::to_string(options_.model.head_dim()) + " (hidden " +
                     std::to_string(options_.model.hidden) + " / " +
                     std::to_string(options_.model.heads) + " heads)");
  micro_batch_sizes_ = step_micro_batches(options_);
  const amp::PrecisionPolicy precision =
      amp::precision_policy(options_.plan.amp.precision, options_.plan.amp.fp32_grads,
                            options_.plan.amp.stochastic_rounding);
  schedule_ = recompute_schedule(options_);
  require_host_memory_for_step(runtime.device(), options_, schedule_);
  optim::OptimizerSettings optimizer_settings;
  optimizer_settings.learning_rate = options_.plan.optimizer.learning_rate;
  optimizer_settings.weight_decay = options_.plan.optimizer.weight_decay;
  optimizer_settings.eight_bit = options_.plan.optimizer.eight_bit;
  if (options_.plan.offload.optimizer) {
    // The states and the update on the host (Note [Optimizer offload]); a meta device's host is
    // meta too, so a model of any size can be sized without its bytes.
    const bool meta = runtime.device().kind == memory::DeviceKind::meta;
    memory::Device host = memory::parse_device(meta ? "meta" : "cpu");
    if (meta) {
      // The update is elementwise: no matmul FLOPs, so only the memory roof can bind.
      host.spec.memory_bandwidth_bytes_per_s = options_.host_memory_bytes_per_s;
      const double unbounded = std::numeric_limits<double>::infinity();
      host.spec.peak_flops = {unbounded, unbounded, unbounded, unbounded};
    }
    host_ = std::make_unique<nn::Runtime>(host);
  }
  if (options_.plan.activations.offload)
    activation_stream_ = runtime.clock().new_stream("activation offload");
  optimizer_ = optim::make_optimizer(host_ ? *host_ : runtime, options_.plan.optimizer.name,
                                     optimizer_settings, precision, &options_.model,
                                     host_ ? &runtime : nullptr);
  if (host_) {
    optimizer_->delay_update_from(options_.plan.offload.delay_update_from);
    if (options_.plan.offload.tiled_copy_back)
      optimizer_->tile_copy_back(plan::kCopyBackTileElements);
    if (options_.plan.offload.optimizer_device == plan::OffloadDevice::nvme)
      optimizer_->keep_states_on_nvme(options_.nvme);
    if (options_.plan.offload.pin_memory) optimizer_->pin_host_buffers(runtime.host_allocator());
  }
  dist::ParallelOptions parallel;
  static_cast<dist::ParallelGroups&>(parallel) = options_.groups;
  parallel.zero = options_.plan.parallel.zero;
  parallel.prefetch = options_.plan.parallel.prefetch;
  const int64_t ranks = parallel.data_parallel_size();
  // The phase tells the parameters and the batch apart from the step's tensors in a snapshot.
  const memory::PhaseScope setup(memory::TrainingPhase::setup);
  const nn::ModelSharding sharding{
      ranks, parallel.data_parallel ? parallel.data_parallel->rank() : 0,
      dist::store_sharding(parallel.zero), options_.plan.offload.parameters ? host_.get() : nullptr,
      options_.plan.offload.param_device == plan::OffloadDevice::nvme ? &options_.nvme : nullptr};
  model_ = std::make_unique<nn::DecoderModel>(runtime, options_.model, options_.seed, precision,
                                              sharding, parallel.tensor_parallel);
  if (parallel.data_parallel != nullptr) {
    data_parallel_ = std::make_unique<dist::DataParallel>(*model_, parallel);
    model_->observers().add(*data_parallel_);  // first: it gathers what the others may read
    // One drive, one timeline: the fetches' reads and the update's transfers.
    if (model_->parameters().values_on_nvme())
      data_parallel_->read_parameters_on(optimizer_->nvme_lane());
  }
  // Where offloaded gradients go (Note [Gradient streaming]): under ZeRO-2 and 3 each reduced
  // shard straight to the host; on one rank each unit's as its backward ends; under DDP and
  // ZeRO-1 (reduced after the whole backward) and tensor parallelism all after the backward.
  if (options_.plan.offload.optimizer && parallel.zero >= plan::ZeroStage::gradients) {
    optimizer_->keep_gradient_shards(model_->parameters());
  } else if (options_.plan.offload.optimizer && options_.plan.offload.overlap &&
             data_parallel_ == nullptr && parallel.tensor_parallel == nullptr) {
    streaming_ = std::make_unique<optim::GradientStreaming>(*optimizer_);
    model_->observers().add(*streaming_);
  }
  model_->set_dropout(
      {options_.plan.dropout.p, dropout_seed(options_), options_.plan.dropout.preserve_rng_state});
  model_->set_attention(options_.plan.attention);
  model_->set_loss_chunks(options_.plan.activations.loss_chunks);
  if (options_.keep_outputs) model_->set_kept_outputs(&kept_outputs_);
  const int64_t B = std::accumulate(micro_batch_sizes_.begin(), micro_batch_sizes_.end(),
                                    int64_t{0}),
                T = options_.seq;
  inputs_ = runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "inputs");
  targets_ = runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "targets");
  const auto host_bytes = static_cast<size_t>(ranks * B * T) * sizeof(int32_t);
  host_inputs_ = memory::HostBuffer(runtime.host_allocator(), host_bytes,
                                    memory::MemoryCategory::input, "inputs");
  host_targets_ = memory::HostBuffer(runtime.host_allocator(), host_bytes,
                                     memory::MemoryCategory::input, "targets");
}

StepResult Trainer::step() {
  // What the step changes before its last allocation can fail: the batch drawn from the stream,
  // the dropout masks' position, and the scaler's update (made before the optimizer step, whose
  // first call allocates the states).
  // After a failure the gradient block holds a partial sum, and memory a retry needs: it is
  // released as the next zero-grad would release it (grads_to_none), or when the step made it.
  SyntheticTokenStream data_before = data_;
  const amp::GradScaler scaler_before = scaler_;
  const uint64_t dropout_rng_offset_before = model_->dropout_rng_offset();
  const bool had_grads = !model_->parameters().grads().empty();
  try {
    return step_unguarded();
  } catch (...) {
    // An out-of-memory error skipped the phases' after(): nothing gathered may outlive the step.
    if (data_parallel_) data_parallel_->release_all();
    if (options_.grads_to_none || !had_grads) model_->parameters().zero_grad(/*set_to_none=*/true);
    data_ = std::move(data_before);
    scaler_ = scaler_before;
    model_->set_dropout_rng_offset(dropout_rng_offset_before);
    throw;
  }
}

void Trainer::set_batch(int64_t batch) {
  if (!options_.plan.batch.micro_batch_sizes.empty())
    throw UsageError("set_batch(" + std::to_string(batch) +
                     "): the run has explicit micro-batch sizes, which set the batch");
  TrainOptions options = options_;
  options.batch = batch;
  reshape(std::move(options));
}

EvalResult Trainer::evaluate(const EvalOptions& e) {
  if (e.batches < 1)
    throw UsageError("--eval-batches must be >= 1, got " + std::to_string(e.batches));
  if (e.keep_graphs && e.no_grad)
    throw UsageError(
        "--eval-keep-graphs keeps each loss's graph, and without grad (torch.no_grad()) there is "
        "none: give --eval-grad on");
  if (options_.plan.parallel.zero == plan::ZeroStage::parameters)
    throw UsageError(
        "an evaluation under --zero 3 is not modelled: its units are released by "
        "the step's backward");
  const memory::PhaseScope phase(memory::TrainingPhase::evaluation);
  const int64_t B = micro_batch_sizes_.front(), T = options_.seq;
  const int64_t ranks = options_.groups.data_parallel_size();
  const int64_t rank = options_.groups.data_parallel ? options_.groups.data_parallel->rank() : 0;
  // Its own stream: the training stream continues where it was.
  SyntheticTokenStream data(options_.model.vocab,
                            std::min<int64_t>(options_.branching, options_.model.vocab),
                            options_.seed ^ 0x5EED'E7A1'0000'0001ull);
  struct GradMode {  // restores the model's grad mode however the loop ends
    nn::DecoderModel& model;
    bool was;
    ~GradMode() { model.set_grad_enabled(was); }
  } restore{*model_, model_->grad_enabled()};
  model_->set_grad_enabled(!e.no_grad);
  std::vector<std::unique_ptr<nn::SavedActivations>> kept;
  EvalResult result;
  for (int64_t b = 0; b < e.batches; ++b) {
    if (runtime_.device().kind != memory::DeviceKind::meta)
      data.next_batch(host_inputs_.as<int32_t>(), host_targets_.as<int32_t>(), ranks * B, T);
    const auto mine = static_cast<size_t>(rank * B * T);
    const memory::TensorView tokens = inputs_.view(0, {B, T});    // (B, T)
    const memory::TensorView targets = targets_.view(0, {B, T});  // (B, T)
    runtime_.copy_to_device(inputs_, host_inputs_.as<int32_t>() + mine);
    runtime_.copy_to_device(targets_, host_targets_.as<int32_t>() + mine);
    auto saved = std::make_unique<nn::SavedActivations>(runtime_, options_.model.layers);
    result.loss += model_->forward(*saved, tokens, targets, B, T) / static_cast<double>(e.batches);
    result.saved_peak_bytes = std::max(result.saved_peak_bytes, saved->peak_bytes());
    if (e.keep_graphs) {
      kept.push_back(std::move(saved));
      result.saved_bytes = 0;
      for (const auto& store : kept) result.saved_bytes += store->bytes();
    } else {
      result.saved_bytes = saved->bytes();
    }
  }
  if (options_.groups.data_parallel) result.loss = data_parallel_->mean_loss(result.loss);
  return result;
}

void Trainer::set_seq(int64_t seq) {
  TrainOptions options = options_;
  options.seq = seq;
  reshape(std::move(options));
}

void Trainer::reshape(TrainOptions options) {
  validate(options);
  recompute::RecomputeSchedule schedule = recompute_schedule(options);
  require_host_memory_for_step(runtime_.device(), options, schedule);
  std::vector<int64_t> micro_batch_sizes = step_micro_batches(options);
  const int64_t B = std::accumulate(micro_batch_sizes.begin(), micro_batch_sizes.end(), int64_t{0}),
                T = options.seq, ranks = options.groups.data_parallel_size();
  const auto host_bytes = static_cast<size_t>(ranks * B * T) * sizeof(int32_t);
  memory::HostBuffer host_inputs(runtime_.host_allocator(), host_bytes,
                                 memory::MemoryCategory::input, "inputs");  // (N·ΣB, T) int32
  memory::HostBuffer host_targets(runtime_.host_allocator(), host_bytes,
                                  memory::MemoryCategory::input, "targets");  // (N·ΣB, T) int32
  memory::Tensor inputs, targets;
  {
    const memory::PhaseScope setup(memory::TrainingPhase::setup);
    inputs = runtime_.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "inputs");
    targets = runtime_.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "targets");
  }
  // Nothing below throws: the trainer changes batch whole or not at all.
  inputs_ = std::move(inputs);    // (ΣB, T) int32
  targets_ = std::move(targets);  // (ΣB, T) int32
  host_inputs_ = std::move(host_inputs);
  host_targets_ = std::move(host_targets);
  options_ = std::move(options);
  schedule_ = std::move(schedule);
  micro_batch_sizes_ = std::move(micro_batch_sizes);
}

StepResult Trainer::step_unguarded() {
  const auto start = std::chrono::steady_clock::now();
  stream::Clock& clock = runtime_.clock();
  const double clock_start = clock.synchronize();
  const double busy_before = clock.busy_seconds(stream::Clock::compute_stream());
  const int64_t B = inputs_.shape()[0], T = options_.seq;  // B: sequences of all micro-batches
  const dist::ParallelGroups& parallel = options_.groups;
  const int64_t ranks = parallel.data_parallel_size();
  const int64_t rank = parallel.data_parallel ? parallel.data_parallel->rank() : 0;
  dist::CommunicationStats before;
  if (parallel.data_parallel) before += parallel.data_parallel->stats();
  if (parallel.tensor_parallel) before += parallel.tensor_parallel->stats();
  // Every rank draws the global batch and keeps its rows: the same data as one process would
  // train on with N times the batch.
  // Beside a meta device the pinned batch has addresses and no memory: nothing reads it there.
  if (runtime_.device().kind != memory::DeviceKind::meta)
    data_.next_batch(host_inputs_.as<int32_t>(), host_targets_.as<int32_t>(), ranks * B, T);
  const auto mine = static_cast<size_t>(rank * B * T);
  runtime_.copy_to_device(inputs_, host_inputs_.as<int32_t>() + mine);
  runtime_.copy_to_device(targets_, host_targets_.as<int32_t>() + mine);
  StepResult result;
  result.micro_batches = static_cast<int64_t>(micro_batch_sizes_.size());
  result.loss_scale = scaler_.scale();
  const nn::StepObservers& observers = model_->observers();
  if (host_) optimizer_->forget_streamed_gradients();  // a step run again after a failure
  {
    // Before the first micro-batch's forward: observers see the store the step starts with.
    const memory::PhaseScope phase(memory::TrainingPhase::optimizer);
    nn::SavedActivations none(runtime_, options_.model.layers);
    const nn::PhaseEvent zero_grad{nn::StepPhase::zero_grad, -1, &none, model_.get()};
    if (!observers.empty()) observers.before(zero_grad);
    optim::Optimizer::zero_grad(model_->parameters(), options_.grads_to_none);
    if (!observers.empty()) observers.after(zero_grad);
  }
  // Each token's loss enters the objective with weight 1/(B·T) whichever micro-batch holds it
  // (micro_batches.h), times the loss scale: (loss * scale).backward() in PyTorch.
  const double total_tokens = static_cast<double>(B * T);
  // The gradient of the mean over every rank's tokens: the ranks' gradients are then summed.
  const double loss_gradient = scaler_.scale() / (total_tokens * static_cast<double>(ranks));
  int64_t first_row = 0;
  double loss = 0.0;
  for (const int64_t b : micro_batch_sizes_) {
    // Local to the micro-batch: unwinding from an out-of-memory error frees whatever was saved.
    nn::SavedActivations saved(runtime_, options_.model.layers);
    saved.set_plan(schedule_.layers);
    saved.set_storage(options_.plan.activations.offload
                          ? nn::make_offloading_activation_storage(activation_stream_)
                          : nn::make_activation_storage(options_.plan.activations.compression));
    const memory::TensorView tokens = inputs_.view(first_row * T, {b, T});    // (b, T)
    const memory::TensorView targets = targets_.view(first_row * T, {b, T});  // (b, T)
    const double micro_loss = model_->forward(saved, tokens, targets, b, T);
    result.activation_bytes_after_forward =
        std::max(result.activation_bytes_after_forward, saved.bytes());
    loss += micro_loss * static_cast<double>(b * T) / total_tokens;
    if (streaming_) streaming_->set_last_micro_batch(first_row + b == B);
    model_->backward(saved, tokens, targets, b, T, loss_gradient);
    result.activation_peak_bytes = std::max(result.activation_peak_bytes, saved.peak_bytes());
    first_row += b;
    if (data_parallel_) data_parallel_->finish_backward(first_row == B);
  }
  if (data_parallel_) loss = data_parallel_->mean_loss(loss);
  {
    const memory::PhaseScope phase(memory::TrainingPhase::optimizer);
    nn::SavedActivations none(runtime_, options_.model.layers);
    const nn::PhaseEvent optimizer_step{nn::StepPhase::optimizer_step, -1, &none, model_.get()};
    if (!observers.empty()) observers.before(optimizer_step);
    // The scaler's check and the clipping norm in one pass over the gradients (unchanged: the
    // unscale and the clip are the optimizer's gradient multiplier).
    float multiplier = 1.0f;
    result.grad_norm = std::numeric_limits<double>::quiet_NaN();
    if (scaler_.enabled() || options_.plan.optimizer.max_grad_norm > 0.0f) {
      const nn::KernelBackend::GradientCheck check =
          !data_parallel_ ? runtime_.kernels().check_gradients(model_->parameters().grads().view(),
                                                               scaler_.inverse_scale())
          : optimizer_->keeps_gradient_shards()
              ? data_parallel_->check_gradients(
                    scaler_.inverse_scale(), optimizer_->host_gradient_shards(), host_->kernels())
              : data_parallel_->check_gradients(scaler_.inverse_scale());
      result.found_inf = check.found_inf;
      result.grad_norm = std::sqrt(check.sum_of_squares);
      multiplier = scaler_.inverse_scale();
      if (options_.plan.optimizer.max_grad_norm > 0.0f && !check.found_inf) {
        // torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6), at most 1.
        const double coefficient =
            options_.plan.optimizer.max_grad_norm / (result.grad_norm + 1e-6);
        if (coefficient < 1.0) multiplier = static_cast<float>(multiplier * coefficient);
      }
    }
    scaler_.unscale(result.found_inf);
    result.skipped = !scaler_.should_step();
    // The update before the step, which already has its multiplier: an out-of-memory error in the
    // step (its first call allocates the states) then leaves the scaler ready for the next step,
    // not stuck between unscale and update.
    scaler_.update();
    if (!result.skipped) {
      {
        const memory::ModuleScope module("optimizer");
        optimizer_->step(model_->parameters(), multiplier);
        if (host_) {
          result.host_update_seconds = optimizer_->last_host_update_seconds();
          result.delayed_update_seconds = optimizer_->last_delayed_update_seconds();
        }
      }
      if (data_parallel_) data_parallel_->after_optimizer_step();
    }
    if (!observers.empty()) observers.after(optimizer_step);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++steps_done_;
  result.step = steps_done_;
  result.loss = loss;
  result.seconds = seconds;
  result.tokens_per_s = seconds > 0 ? total_tokens / seconds : 0.0;
  result.clock_seconds = clock.synchronize() - clock_start;
  // What was neither the device computing nor the host's own work: the compute stream waiting
  // for a copy, or the host waiting for the gradients' copies before its update.
  const double busy = clock.busy_seconds(stream::Clock::compute_stream()) - busy_before;
  result.exposed_copy_seconds =
      std::max(0.0, result.clock_seconds - busy - result.host_update_seconds);
  if (parallel.data_parallel) result.communication += parallel.data_parallel->stats();
  if (parallel.tensor_parallel) result.communication += parallel.tensor_parallel->stats();
  result.communication = result.communication.since(before);
  return result;
}

namespace {

// The model states \p runtime's allocator holds now, in requested bytes.
ModelStateMeasured model_state_of(nn::Runtime& runtime) {
  const memory::CategoryStats c = runtime.allocator().category_stats();
  return ModelStateMeasured{c.requested(memory::MemoryCategory::parameter).current,
                            c.requested(memory::MemoryCategory::gradient).current,
                            c.requested(memory::MemoryCategory::optimizer_state).current};
}

}  // namespace

ModelStateMeasured Trainer::model_state() const {
  return model_state_of(runtime_);
}

std::optional<ModelStateMeasured> Trainer::host_model_state() const {
  if (!host_) return std::nullopt;
  ModelStateMeasured held = model_state_of(*host_);
  const ModelStateMeasured pinned = host_pinned_model_state(false);
  held.parameters += pinned.parameters;
  held.gradients += pinned.gradients;
  held.optimizer_states += pinned.optimizer_states;
  return held;
}

ModelStateMeasured Trainer::host_pinned_model_state(bool blocks) const {
  // The device's pinned pool: only the offloaded optimizer puts model states there (the batch's
  // staging and offloaded activations have categories of their own).
  const memory::CategoryStats c = runtime_.host_allocator().category_stats();
  const auto held = [&](memory::MemoryCategory category) {
    return blocks ? c.of(category).current : c.requested(category).current;
  };
  return ModelStateMeasured{held(memory::MemoryCategory::parameter),
                            held(memory::MemoryCategory::gradient),
                            held(memory::MemoryCategory::optimizer_state)};
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
