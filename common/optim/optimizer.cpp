// SGD and AdamW over a ParameterStore (see optimizer.h).
#include "common/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/dtype/counter_rng.h"
#include "common/memory/memory_category.h"
#include "common/platform/errors.h"
#include "common/stream/event.h"

namespace vramlab::optim {

void Optimizer::require_hyperparameter(bool ok, const std::string& what, float value) {
  if (!ok) throw UsageError(what + " " + std::to_string(value) + " is out of range");
}

void Optimizer::require_adamw_hyperparameters(const kernels::cpu::AdamWHyperparameters& hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.beta1 >= 0 && hp.beta1 < 1, "beta1", hp.beta1);
  require_hyperparameter(hp.beta2 >= 0 && hp.beta2 < 1, "beta2", hp.beta2);
  require_hyperparameter(hp.epsilon > 0, "epsilon", hp.epsilon);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Optimizer::require_gradients(const nn::ParameterStore& params) {
  if (params.grads().empty() && params.gradient_shard_sink() == nullptr)
    throw std::logic_error("optimizer step without gradients (run backward first)");
}

void Optimizer::step(nn::ParameterStore& params, float grad_multiplier) {
  // The master (and, offloaded, the host's gradients and parameters) are made before the
  // moments: when they do not fit, those go too, so a failed first step leaves the optimizer as
  // it found it (and its bytes free for a retry). The staging may come from stream_gradients,
  // during the backward before this first step.
  if (!swap_lost_.empty())
    throw storage::StorageError(
        "the optimizer's states on NVMe are incomplete since a transfer failed (" + swap_lost_ +
        "): the run cannot go on");
  const bool first = steps_ == 0;
  const bool delayed = offloaded() && delay_from_ > 0 && steps_ + 1 >= delay_from_;
  delayed_now_ = delayed;
  if (delayed && params.values_offloaded())
    throw UsageError(
        "a delayed parameter update needs the device to keep the parameters the update does not "
        "touch; with the parameters offloaded the update writes the only copy");
  try {
    if (offloaded()) {
      // The last delayed update goes to the device before this one overwrites the host's copy.
      finish_delayed_update(params);
      stage_gradients(params, delayed);
    }
    stream::Clock& host_clock = runtime_.clock();
    const double host_before = host_clock.synchronize();
    update(params, grad_multiplier);
    if (offloaded()) {
      const double update_seconds = host_clock.synchronize() - host_before;
      stream::Clock& clock = parameters_runtime_->clock();
      last_host_update_seconds_ = host_seconds_in_backward_;
      host_seconds_in_backward_ = 0.0;
      if (delayed) {
        // The update runs on its thread while the host goes on to the next step (whose
        // forward keeps the parameters the device has); its result goes up at that step's end.
        if (!swap_)  // else each part's update is on the thread already, between its transfers
          clock.enqueue(update_thread_, update_seconds, "optimizer update (delayed)");
        updated_.record(clock, update_thread_);
        last_delayed_update_seconds_ = update_seconds;
        return_pending_ = true;
      } else {
        // The device idles while the host updates, then waits for the parameters.
        last_host_update_seconds_ += update_seconds;
        last_delayed_update_seconds_ = 0.0;
        return_parameters(params, swap_ ? 0.0 : update_seconds);
      }
    }
  } catch (...) {
    forget_streamed_gradients();
    if (first) {
      master_ = memory::HostTensor();
      host_grads_ = memory::HostTensor();
      host_params_ = memory::HostTensor();
    }
    throw;
  }
}

void Optimizer::delay_update_from(int64_t first_step) {
  if (!offloaded())
    throw std::logic_error("delay_update_from: only an offloaded optimizer can delay its update");
  if (steps_ > 0) throw std::logic_error("delay_update_from: the optimizer has stepped already");
  if (first_step < 0)
    throw UsageError("the delayed update's first step must be >= 0 (0: never), got " +
                     std::to_string(first_step));
  delay_from_ = first_step;
  if (delay_from_ > 0 && update_thread_ == 0)
    update_thread_ = parameters_runtime_->clock().new_host_thread("cpu optimizer (delayed)");
}

void Optimizer::finish_delayed_update(nn::ParameterStore& params) {
  if (!return_pending_) return;
  return_parameters(params, 0.0);
  return_pending_ = false;
}

void Optimizer::tile_copy_back(int64_t tile_elements) {
  if (!offloaded())
    throw std::logic_error("tile_copy_back: only an offloaded optimizer copies parameters back");
  if (tile_elements < 0)
    throw UsageError("the copy back's tile must be >= 0 elements (0: whole), got " +
                     std::to_string(tile_elements));
  copy_back_tile_ = tile_elements;
}

void Optimizer::keep_parameters_on(nn::Runtime& parameters) {
  if (steps_ > 0 || !master_.empty())
    throw std::logic_error("keep_parameters_on: the optimizer has stepped already");
  if (!steps_elementwise())
    throw UsageError(
        "this optimizer steps tensor by tensor and cannot keep its states apart "
        "from the parameters (offload supports SGD, AdamW and Lion)");
  parameters_runtime_ = &parameters == &runtime_ ? nullptr : &parameters;
  if (parameters_runtime_ != nullptr)
    copy_stream_ = parameters_runtime_->clock().new_stream("offload copies");
}

// Note [Optimizer offload]
// The host's copy is the truth between steps: the first step copies this rank's parameters to
// the states' runtime (host_params_, in their dtype) and makes the fp32 master from them; every
// step copies the gradients there (host_grads_), updates the master (or, without one, the
// host's copy in place) with the states' runtime's kernels, and copies the host's copy back over
// the parameters. The kernels are the same as without offload and get the same arguments, so
// the parameters come back bitwise as the device's own step would have left them.
// On the device's clock: the gradients' copies run on the optimizer's copy stream (during the
// backward when GradientStreaming sends them, Note [Gradient streaming]), the host waits for
// them, its update is the host's own work (the device idles), and the parameters go back on the
// copy stream with the compute stream waiting for them, so what a step spends on copies that
// nothing hides shows as waiting, on the host or the stream.

// Note [Delayed parameter update]
// ZeRO-Offload's DPU (Ren et al., ATC 2021, §5.2): the GPU's forward and backward of step i + 1
// run while the CPU applies step i's update, so they use the parameters of step i − 1 and the
// update's time hides behind them. The first N − 1 steps run without it; at step N the paper's
// CPU skips its step and from then on applies each update one step late. Here step N's update
// runs at once but its parameters stay on the host until step N + 1's backward ends: the same
// numbers (steps N and N + 1 both use the parameters of step N − 1, then each forward the
// update before the last), with the bytes moved by the time the host's code moves on.
// On the device's clock the update is work on a host thread (Clock::new_host_thread), after an
// event on the copy stream (its gradients are there), and the next step does not wait for it
// (synchronize() does not join a host thread). There is one staging buffer for the gradients
// and one for the parameters, as without the delay: the copy stream's next copies (the next
// step's gradients, the parameters' return) wait for the update's event, so an update longer
// than the next forward and backward delays their copies and, through them, the compute
// stream: what shows as exposed time. It costs no bytes: the host's copy holds the new
// parameters while the device computes with the old ones.

namespace {

// Enqueues the copy of \p r's gradients in store elements [lo, hi) into \p host_grads.
void copy_range_to_host(nn::Runtime& device, const memory::HostTensor& host_grads,
                        const nn::LocalRange& r, int64_t lo, int64_t hi, stream::StreamId stream) {
  const int64_t at = lo - r.first_element, n = hi - lo;
  device.copy_to_host_async(host_grads.view().slice(r.state_offset + at, {n}).data(),
                            r.grads.slice(at, {n}), stream);
}

}  // namespace

void Optimizer::copy_stream_waits() {
  stream::Clock& clock = parameters_runtime_->clock();
  stream::Event computed;
  computed.record(clock, stream::Clock::compute_stream());
  computed.wait(clock, copy_stream_);
  updated_.wait(clock, copy_stream_);  // nothing when no update was delayed
}

void Optimizer::allocate_host_staging(nn::ParameterStore& params) {
  if (!host_grads_.empty()) return;
  const std::vector<nn::LocalRange> ranges = params.local_ranges();
  memory::HostTensor grads = host_buffer(params.local_numel(), params.grad_dtype(),
                                         memory::MemoryCategory::gradient, "gradients");
  if (params.values_offloaded()) {
    // ZeRO-Infinity: the parameters' shard already lives here and is updated where it lies.
    if (&params.values_runtime() != &runtime_)
      throw std::logic_error(
          "optimizer offload: the store's parameters live on another runtime than the states");
    host_grads_ = std::move(grads);
    return;
  }
  memory::HostTensor values = host_buffer(params.local_numel(), params.value_dtype(),
                                          memory::MemoryCategory::parameter, "parameters");
  // The host's copy of the parameters starts as the device's: a copy like the gradients'.
  copy_stream_waits();
  for (const nn::LocalRange& r : ranges)
    parameters_runtime_->copy_to_host_async(
        values.view().slice(r.state_offset, {r.values.numel()}).data(), r.values, copy_stream_);
  host_grads_ = std::move(grads);
  host_params_ = std::move(values);
}

void Optimizer::stream_gradients(nn::ParameterStore& params, int64_t first, int64_t count) {
  if (!offloaded()) throw std::logic_error("stream_gradients: the optimizer is not offloaded");
  require_gradients(params);
  const int64_t end = first + count;
  for (const auto& [lo, hi] : streamed_)
    if (first < hi && lo < end)
      throw std::logic_error("stream_gradients: elements [" + std::to_string(first) + ", " +
                             std::to_string(end) + ") were streamed already this step");
  allocate_host_staging(params);
  copy_stream_waits();
  for (const nn::LocalRange& r : params.local_ranges()) {
    const int64_t lo = std::max(first, r.first_element);
    const int64_t hi = std::min(end, r.first_element + r.values.numel());
    if (lo < hi) copy_range_to_host(*parameters_runtime_, host_grads_, r, lo, hi, copy_stream_);
  }
  streamed_.emplace(std::upper_bound(streamed_.begin(), streamed_.end(), std::pair{first, end}),
                    first, end);
}

void Optimizer::keep_gradient_shards(nn::ParameterStore& params) {
  if (!offloaded()) throw std::logic_error("keep_gradient_shards: the optimizer is not offloaded");
  params.keep_gradient_shards_off_device(*this);
  shard_params_ = &params;
}

void Optimizer::take_gradient_shard(int64_t unit, const memory::Tensor& shard, bool accumulate) {
  if (shard_params_ == nullptr)
    throw std::logic_error("take_gradient_shard: the optimizer keeps no gradient shards");
  allocate_host_staging(*shard_params_);
  const dist::ShardUnit& u = shard_params_->layout().units().at(static_cast<size_t>(unit));
  stream::Clock& clock = parameters_runtime_->clock();
  copy_stream_waits();
  const memory::TensorView kept = host_grads_.view().slice(u.shard_offset, {u.shard_numel});
  if (!accumulate) {
    parameters_runtime_->copy_to_host_async(kept.data(), shard.view(), copy_stream_);
  } else {
    // A later micro-batch's shard adds to the earlier ones' on the host, once it is there (the
    // same add the device's shard gets without offload, so the same bits).
    const memory::Tensor arrived =
        runtime_.temporary({u.shard_numel}, "gradient shard", shard.dtype());  // (s_u)
    parameters_runtime_->copy_to_host_async(arrived.view().data(), shard.view(), copy_stream_);
    clock.synchronize_stream(copy_stream_);
    stream::Clock& host_clock = runtime_.clock();
    const double before = host_clock.synchronize();
    runtime_.kernels().residual_forward(kept, kept, arrived.view());
    const double added = host_clock.synchronize() - before;
    clock.host_work(added);
    host_seconds_in_backward_ += added;
  }
  // The device frees the shard now; its block waits for the copy before it is reused.
  shard.record_stream(copy_stream_);
}

std::vector<memory::TensorView> Optimizer::host_gradient_shards() {
  if (shard_params_ == nullptr || host_grads_.empty())
    throw std::logic_error("host_gradient_shards: no gradient shards on the host");
  parameters_runtime_->clock().synchronize_stream(copy_stream_);
  std::vector<memory::TensorView> shards;
  for (const nn::LocalRange& r : shard_params_->local_ranges())
    shards.push_back(host_grads_.view().slice(r.state_offset, {r.values.numel()}));
  return shards;
}

void Optimizer::stage_gradients(nn::ParameterStore& params, bool delayed) {
  require_gradients(params);
  allocate_host_staging(params);
  stream::Clock& clock = parameters_runtime_->clock();
  // The update reads the gradients: it waits for their copies (what did not hide is exposed).
  const auto update_waits_for_copies = [&] {
    if (!delayed) {
      clock.synchronize_stream(copy_stream_);
      return;
    }
    stream::Event copied;
    copied.record(clock, copy_stream_);
    copied.wait(clock, update_thread_);
  };
  if (shard_params_ != nullptr) {  // the shards came as they were reduced
    update_waits_for_copies();
    return;
  }
  copy_stream_waits();
  for (const nn::LocalRange& r : params.local_ranges()) {
    // What stream_gradients left: the gaps between the streamed ranges (sorted, disjoint).
    int64_t next = r.first_element;
    const int64_t end = r.first_element + r.values.numel();
    for (const auto& [lo, hi] : streamed_) {
      if (hi <= next || lo >= end) continue;
      if (lo > next)
        copy_range_to_host(*parameters_runtime_, host_grads_, r, next, lo, copy_stream_);
      next = std::max(next, hi);
    }
    if (next < end)
      copy_range_to_host(*parameters_runtime_, host_grads_, r, next, end, copy_stream_);
  }
  streamed_.clear();
  update_waits_for_copies();
}

// Note [Tiled copy back]
// ZeRO-Offload's CPU-Adam (Ren et al., ATC 2021, §5.1; DeepSpeed's cpu_adam.h) updates the fp32
// partition in tiles of 128·2^20 elements and copies each finished tile's 16-bit parameters to
// the GPU while it updates the next, so after the update only the last tile's copy is left. Here
// the update runs as one kernel call (the same bits whatever the tiling); on the clock its time is
// spread over the tiles in proportion to their elements (exact on meta, where the update takes
// its bytes over the host's bandwidth; the measured time's shares on sim), and each tile's copy
// goes on the copy stream when its share of the host's work ends. Whole (a tile of 0): every copy
// after the whole update, the same as one tile of everything.
void Optimizer::return_parameters(nn::ParameterStore& params, double update_seconds) {
  stream::Clock& clock = parameters_runtime_->clock();
  if (params.values_offloaded()) {
    // Nothing goes back: the next gathers copy the updated shards (Note [Parameter fetch]).
    clock.host_work(update_seconds);
    return;
  }
  copy_stream_waits();
  const std::vector<nn::LocalRange> ranges = params.local_ranges();
  const int64_t total = params.local_numel();  // the state offsets the ranges cover, [0, total)
  const int64_t tile = copy_back_tile_ > 0 ? copy_back_tile_ : std::max<int64_t>(total, 1);
  double worked = 0.0;
  for (int64_t first = 0; first < total; first += tile) {
    const int64_t end = std::min(total, first + tile);
    const double until = update_seconds * static_cast<double>(end) / static_cast<double>(total);
    clock.host_work(until - worked);
    worked = until;
    for (const nn::LocalRange& r : ranges) {
      const int64_t lo = std::max(first, r.state_offset);
      const int64_t hi = std::min(end, r.state_offset + r.values.numel());
      if (lo < hi)
        parameters_runtime_->copy_to_device_async(r.values.slice(lo - r.state_offset, {hi - lo}),
                                                  host_params_.view().slice(lo, {hi - lo}).data(),
                                                  copy_stream_);
    }
  }
  if (total == 0) clock.host_work(update_seconds);
  // The next forward reads them: the compute stream waits for the copies, the host does not.
  stream::Event returned;
  returned.record(clock, copy_stream_);
  returned.wait(clock, stream::Clock::compute_stream());
}

memory::Tensor Optimizer::make_state(int64_t numel, const char* name) {
  return runtime_.zeros({numel}, memory::MemoryCategory::optimizer_state, name,
                        precision_.optimizer_states);
}

memory::TensorView Optimizer::updated_values(nn::ParameterStore& params) {
  if (params.sharding() != nn::StoreSharding::none)
    throw UsageError("this optimizer steps whole tensors and cannot update a ZeRO shard");
  if (!precision_.master_weights) return params.values().view();
  if (master_.empty()) {
    master_ = memory::HostTensor(runtime_.allocate(
        {params.numel()}, DType::f32, memory::MemoryCategory::optimizer_state, "master weights"));
    runtime_.kernels().cast(master_.view(), params.values().view());
  }
  return master_.view();
}

std::vector<Optimizer::Update> Optimizer::local_updates(nn::ParameterStore& params) {
  std::vector<nn::LocalRange> ranges = params.local_ranges();
  if (offloaded()) {
    // The host's copies stand in for the parameters and gradients (Note [Optimizer offload]);
    // offloaded parameters are the host's already.
    for (nn::LocalRange& r : ranges) {
      if (!params.values_offloaded())
        r.values = host_params_.view().slice(r.state_offset, {r.values.numel()});
      r.grads = host_grads_.view().slice(r.state_offset, {r.values.numel()});
    }
  }
  if (precision_.master_weights && master_.empty()) {
    // The fp32 master of this rank's part only (ZeRO shards it with the other states).
    memory::HostTensor master =
        host_buffer(params.local_numel(), DType::f32, memory::MemoryCategory::optimizer_state,
                    "master weights");
    for (const nn::LocalRange& r : ranges)
      runtime_.kernels().cast(master.view().slice(r.state_offset, {r.values.numel()}), r.values);
    master_ = std::move(master);
  }
  std::vector<Update> updates;
  for (const nn::LocalRange& r : ranges) {
    const int64_t n = r.values.numel();
    updates.push_back(master_.empty() ? Update{r.values, r.grads, memory::TensorView(),
                                               r.state_offset, r.first_element}
                                      : Update{master_.view().slice(r.state_offset, {n}), r.grads,
                                               r.values, r.state_offset, r.first_element});
  }
  return updates;
}

memory::TensorView Optimizer::state_slice(const memory::Tensor& state, const Update& update) {
  return state.view().slice(update.state_offset, {update.values.numel()});
}

void Optimizer::update_parts(nn::ParameterStore& params,
                             const std::vector<std::string>& state_names,
                             const PartUpdate& update) {
  require_gradients(params);
  if (swap_) {
    update_swapped(params, state_names, update);
    return;
  }
  const std::vector<Update> updates = local_updates(params);
  if (states_.size() != state_names.size()) {
    // All or none: an out-of-memory error on the last frees the others, so a retry starts clean.
    std::vector<memory::Tensor> made;
    for (const std::string& name : state_names)
      made.push_back(make_state(params.local_numel(), name.c_str()));
    states_ = std::move(made);
  }
  ++steps_;
  for (const Update& u : updates) {
    std::vector<memory::TensorView> slices;
    for (const memory::Tensor& state : states_) slices.push_back(state_slice(state, u));
    update(u, slices);
  }
}

int64_t Optimizer::elementwise_state_bytes() const {
  int64_t bytes = master_.bytes() + (swap_ ? swap_->staging_bytes() : 0);
  for (const memory::Tensor& state : states_) bytes += state.bytes();
  return bytes;
}

void Optimizer::pin_host_buffers(memory::CachingHostAllocator& pinned) {
  if (!offloaded()) throw std::logic_error("pin_host_buffers: the optimizer is not offloaded");
  if (steps_ > 0 || !master_.empty() || !host_grads_.empty())
    throw std::logic_error("pin_host_buffers: the optimizer has stepped already");
  pinned_ = &pinned;
}

memory::HostTensor Optimizer::host_buffer(int64_t numel, DType dtype,
                                          memory::MemoryCategory category, const char* name) {
  if (pinned_ == nullptr)
    return memory::HostTensor(runtime_.allocate({numel}, dtype, category, name));
  memory::HostBuffer block(*pinned_, static_cast<size_t>(numel) * dtype_size_bytes(dtype), category,
                           name);
  // The copy stream reads and writes it: once freed, the block waits for that stream's work.
  if (block.block() != nullptr) pinned_->record_stream(block.block(), copy_stream_);
  return memory::HostTensor(std::move(block), dtype, numel);
}

void Optimizer::keep_states_on_nvme(const NvmeSwapOptions& options) {
  if (!offloaded()) throw std::logic_error("keep_states_on_nvme: the optimizer is not offloaded");
  if (steps_ > 0 || !master_.empty() || !states_.empty())
    throw std::logic_error("keep_states_on_nvme: the optimizer has stepped already");
  swap_ = std::make_unique<StateSwap>(runtime_, options);
  nvme_lane_ = parameters_runtime_->clock().new_host_thread("nvme");
}

// Note [Optimizer states on NVMe]
// ZeRO-Infinity (Rajbhandari et al., SC21, §5; DeepSpeed's `offload_optimizer.device: nvme`)
// keeps the optimizer states, fp32 master included, on NVMe and brings them to host memory a
// sub-group at a time for the CPU's update. Here a sub-group is a part of the local partition
// (nn::LocalRange: a ZeRO-3 unit's shard), with one file per state and part, and host memory for
// two parts' states: the step reads part p + 1 into one set while it updates part p in the
// other, then writes part p back (DeepSpeed's pipeline_read and pipeline_write). The first step
// reads nothing (the moments start at zero, the master is made from the parameters). The
// transfers really happen, through the NVMe tier (common/storage), one after another; their
// time on the device's clock is the drive's bandwidth (NvmeSwapOptions), on a host thread of
// the clock for the drive, so a read that takes longer than the update before it shows as the
// host waiting (exposed), and the last write overlaps whatever comes next. The kernels get the
// same arguments as with the states in host memory, so a step updates to the same bits.
// The files and the staging are made before any part is updated: a drive or a host too small for
// them leaves the optimizer as it was (no file, no staging, no step). Once a part is updated, a
// transfer that fails leaves the parameters and the files holding different steps, so the
// optimizer refuses to go on.
void Optimizer::update_swapped(nn::ParameterStore& params,
                               const std::vector<std::string>& state_names,
                               const PartUpdate& update) {
  std::vector<nn::LocalRange> ranges = params.local_ranges();
  const std::vector<dist::ShardUnit>& units = params.layout().units();
  // With the parameters on NVMe too (ZeRO-3: a part is a unit) a part's values come in with its
  // states (Note [Parameters on NVMe] in parameter_store.cpp).
  const bool params_on_nvme = params.values_on_nvme();
  std::vector<int64_t> numels;  // (parts)
  for (size_t p = 0; p < ranges.size(); ++p)
    numels.push_back(params_on_nvme ? units[p].shard_numel : ranges[p].values.numel());
  for (size_t p = 0; p < ranges.size(); ++p) {  // the host's copies, as in local_updates
    nn::LocalRange& r = ranges[p];
    if (!params.values_offloaded())
      r.values = host_params_.view().slice(r.state_offset, {numels[p]});
    r.grads = host_grads_.view().slice(r.state_offset, {numels[p]});
  }
  // The parameters' host memory for the update, made before anything changes: the loop below
  // then allocates nothing, so the host running out leaves the step to be tried again.
  memory::Tensor parameter_staging;  // (the largest part) a part's parameters from NVMe
  if (params_on_nvme)
    parameter_staging =
        runtime_.allocate({*std::max_element(numels.begin(), numels.end())}, params.value_dtype(),
                          memory::MemoryCategory::parameter, "parameters (staged from NVMe)");
  const bool first = !swap_->prepared();
  const bool master = precision_.master_weights;
  if (first) {
    std::vector<SwappedState> states;
    if (master) states.push_back({"master_weights", DType::f32});
    for (const std::string& name : state_names)
      states.push_back({name, precision_.optimizer_states});
    swap_->prepare(numels, std::move(states));
  }
  // The update overwrites a 16-bit working copy whole; it reads the parameters themselves only
  // without a master, or to make the master at the first step.
  const bool read_params = params_on_nvme && (!master || first);
  stream::Clock& clock = parameters_runtime_->clock();
  stream::Clock& host_clock = runtime_.clock();
  const auto parts = static_cast<int64_t>(ranges.size());
  const NvmeSwapOptions& drive = swap_->options();
  std::vector<stream::Event> read(static_cast<size_t>(parts));
  std::vector<bool> reads(static_cast<size_t>(parts), false);  // (parts) a read was enqueued
  const auto part_name = [&](int64_t p) {  // a ZeRO unit's name, in the clock's trace
    return units.size() == ranges.size() ? units[static_cast<size_t>(p)].name
                                         : "part " + std::to_string(p);
  };
  const auto bytes_of = [&](int64_t p, bool states, bool values) {
    return (states ? swap_->part_bytes(p) : 0) + (values ? params.local_bytes(p) : 0);
  };
  const auto enqueue_read = [&](int64_t p) {
    const int64_t bytes = bytes_of(p, !first, read_params);
    if (bytes == 0) return;
    clock.enqueue(nvme_lane_, static_cast<double>(bytes) / drive.read_bytes_per_s,
                  "nvme read " + part_name(p));
    read[static_cast<size_t>(p)].record(clock, nvme_lane_);
    reads[static_cast<size_t>(p)] = true;
  };
  ++steps_;
  int64_t in = -1;  // the part whose parameters are swapped in
  try {
    if (parts > 0) enqueue_read(0);
    for (int64_t p = 0; p < parts; ++p) {
      if (p + 1 < parts) enqueue_read(p + 1);
      nn::LocalRange& r = ranges[static_cast<size_t>(p)];
      const std::vector<memory::TensorView> staged = swap_->staged(p);
      if (params_on_nvme) {
        r.values = params.swap_in(p, read_params, parameter_staging.view());
        in = p;
      }
      if (first) {
        for (size_t s = master ? 1 : 0; s < staged.size(); ++s)
          runtime_.kernels().fill_zero(staged[s]);
      } else {
        swap_->read(p);
      }
      if (reads[static_cast<size_t>(p)]) {
        // The update of this part waits for its read: the host, or the delayed update's thread.
        if (delayed_now_)
          read[static_cast<size_t>(p)].wait(clock, update_thread_);
        else
          read[static_cast<size_t>(p)].synchronize();
      }
      const double before = host_clock.synchronize();
      if (first && master) runtime_.kernels().cast(staged[0], r.values);
      const Update u = master ? Update{staged[0], r.grads, r.values, 0, r.first_element}
                              : Update{r.values, r.grads, memory::TensorView(), 0, r.first_element};
      update(u, std::vector<memory::TensorView>(staged.begin() + (master ? 1 : 0), staged.end()));
      const double seconds = host_clock.synchronize() - before;
      const std::string name = part_name(p);
      if (delayed_now_) {
        clock.enqueue(update_thread_, seconds, "optimizer update (delayed) " + name);
        stream::Event updated;
        updated.record(clock, update_thread_);
        updated.wait(clock, nvme_lane_);
      } else {
        clock.host_work(seconds);  // the write below starts after it: the host enqueues it now
      }
      swap_->write(p);
      if (params_on_nvme) {
        in = -1;
        params.swap_out(p, true);
      }
      clock.enqueue(
          nvme_lane_,
          static_cast<double>(bytes_of(p, true, params_on_nvme)) / drive.write_bytes_per_s,
          "nvme write " + name);
    }
  } catch (const storage::StorageError& error) {
    if (in >= 0) params.swap_out(in, false);
    swap_lost_ = error.what();
    throw;
  } catch (...) {
    if (in >= 0) params.swap_out(in, false);
    throw;
  }
}

nn::ParameterRounding Optimizer::rounding() const {
  return {precision_.stochastic_rounding,
          splitmix64_mix(0x0b5e55ed5eedull + static_cast<uint64_t>(steps_))};
}

nn::ParameterRounding Optimizer::rounding(int64_t first_element) const {
  nn::ParameterRounding r = rounding();
  if (first_element != 0)
    r.seed = splitmix64_mix(r.seed + static_cast<uint64_t>(first_element) * kSplitMix64Gamma);
  return r;
}

nn::UpdateStep Optimizer::update_step(float grad_multiplier, int64_t first_element) const {
  return {.step = steps_, .grad_multiplier = grad_multiplier, .rounding = rounding(first_element)};
}

memory::TensorView Optimizer::working_copy(const nn::ParameterStore& params,
                                           const memory::HostTensor& master) {
  return master.empty() ? memory::TensorView() : params.values().view();
}

AdamW::AdamW(nn::Runtime& runtime, const kernels::cpu::AdamWHyperparameters& hp,
             const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), hp_(hp) {
  require_adamw_hyperparameters(hp);
}

void AdamW::update(nn::ParameterStore& params, float grad_multiplier) {
  update_parts(params, {"adamw.exp_avg", "adamw.exp_avg_sq"},
               [&](const Update& u, const std::vector<memory::TensorView>& states) {
                 runtime_.kernels().adamw_update(u.values, u.grads, states[0], states[1],
                                                 u.working_copy, hp_,
                                                 update_step(grad_multiplier, u.first_element));
               });
}

int64_t AdamW::state_bytes() const {
  return elementwise_state_bytes();
}

Sgd::Sgd(nn::Runtime& runtime, const kernels::cpu::SgdHyperparameters& hp,
         const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), hp_(hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.momentum >= 0 && hp.momentum < 1, "momentum", hp.momentum);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Sgd::update(nn::ParameterStore& params, float grad_multiplier) {
  std::vector<std::string> states;
  if (hp_.momentum > 0) states.emplace_back("sgd.momentum");
  update_parts(params, states, [&](const Update& u, const std::vector<memory::TensorView>& state) {
    runtime_.kernels().sgd_update(u.values, u.grads,
                                  state.empty() ? memory::TensorView() : state[0], u.working_copy,
                                  hp_, update_step(grad_multiplier, u.first_element));
  });
}

int64_t Sgd::state_bytes() const {
  return elementwise_state_bytes();
}

}  // namespace vramlab::optim
