/// \file
/// \brief DataParallel: DDP and ZeRO-1/2/3 over a model's flat parameter store, driven by the
/// step's phases (an nn::StepObserver, as FSDP drives itself from module hooks) and by the
/// trainer at the three points a phase does not cover (end of the backward, the gradient check,
/// after the optimizer step).
///
/// Per stage (N data-parallel ranks, ParameterStore's padded units; Ψ' = the padded count):
/// | stage  | holds                          | communication per step (elements)                |
/// |--------|--------------------------------|--------------------------------------------------|
/// | DDP    | everything                     | all-reduce of the gradients: 2Ψ(N−1)/N           |
/// | ZeRO-1 | states of its shard            | reduce-scatter Ψ' + all-gather Ψ': 2Ψ'(N−1)/N    |
/// | ZeRO-2 | states, gradients of its shard | as ZeRO-1, reduce-scattered per unit in backward |
/// | ZeRO-3 | states, gradients, parameters  | 2 all-gathers + 1 reduce-scatter: 3Ψ'(N−1)/N     |
///
/// **ZeRO-3's schedule** (what lesson 04's exercise 3 predicts): a unit is gathered before the
/// first phase of a pass that uses it and released after the last phase of that pass that uses
/// it, once per forward and once per backward. Forward uses: the embedding unit →
/// forward_embedding (and forward_head when the head is tied to it), block l → forward_layer l,
/// the head unit → forward_head. Backward uses: head → backward_head, block l → backward_layer
/// l, embedding → backward_embedding (and backward_head when tied). A checkpointed block is also
/// gathered for its recompute_layer phase and released after it (FSDP re-gathers for the
/// recomputed forward too). With prefetch, gathering block l for a pass also gathers block l+1
/// (forward) or l−1 (backward) if not already gathered. A unit's full gradient exists from the
/// first backward use to the last (ZeRO-2 and 3); then it is reduce-scattered into the local
/// shard (added to it after the first micro-batch) and freed.
///
/// **Parameter offload** (ZeRO-Infinity; the store's shard on the host, ParameterStore's
/// values_offloaded()): a gather first copies this rank's shard of the unit to the device on a
/// copy stream ("parameter fetch"), after the compute stream's work so far, and the compute
/// stream waits for that copy only when a phase uses the unit: so a prefetched unit's copy runs
/// beside the layer before it, and without prefetch each copy is exposed (Note [Parameter fetch]).
/// With the parameters on NVMe (ParameterStore::values_on_nvme()) the gather first reads the
/// unit's shard from its file on a host thread of the clock for the drive, and the copy waits for
/// that read (Note [Parameters on NVMe] in common/nn/parameter_store.cpp).
///
/// Equality with DDP: the gradients reach every stage through sums of the same ranks' values;
/// with the simulated communicator (rank-order sums) every stage's gradients, and so its losses,
/// are bitwise DDP's for one micro-batch per step; under MPI they are bitwise for 2 ranks (a
/// sum of two is commutative) and equal within rounding otherwise (the library picks the order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dist/parallel_options.h"
#include "common/memory/tensor.h"
#include "common/nn/decoder_model.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/step_observer.h"
#include "common/stream/clock.h"
#include "common/stream/event.h"

namespace vramlab::dist {

/// \return what a rank of \p stage holds of the store (DDP: everything).
nn::StoreSharding store_sharding(ZeroStage stage);

/// One data-parallel rank's strategy. Register it as the model's first observer.
class DataParallel final : public nn::StepObserver {
 public:
  /// \param model built with nn::ModelSharding{N, rank, store_sharding(options.zero)}.
  /// \param options options.data_parallel must be set.
  /// \throws vramlab::UsageError when the model's sharding does not match the options.
  DataParallel(nn::DecoderModel& model, const ParallelOptions& options);

  void before(const nn::PhaseEvent& event) override;
  void after(const nn::PhaseEvent& event) override;

  /// After each micro-batch's backward: at the last one, DDP all-reduces the gradients and
  /// ZeRO-1 reduce-scatters them (ZeRO-2/3 have reduced theirs unit by unit).
  /// \param last_micro_batch true for the step's last micro-batch.
  void finish_backward(bool last_micro_batch);
  /// The loss scaler's inf check and the clipping norm over the reduced gradients of the whole
  /// model: DDP checks its (identical) copy; ZeRO checks its shards and all-reduces the two
  /// numbers (Traffic::metrics, in f32).
  /// \param multiplier as KernelBackend::check_gradients'. \return the global check.
  nn::KernelBackend::GradientCheck check_gradients(float multiplier);
  /// As check_gradients(multiplier) over shards kept elsewhere (ZeRO-2 with the optimizer
  /// offloaded: the host's, checked with the host's kernels).
  /// \param multiplier as KernelBackend::check_gradients'. \param shards this rank's gradient
  /// shards, memory \p kernels reads. \param kernels the kernels that check them.
  /// \return the global check.
  nn::KernelBackend::GradientCheck check_gradients(float multiplier,
                                                   const std::vector<memory::TensorView>& shards,
                                                   const nn::KernelBackend& kernels);
  /// After the optimizer step: ZeRO-1/2 all-gather the updated parameters (in place).
  void after_optimizer_step();
  /// \param local_loss this rank's mean loss over its tokens.
  /// \return the mean over the ranks' losses (an f32 all-reduce, Traffic::metrics; exact for one
  /// rank).
  double mean_loss(double local_loss);
  /// Releases every gathered unit and every unit gradient (after an out-of-memory error, whose
  /// unwinding skipped the phases' after()).
  void release_all();

  /// With the parameters on NVMe: times the reads on \p lane (a host thread of the model
  /// runtime's clock) instead of a lane of its own, so that one drive is one timeline (the
  /// optimizer's, whose states are on the same drive).
  void read_parameters_on(stream::StreamId lane) { nvme_lane_ = lane; }

  /// \return N.
  [[nodiscard]] int64_t world_size() const { return comm_.world_size(); }
  /// \return this rank.
  [[nodiscard]] int64_t rank() const { return comm_.rank(); }
  /// \return the stage.
  [[nodiscard]] ZeroStage stage() const { return stage_; }
  /// \return the most bytes of gathered units held at once so far (ZeRO-3; requested bytes).
  [[nodiscard]] int64_t gathered_peak_bytes() const { return gathered_peak_bytes_; }

 private:
  void gather(int64_t unit);
  // gather(), then the compute stream waits for the unit's fetch (with the parameters offloaded):
  // the phase about to run reads it.
  void use(int64_t unit);
  void release(int64_t unit);
  void begin_gradient(int64_t unit);
  void reduce_gradient(int64_t unit);
  // The units phase `event` uses in its pass (see the file comment), -1 for none.
  [[nodiscard]] std::vector<int64_t> units_of(const nn::PhaseEvent& event) const;

  nn::DecoderModel& model_;
  nn::ParameterStore& store_;
  Communicator& comm_;
  ZeroStage stage_;
  bool prefetch_;
  bool tied_;
  int64_t embedding_unit_ = -1;
  int64_t head_unit_ = -1;
  std::vector<int64_t> block_units_;  // (L) the unit of each block
  // (units) the module path each unit's gathers and reductions allocate under, as the parameter
  // names: "wte"/"embed", "blocks.N", "lm_head"
  std::vector<std::string> unit_modules_;
  stream::StreamId fetch_stream_ = 0;   // parameter offload: the shards' copies to the device
  std::vector<stream::Event> fetched_;  // (units) parameter offload: where each unit's copy ends
  // (units) parameter offload: each unit's fetched shard (s_u) until the compute stream has
  // waited for its copy, after which it is freed on the compute stream with nothing pending
  std::vector<memory::Tensor> fetched_shards_;
  // parameters on NVMe: the drive's reads (the compute stream until read_parameters_on or the
  // first read names a host thread)
  stream::StreamId nvme_lane_ = stream::Clock::compute_stream();
  int64_t micro_batch_ = 0;          // micro-batches whose backward finished this step
  int64_t gathered_bytes_ = 0;       // requested bytes of the gathered units now
  int64_t gathered_peak_bytes_ = 0;  // and at most
};

}  // namespace vramlab::dist
