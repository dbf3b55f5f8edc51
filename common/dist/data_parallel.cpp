// DataParallel: DDP and ZeRO-1/2/3 driven by the step's phases (see data_parallel.h).
#include "common/dist/data_parallel.h"

#include <string>

#include "common/memory/history.h"
#include "common/memory/memory_category.h"
#include "common/platform/errors.h"

namespace vramlab::dist {

nn::StoreSharding store_sharding(ZeroStage stage) {
  switch (stage) {
    case ZeroStage::ddp:
      return nn::StoreSharding::none;
    case ZeroStage::optimizer_states:
      return nn::StoreSharding::optimizer_states;
    case ZeroStage::gradients:
      return nn::StoreSharding::gradients;
    case ZeroStage::parameters:
      return nn::StoreSharding::parameters;
  }
  return nn::StoreSharding::none;
}

namespace {

Communicator& require_group(const ParallelOptions& options) {
  if (options.data_parallel == nullptr)
    throw UsageError("data parallelism needs a communicator of the data-parallel ranks");
  return *options.data_parallel;
}

}  // namespace

DataParallel::DataParallel(nn::DecoderModel& model, const ParallelOptions& options)
    : model_(model),
      store_(model.parameters()),
      comm_(require_group(options)),
      stage_(options.zero),
      prefetch_(options.prefetch),
      tied_(model.config().tied_embeddings) {
  if (store_.sharding() != store_sharding(stage_))
    throw UsageError("the model's store is not laid out for " +
                     std::string(zero_stage_name(stage_)));
  if (stage_ != ZeroStage::ddp &&
      (store_.layout().world_size() != comm_.world_size() || store_.rank() != comm_.rank()))
    throw UsageError("the model's store was sharded for rank " + std::to_string(store_.rank()) +
                     " of " + std::to_string(store_.layout().world_size()) + ", not rank " +
                     std::to_string(comm_.rank()) + " of " + std::to_string(comm_.world_size()));
  embedding_unit_ = store_.layout().find_unit(-1, false);
  head_unit_ = store_.layout().find_unit(-1, true);
  // Looked up once: the phases ask for a block's unit several times per layer and step.
  for (int64_t l = 0; l < model.config().layers; ++l)
    block_units_.push_back(store_.layout().find_unit(l));
  const bool gpt2 = model.config().family == ModelFamily::gpt2;
  for (const ShardUnit& unit : store_.layout().units()) {
    if (unit.layer >= 0) {
      unit_modules_.push_back(unit.name);
    } else if (unit.name == "embedding") {
      unit_modules_.push_back(gpt2 ? "wte" : "embed");
    } else {
      unit_modules_.push_back("lm_head");
    }
  }
  if (store_.values_offloaded()) {
    fetch_stream_ = model.runtime().clock().new_stream("parameter fetch");
    fetched_.resize(store_.layout().units().size());
    fetched_shards_.resize(store_.layout().units().size());
  }
}

// Note [Parameter fetch]
// ZeRO-Infinity (Rajbhandari et al., SC21, arXiv:2104.07857, §5's offload engine and
// overlap-centric design) keeps each rank's parameter partition in host memory (or on NVMe) and
// brings a unit's shard to the device before the all-gather that makes the unit whole, its
// prefetcher starting the next operators' copies while the current one runs (DeepSpeed's
// `offload_param`; FSDP2's CPUOffloadPolicy also copies the sharded parameters to the device
// before the all-gather). Here the shard goes to a device buffer on the "parameter fetch"
// stream, which first waits for the compute stream's work so far: that is when FSDP's all-gather
// stream may start (its output is allocated then, and the allocator hands out memory the
// compute stream has finished with). Gathering block l + 1 while block l is about to run
// (--prefetch) therefore copies it beside block l's kernels; gathering block l itself copies it
// after block l − 1 and the compute stream waits for all of it: exposed. The compute stream waits
// for a unit's copy (its event) only in the phase that reads it.

void DataParallel::gather(int64_t unit) {
  if (stage_ != ZeroStage::parameters || unit < 0) return;
  memory::Tensor& slot = store_.unit_values(unit);
  if (!slot.empty()) return;
  const ShardUnit& u = store_.layout().units()[static_cast<size_t>(unit)];
  const memory::ModuleScope module(unit_modules_[static_cast<size_t>(unit)]);
  nn::Runtime& runtime = model_.runtime();
  memory::Tensor full =
      runtime.allocate({u.padded_numel}, store_.value_dtype(), memory::MemoryCategory::parameter,
                       "gathered " + u.name);  // (p_u)
  if (store_.values_offloaded()) {
    // Note [Parameter fetch]
    stream::Clock& clock = runtime.clock();
    memory::Tensor& shard = fetched_shards_[static_cast<size_t>(unit)];
    shard =
        runtime.allocate({u.shard_numel}, store_.value_dtype(), memory::MemoryCategory::parameter,
                         "fetched shard of " + u.name);  // (s_u)
    stream::Event computed;
    computed.record(clock, stream::Clock::compute_stream());
    computed.wait(clock, fetch_stream_);
    if (store_.values_on_nvme()) {
      // Note [Parameters on NVMe]: the shard comes off the drive first; the copy waits for it.
      store_.swap_in(unit);
      // The drive's lane: the trainer's (read_parameters_on), else one of its own.
      if (nvme_lane_ == stream::Clock::compute_stream()) nvme_lane_ = clock.new_host_thread("nvme");
      clock.enqueue(
          nvme_lane_,
          static_cast<double>(store_.local_bytes(unit)) / store_.nvme_drive().read_bytes_per_s,
          "nvme read parameters " + u.name);
      stream::Event read;
      read.record(clock, nvme_lane_);
      read.wait(clock, fetch_stream_);
    }
    runtime.copy_to_device_async(shard.view(), store_.local_values(unit).data(), fetch_stream_);
    fetched_[static_cast<size_t>(unit)].record(clock, fetch_stream_);
    comm_.all_gather(shard.view(), full.view(), Traffic::parameters);
  } else {
    comm_.all_gather(store_.local_values(unit), full.view(), Traffic::parameters);
  }
  gathered_bytes_ += full.bytes();
  gathered_peak_bytes_ = std::max(gathered_peak_bytes_, gathered_bytes_);
  slot = std::move(full);
}

void DataParallel::use(int64_t unit) {
  gather(unit);
  if (!store_.values_offloaded() || unit < 0) return;
  stream::Clock& clock = model_.runtime().clock();
  fetched_[static_cast<size_t>(unit)].wait(clock, stream::Clock::compute_stream());
  // The compute stream is past the copy now: its shard is free to go without record_stream (a
  // block pending on the fetch stream would not be reused until the host waited for it, and
  // the host runs ahead of the streams for the whole forward).
  fetched_shards_[static_cast<size_t>(unit)].reset();
  // Likewise the host's copy of a shard read from NVMe.
  if (store_.swapped_in(unit)) store_.swap_out(unit, false);
}

void DataParallel::release(int64_t unit) {
  if (stage_ != ZeroStage::parameters || unit < 0) return;
  memory::Tensor& slot = store_.unit_values(unit);
  gathered_bytes_ -= slot.bytes();
  slot.reset();
  if (store_.values_offloaded()) {
    // Released unused (an error mid-step): its shard waits for its copy before reuse.
    memory::Tensor& shard = fetched_shards_[static_cast<size_t>(unit)];
    if (!shard.empty()) shard.record_stream(fetch_stream_);
    shard.reset();
    if (store_.swapped_in(unit)) store_.swap_out(unit, false);
  }
}

void DataParallel::begin_gradient(int64_t unit) {
  if (stage_ < ZeroStage::gradients || unit < 0) return;
  memory::Tensor& slot = store_.unit_grads(unit);
  if (!slot.empty()) return;
  const ShardUnit& u = store_.layout().units()[static_cast<size_t>(unit)];
  const memory::ModuleScope module(unit_modules_[static_cast<size_t>(unit)]);
  slot = model_.runtime().zeros({u.padded_numel}, memory::MemoryCategory::gradient,
                                "gradient of " + u.name, store_.grad_dtype());  // (p_u)
}

void DataParallel::reduce_gradient(int64_t unit) {
  if (stage_ < ZeroStage::gradients || unit < 0) return;
  memory::Tensor& full = store_.unit_grads(unit);
  if (full.empty()) return;
  const memory::ModuleScope module(unit_modules_[static_cast<size_t>(unit)]);
  if (nn::GradientShardSink* const sink = store_.gradient_shard_sink()) {
    // ZeRO-Offload: the reduced shard goes where the shards live (the host); the device keeps
    // it only until the sink has it.
    const ShardUnit& u = store_.layout().units()[static_cast<size_t>(unit)];
    const memory::Tensor reduced = model_.runtime().temporary(
        {u.shard_numel}, "reduce-scattered gradient", full.dtype());  // (s_u)
    comm_.reduce_scatter(full.view(), reduced.view(), Traffic::gradients);
    sink->take_gradient_shard(unit, reduced, micro_batch_ > 0);
    full.reset();
    return;
  }
  const memory::TensorView shard = store_.local_grads(unit);  // (s_u)
  if (micro_batch_ == 0) {
    // The shard is still zero: the reduce-scatter's result is the sum, bit for bit.
    comm_.reduce_scatter(full.view(), shard, Traffic::gradients);
  } else {
    // Later micro-batches add theirs, as DeepSpeed's ZeRO-2 accumulates into its partition.
    const memory::Tensor reduced = model_.runtime().temporary(
        {shard.numel()}, "reduce-scattered gradient", shard.dtype());  // (s_u)
    comm_.reduce_scatter(full.view(), reduced.view(), Traffic::gradients);
    model_.runtime().kernels().residual_forward(shard, shard, reduced.view());
  }
  full.reset();
}

void DataParallel::before(const nn::PhaseEvent& event) {
  if (stage_ < ZeroStage::gradients) return;
  const int64_t layers = model_.config().layers;
  const auto block = [&](int64_t l) { return block_units_[static_cast<size_t>(l)]; };
  switch (event.phase) {
    case nn::StepPhase::forward_embedding:
      use(embedding_unit_);
      break;
    case nn::StepPhase::forward_layer:
      use(block(event.layer));
      if (prefetch_ && event.layer + 1 < layers) gather(block(event.layer + 1));
      break;
    case nn::StepPhase::forward_head:
      use(head_unit_);
      if (tied_) use(embedding_unit_);
      break;
    case nn::StepPhase::backward_head:
      use(head_unit_);
      begin_gradient(head_unit_);
      if (tied_) {
        use(embedding_unit_);
        begin_gradient(embedding_unit_);
      }
      break;
    case nn::StepPhase::recompute_layer:
      use(block(event.layer));
      break;
    case nn::StepPhase::backward_layer:
      use(block(event.layer));
      if (prefetch_ && event.layer > 0) gather(block(event.layer - 1));
      begin_gradient(block(event.layer));
      break;
    case nn::StepPhase::backward_embedding:
      use(embedding_unit_);
      begin_gradient(embedding_unit_);
      break;
    default:
      break;
  }
}

void DataParallel::after(const nn::PhaseEvent& event) {
  if (stage_ < ZeroStage::gradients) return;
  const auto block = [&](int64_t l) { return block_units_[static_cast<size_t>(l)]; };
  switch (event.phase) {
    case nn::StepPhase::forward_embedding:
      if (!tied_) release(embedding_unit_);  // a tied head reads it again
      break;
    case nn::StepPhase::forward_layer:
    case nn::StepPhase::recompute_layer:
      release(block(event.layer));
      break;
    case nn::StepPhase::forward_head:
      release(head_unit_);
      if (tied_) release(embedding_unit_);
      break;
    case nn::StepPhase::backward_head:
      release(head_unit_);
      reduce_gradient(head_unit_);
      break;  // a tied embedding stays gathered, its gradient open, until backward_embedding
    case nn::StepPhase::backward_layer:
      release(block(event.layer));
      reduce_gradient(block(event.layer));
      break;
    case nn::StepPhase::backward_embedding:
      release(embedding_unit_);
      reduce_gradient(embedding_unit_);
      break;
    default:
      break;
  }
}

void DataParallel::finish_backward(bool last_micro_batch) {
  if (!last_micro_batch) {
    ++micro_batch_;
    return;
  }
  micro_batch_ = 0;
  if (stage_ == ZeroStage::ddp) {
    comm_.all_reduce(store_.grads().view(), Traffic::gradients);
  } else if (stage_ == ZeroStage::optimizer_states) {
    // In place: each unit's chunk r of the padded gradient becomes the sum of the ranks' chunks.
    const int64_t units = static_cast<int64_t>(store_.layout().units().size());
    for (int64_t u = 0; u < units; ++u) {
      const ShardUnit& unit = store_.layout().units()[static_cast<size_t>(u)];
      const memory::ModuleScope module(unit_modules_[static_cast<size_t>(u)]);
      comm_.reduce_scatter(store_.grads().view().slice(unit.offset, {unit.padded_numel}),
                           store_.local_grads(u), Traffic::gradients);
    }
  }
}

nn::KernelBackend::GradientCheck DataParallel::check_gradients(float multiplier) {
  const nn::KernelBackend& kernels = model_.runtime().kernels();
  if (stage_ == ZeroStage::ddp) return kernels.check_gradients(store_.grads().view(), multiplier);
  std::vector<memory::TensorView> shards;
  for (const nn::LocalRange& range : store_.local_ranges()) shards.push_back(range.grads);
  return check_gradients(multiplier, shards, kernels);
}

nn::KernelBackend::GradientCheck DataParallel::check_gradients(
    float multiplier, const std::vector<memory::TensorView>& shards,
    const nn::KernelBackend& kernels) {
  nn::KernelBackend::GradientCheck local;
  for (const memory::TensorView& shard : shards) {
    const nn::KernelBackend::GradientCheck c = kernels.check_gradients(shard, multiplier);
    local.found_inf = local.found_inf || c.found_inf;
    local.sum_of_squares += c.sum_of_squares;
  }
  float host[2] = {static_cast<float>(local.sum_of_squares), local.found_inf ? 1.0f : 0.0f};
  const memory::Tensor numbers = model_.runtime().allocate(
      {2}, DType::f32, memory::MemoryCategory::other, "gradient check");  // (2)
  model_.runtime().copy_to_device(numbers, host);
  comm_.all_reduce(numbers.view(), Traffic::metrics);
  model_.runtime().copy_to_host(host, numbers);
  return nn::KernelBackend::GradientCheck{host[1] != 0.0f, static_cast<double>(host[0])};
}

void DataParallel::after_optimizer_step() {
  if (stage_ != ZeroStage::optimizer_states && stage_ != ZeroStage::gradients) return;
  const int64_t units = static_cast<int64_t>(store_.layout().units().size());
  for (int64_t u = 0; u < units; ++u) {
    const ShardUnit& unit = store_.layout().units()[static_cast<size_t>(u)];
    const memory::ModuleScope module(unit_modules_[static_cast<size_t>(u)]);
    comm_.all_gather(store_.local_values(u),
                     store_.values().view().slice(unit.offset, {unit.padded_numel}),
                     Traffic::parameters);
  }
}

double DataParallel::mean_loss(double local_loss) {
  if (comm_.world_size() == 1) return local_loss;
  float host = static_cast<float>(local_loss);
  const memory::Tensor number =
      model_.runtime().allocate({1}, DType::f32, memory::MemoryCategory::other, "loss");  // (1)
  model_.runtime().copy_to_device(number, &host);
  comm_.all_reduce(number.view(), Traffic::metrics);
  model_.runtime().copy_to_host(&host, number);
  return static_cast<double>(host) / static_cast<double>(comm_.world_size());
}

void DataParallel::release_all() {
  const int64_t units = static_cast<int64_t>(store_.layout().units().size());
  for (int64_t u = 0; u < units; ++u) {
    release(u);
    // Only ZeRO-2/3 stores have unit gradient slots (begin_gradient's rule): under DDP and ZeRO-1
    // the lookup threw std::out_of_range here and replaced the out-of-memory error.
    if (stage_ >= ZeroStage::gradients) store_.unit_grads(u).reset();
  }
  gathered_bytes_ = 0;
  micro_batch_ = 0;
}

}  // namespace vramlab::dist
