/// \file
/// \brief Optimizers over a ParameterStore: SGD (with momentum) and AdamW, states allocated lazily
/// at the first step (as PyTorch does) with the category optimizer_state.
///
/// Under a precision policy (common/amp/precision_policy.h) the states take its optimizer-state
/// type, and mixed precision adds the fp32 master copy, also an optimizer state (ZeRO's KΨ = 12
/// for Adam: master 4 + m 4 + v 4): at the first step the master is made from the 16-bit
/// parameters (as DeepSpeed's fp16 optimizer does), every step updates the master and rounds it
/// back into the parameters. A step takes a gradient multiplier, the loss scaler's 1/scale times
/// the clipping coefficient, applied inside the update kernel (no unscaled copy of the
/// gradients).
///
/// The store keeps every parameter in one block, so a step is one elementwise kernel call over
/// all parameters through the Runtime's kernels; on the meta device only the states are allocated.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/memory/caching_host_allocator.h"
#include "common/memory/host_tensor.h"

#include "common/memory/tensor.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/optim/state_swap.h"
#include "common/stream/clock.h"
#include "common/stream/event.h"
#include "kernels/cpu/optimizer.h"

namespace vramlab::optim {

/// The interface of every optimizer. Offloaded under ZeRO-2 it is also where the store's
/// gradient shards live (keep_gradient_shards()).
class Optimizer : public nn::GradientShardSink {
 public:
  virtual ~Optimizer() = default;
  /// Applies one update from the current gradients.
  /// \param params the model's store (gradients must exist).
  /// \param grad_multiplier each gradient is multiplied by it first (1/loss scale × clip
  /// coefficient; 1 for neither).
  /// \throws std::logic_error without gradients; memory::OutOfMemoryError when the first step
  /// cannot allocate the states (the step then leaves no state behind, the master copy included,
  /// and counts no step).
  void step(nn::ParameterStore& params, float grad_multiplier = 1.0f);
  /// \return bytes of optimizer state currently held (moments and the master copy).
  [[nodiscard]] virtual int64_t state_bytes() const = 0;
  /// Counts calls to step(); AdamW's bias correction uses it as its 1-based step.
  [[nodiscard]] int64_t steps() const { return steps_; }
  /// Keeps the states apart from the parameters (optimizer offload, ZeRO-Offload's data flow):
  /// the states, the fp32 master and the step's kernels stay on the runtime the optimizer was
  /// made with (the host's), while the parameters and their gradients live on \p parameters (the
  /// device's). Each step then copies this rank's gradients to the states' runtime, updates the
  /// fp32 master there (in fp32 training it is the parameters' fp32 copy) and copies the
  /// updated parameters back: 2 bytes each way per 16-bit parameter, Ren et al.'s least traffic
  /// of 4Ψ bytes a step. Before the first step only, and for the optimizers that step the store
  /// element by element (SGD, AdamW, Lion).
  /// \throws std::logic_error after the first step; vramlab::UsageError for an optimizer that
  /// steps tensor by tensor.
  /// A ZeRO-3 store whose shard lives on the states' runtime (parameter offload,
  /// ParameterStore::values_offloaded()) is updated in place there: no copy up, the gathers fetch
  /// the shards (Note [Parameter fetch] in data_parallel.cpp).
  void keep_parameters_on(nn::Runtime& parameters);
  /// Offloaded: the host's buffers that the link's copies touch, the staged gradients and 16-bit
  /// parameters, and the fp32 master come from \p pinned (page-locked, each block rounded up to
  /// a power of two, PyTorch's CachingHostAllocator), as DeepSpeed's `pin_memory: true` pins
  /// them; the moments stay pageable (DeepSpeed's CPU-Adam makes them with zeros_like). Before
  /// the first step. \param pinned the device's pinned pool; it must outlive the optimizer.
  /// \throws std::logic_error when not offloaded or after the first step.
  void pin_host_buffers(memory::CachingHostAllocator& pinned);
  /// \return true when the optimizer was made to pin_host_buffers().
  [[nodiscard]] bool pins_host_buffers() const { return pinned_ != nullptr; }
  /// \return true when keep_parameters_on() put the parameters on another runtime.
  [[nodiscard]] bool offloaded() const { return parameters_runtime_ != nullptr; }
  /// Offloaded: copies the gradients of store elements [\p first, \p first + \p count) that
  /// this rank updates to the host on the parameters' copy stream, after the work the compute
  /// stream has so far (an event joins them), without the host waiting: ZeRO-Offload's gradient
  /// streaming, called as each block's backward ends. The next step() copies only the rest.
  /// The gradients must be final (reduced, the last micro-batch's). Allocates the host staging
  /// buffers at the first call. \throws std::logic_error when not offloaded;
  /// memory::OutOfMemoryError when the host cannot hold the staging buffers.
  void stream_gradients(nn::ParameterStore& params, int64_t first, int64_t count);
  /// Offloaded: forgets what this step's backward copied and added on the host, as a step starts
  /// (again, after a failure) from its zero-grad.
  void forget_streamed_gradients() {
    streamed_.clear();
    host_seconds_in_backward_ = 0.0;
  }
  /// Offloaded, ZeRO-2 or 3 (ZeRO-Offload's data flow): \p params keeps no gradient shard on the
  /// device; each reduced shard comes here (take_gradient_shard) and lives in the host's staging,
  /// so the device holds gradients only while a unit's backward runs. Before the first backward.
  /// \throws std::logic_error when not offloaded or \p params is not a ZeRO-2 or 3 store.
  void keep_gradient_shards(nn::ParameterStore& params);
  /// \return whether keep_gradient_shards() was called.
  [[nodiscard]] bool keeps_gradient_shards() const { return shard_params_ != nullptr; }
  /// Copies \p shard to the host on the copy stream, after the compute stream's work so far;
  /// with \p accumulate the host waits for it and adds it to the unit's shard (the host's own
  /// work on the device's clock). Allocates the staging at the first call.
  /// \throws std::logic_error without keep_gradient_shards(); memory::OutOfMemoryError when the
  /// host cannot hold the staging.
  void take_gradient_shard(int64_t unit, const memory::Tensor& shard, bool accumulate) override;
  /// Under keep_gradient_shards(): the host's shards, one per local range, once their copies are
  /// done (the host waits for them): what the loss scaler's check and clipping read.
  [[nodiscard]] std::vector<memory::TensorView> host_gradient_shards();
  /// Seconds of the host's own work in the last step: its update (its kernels' time on the host's
  /// clock, which step() also puts on the device's clock) unless it was delayed and, under
  /// keep_gradient_shards() with several micro-batches, its adds of their shards; 0 when not
  /// offloaded.
  [[nodiscard]] double last_host_update_seconds() const { return last_host_update_seconds_; }
  /// Offloaded: from the \p first_step-th step() on (1-based; 0: never), ZeRO-Offload's one-step
  /// delayed parameter update (Note [Delayed parameter update]): a step's update runs on a host
  /// thread of the device's clock beside the next step's forward and backward, and its
  /// parameters reach the device at the end of that next step, so each forward uses the
  /// parameters one update behind. Before the first step. \throws std::logic_error when not
  /// offloaded or after the first step; vramlab::UsageError for \p first_step < 0.
  void delay_update_from(int64_t first_step);
  /// Offloaded: the parameters go back in tiles of \p tile_elements (0: whole, the default) as
  /// the host's update finishes each, ZeRO-Offload's CPU-Adam (Note [Tiled copy back]).
  /// \throws std::logic_error when not offloaded; vramlab::UsageError for \p tile_elements < 0.
  void tile_copy_back(int64_t tile_elements);
  /// Offloaded: the states (master weights included) live in files of the NVMe tier, one per
  /// state and part (a ZeRO-3 unit's shard: nn::LocalRange), and each step reads a part into
  /// host memory, updates it and writes it back, the next part's read beside this part's update
  /// (Note [Optimizer states on NVMe]). Before the first step, for the elementwise optimizers.
  /// \throws std::logic_error when not offloaded or after the first step; vramlab::UsageError
  /// for options StateSwap refuses; storage::StorageError for a path the tier refuses.
  void keep_states_on_nvme(const NvmeSwapOptions& options);
  /// \return the states' files and staging, or null when they are in host memory.
  [[nodiscard]] const StateSwap* state_swap() const { return swap_.get(); }
  /// \return the NVMe drive's timeline on the device's clock (a host thread: its reads and
  /// writes run beside the host's work); 0 without keep_states_on_nvme().
  [[nodiscard]] stream::StreamId nvme_lane() const { return nvme_lane_; }

  /// Seconds of the last step's update that ran delayed, beside the next step; 0 when it was not.
  [[nodiscard]] double last_delayed_update_seconds() const { return last_delayed_update_seconds_; }
  /// \return true when a delayed update has not reached the parameters yet.
  [[nodiscard]] bool update_pending() const { return return_pending_; }
  /// With a delayed update pending: copies it to the parameters now (the compute stream waits
  /// for it), so that the store holds the last step's result, as at the end of training.
  /// Nothing otherwise.
  void finish_delayed_update(nn::ParameterStore& params);

  /// Clears the gradients (PyTorch's optimizer.zero_grad). \p set_to_none frees the gradient
  /// block instead of zeroing it (the default since PyTorch 2.0), which returns its memory until
  /// the next backward.
  static void zero_grad(nn::ParameterStore& params, bool set_to_none) {
    params.zero_grad(set_to_none);
  }

 protected:
  /// \param runtime holds the states. \param precision their types and whether a master exists.
  Optimizer(nn::Runtime& runtime, const amp::PrecisionPolicy& precision)
      : runtime_(runtime), precision_(precision) {}
  /// What step() does, for each optimizer: its first call allocates the states.
  virtual void update(nn::ParameterStore& params, float grad_multiplier) = 0;
  /// \return true for the optimizers whose update() goes through local_updates(), which is
  /// where keep_parameters_on() takes effect.
  [[nodiscard]] virtual bool steps_elementwise() const { return false; }
  /// Allocates a zeroed state tensor of numel elements in the policy's state type.
  memory::Tensor make_state(int64_t numel, const char* name);
  /// \throws vramlab::UsageError "WHAT VALUE is out of range" unless \p ok.
  static void require_hyperparameter(bool ok, const std::string& what, float value);
  /// AdamW's checks, shared by the optimizers built on its moments (Adam-mini, 8-bit AdamW).
  /// \throws vramlab::UsageError naming a learning rate ≤ 0 or non-finite, betas outside [0, 1),
  /// epsilon ≤ 0, or weight decay < 0.
  static void require_adamw_hyperparameters(const kernels::cpu::AdamWHyperparameters& hp);
  /// \throws std::logic_error when \p params holds no gradients.
  static void require_gradients(const nn::ParameterStore& params);
  /// At the first step of mixed precision: the fp32 master from the parameters. \return what the
  /// update kernel updates (the master, else the parameters). For the optimizers that step whole
  /// tensors. \throws vramlab::UsageError for a ZeRO-sharded store.
  memory::TensorView updated_values(nn::ParameterStore& params);
  /// One elementwise update call: a part of the store this rank updates (nn::LocalRange).
  struct Update {
    memory::TensorView
        values;  ///< (n) what the kernel updates: the master slice, else the parameters
    memory::TensorView grads;         ///< (n) the reduced gradients
    memory::TensorView working_copy;  ///< (n) the 16-bit parameters to write back, or none
    int64_t state_offset = 0;         ///< where the part's states start
    int64_t first_element = 0;        ///< its first element's index in the whole store
  };
  /// The elementwise optimizers' view of a step: one Update per nn::LocalRange (one unsharded,
  /// one per unit under ZeRO), with the master (of the local part only) made at the first step.
  std::vector<Update> local_updates(nn::ParameterStore& params);
  /// One part's update of an elementwise optimizer: its kernel over \p update with \p states
  /// (the part's slices of each state, in the order update_parts() was given their names).
  using PartUpdate =
      std::function<void(const Update& update, const std::vector<memory::TensorView>& states)>;
  /// An elementwise optimizer's step: makes the states named \p state_names at the first call
  /// (zeroed, in the policy's state type; all or none), counts the step and calls \p update
  /// for each part, with its states in host memory or brought there from the NVMe tier.
  void update_parts(nn::ParameterStore& params, const std::vector<std::string>& state_names,
                    const PartUpdate& update);
  /// \return what update_parts() holds in host memory: the states and the master, or under
  /// keep_states_on_nvme() their staging.
  [[nodiscard]] int64_t elementwise_state_bytes() const;
  /// \return the part of \p state (local_numel elements) that \p update's states occupy.
  static memory::TensorView state_slice(const memory::Tensor& state, const Update& update);
  /// \return how this step rounds 16-bit parameters: the policy's choice, with random bits that
  /// differ from step to step.
  [[nodiscard]] nn::ParameterRounding rounding() const;
  /// As rounding(), for the part of the store starting at element \p first_element: the kernel
  /// draws element i's bits from its index within the call, so each ZeRO range gets a stream of
  /// its own (the whole store, at 0, keeps rounding()'s).
  [[nodiscard]] nn::ParameterRounding rounding(int64_t first_element) const;
  /// \return what this step's update kernels take besides their hyper-parameters: steps_,
  /// \p grad_multiplier and rounding(first_element).
  [[nodiscard]] nn::UpdateStep update_step(float grad_multiplier, int64_t first_element = 0) const;
  /// \return the 16-bit parameters the kernel writes back (mixed precision), else none.
  static memory::TensorView working_copy(const nn::ParameterStore& params,
                                         const memory::HostTensor& master);

  nn::Runtime& runtime_;            ///< holds the states
  amp::PrecisionPolicy precision_;  ///< state type, master or not
  /// (local numel) fp32 master copy, under mixed precision (pinned when pin_host_buffers())
  memory::HostTensor master_;
  int64_t steps_ = 0;  ///< steps taken so far

 private:
  /// update_parts() under keep_states_on_nvme() (Note [Optimizer states on NVMe]).
  void update_swapped(nn::ParameterStore& params, const std::vector<std::string>& state_names,
                      const PartUpdate& update);
  /// Offloaded: host_grads_ and host_params_ (filled from the device), at the first call.
  void allocate_host_staging(nn::ParameterStore& params);
  /// Offloaded: the gradients stream_gradients did not copy into host_grads_, on the copy
  /// stream; then the update waits for that stream: the host, or with \p delayed the update's
  /// thread.
  void stage_gradients(nn::ParameterStore& params, bool delayed);
  /// Offloaded: the updated parameters back to parameters_runtime_, after the host's
  /// \p update_seconds of work (spread over the tiles when tiled; 0 when the update ran
  /// elsewhere, on the delayed update's thread).
  void return_parameters(nn::ParameterStore& params, double update_seconds);
  /// Offloaded: the copy stream's next copies start after the compute stream's work so far (the
  /// gradients they copy) and after a delayed update (it reads host_grads_ and writes
  /// host_params_: one staging buffer each).
  void copy_stream_waits();

  nn::Runtime* parameters_runtime_ = nullptr;  ///< where the parameters live, when not runtime_
  stream::StreamId copy_stream_ = 0;           ///< offloaded: on parameters_runtime_'s clock
  /// Offloaded: (numel) of \p dtype on the host, pinned when pin_host_buffers() said so.
  memory::HostTensor host_buffer(int64_t numel, DType dtype, memory::MemoryCategory category,
                                 const char* name);

  memory::HostTensor host_grads_;   ///< (local numel) offloaded: the gradients, in their dtype
  memory::HostTensor host_params_;  ///< (local numel) offloaded: the parameters, in their dtype
  memory::CachingHostAllocator* pinned_ = nullptr;  ///< pin_host_buffers()'s pool
  /// Store elements [first, end) copied by stream_gradients this step, sorted by first.
  std::vector<std::pair<int64_t, int64_t>> streamed_;
  nn::ParameterStore* shard_params_ = nullptr;  ///< keep_gradient_shards()'s store
  double host_seconds_in_backward_ = 0.0;       ///< this step's host adds of later micro-batches
  double last_host_update_seconds_ = 0.0;
  int64_t delay_from_ = 0;              ///< delay_update_from()'s step, 0: never
  int64_t copy_back_tile_ = 0;          ///< tile_copy_back()'s elements, 0: whole
  stream::StreamId update_thread_ = 0;  ///< delayed: the update's host thread on the clock
  stream::Event updated_;               ///< delayed: where the last delayed update ends
  bool return_pending_ = false;         ///< a delayed update not yet copied to the device
  double last_delayed_update_seconds_ = 0.0;
  std::vector<memory::Tensor> states_;  ///< update_parts()'s states, each (local numel)
  std::unique_ptr<StateSwap> swap_;     ///< keep_states_on_nvme(): the states' files
  stream::StreamId nvme_lane_ = 0;      ///< keep_states_on_nvme(): the drive on the clock
  bool delayed_now_ = false;            ///< this step's update runs on update_thread_
  /// A write to the drive failed after the first step: the files no longer hold one step's
  /// states, and step() refuses to go on (a StorageError, as the failure was).
  std::string swap_lost_;
};

/// AdamW (torch.optim.AdamW semantics): exp_avg and exp_avg_sq, fp32, 8 bytes per parameter.
class AdamW final : public Optimizer {
 public:
  /// \p runtime holds the states and must outlive the optimizer; \p precision gives their type
  /// and the master copy (fp32 without one by default).
  /// \throws vramlab::UsageError naming a learning rate ≤ 0 or non-finite, betas outside [0, 1),
  /// epsilon ≤ 0, or weight decay < 0.
  AdamW(nn::Runtime& runtime, const kernels::cpu::AdamWHyperparameters& hp,
        const amp::PrecisionPolicy& precision = {});
  /// \return m, v and the master once they exist (8 × numel in fp32), else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  [[nodiscard]] bool steps_elementwise() const override { return true; }
  kernels::cpu::AdamWHyperparameters hp_;
};

/// SGD with momentum (torch.optim.SGD, dampening 0): 4 bytes per parameter with momentum, 0
/// without.
class Sgd final : public Optimizer {
 public:
  /// \param runtime holds the state; must outlive the optimizer. \param hp learning rate > 0 and
  /// finite, momentum in [0, 1), weight decay ≥ 0 (an L2 term added to the gradient); nesterov
  /// has no effect with momentum 0. \param precision as AdamW's.
  /// \throws vramlab::UsageError naming a bad value.
  Sgd(nn::Runtime& runtime, const kernels::cpu::SgdHyperparameters& hp,
      const amp::PrecisionPolicy& precision = {});
  /// \return the momentum buffer and the master once they exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  [[nodiscard]] bool steps_elementwise() const override { return true; }
  kernels::cpu::SgdHyperparameters hp_;
};

}  // namespace vramlab::optim
