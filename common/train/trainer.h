/// \file
/// \brief The training loop: a DecoderModel on a Runtime, trained with AdamW or SGD on the
/// synthetic Markov token stream, reporting per-step loss, time and tokens/s and the allocator's
/// peak bytes per memory category.
///
/// A lesson that measures or changes part of the step registers an nn::StepObserver
/// (add_observer) rather than copying the step: it is told before and after zero-grad, forward
/// (per layer), loss, backward (per layer) and the optimizer step.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/amp/grad_scaler.h"
#include "common/amp/precision_policy.h"
#include "common/dist/communicator.h"
#include "common/dist/data_parallel.h"
#include "common/dist/parallel_options.h"
#include "common/estimate/estimator.h"
#include "common/memory/host_buffer.h"
#include "common/memory/memory_category.h"
#include "common/memory/tensor.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"
#include "common/optim/gradient_streaming.h"
#include "common/optim/optimizer.h"
#include "common/optim/optimizer_factory.h"
#include "common/plan/plan.h"
#include "common/recompute/recompute_schedule.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/synthetic_tokens.h"

namespace vramlab::train {

/// The communicators of a rank's parallel groups (common/dist/parallel_options.h); their sizes
/// must be the plan's (plan::ParallelPlan).
using dist::ParallelGroups;

/// What to train and how: a model, a plan, a micro-batch and a sequence length, and what makes a
/// run repeatable (the seeds, the token stream).
struct TrainOptions {
  ModelConfig model;  ///< the model (validated by the trainer).
  /// How: precision, recompute, activation storage, attention, optimizer, micro-batches, the
  /// parallel layout, optimizer offload, dropout (common/plan/plan.h). Parameter offload and
  /// sequence parallelism are the estimator's only, so the trainer refuses a plan that asks for
  /// them.
  plan::Plan plan;
  /// With the optimizer offloaded from a meta device: the host's memory bandwidth in bytes per
  /// second, which its update (elementwise, so memory-bound) takes its time at on the clock: the
  /// bytes of its operands over this (a floor, as a meta kernel's roofline). On cpu and sim the
  /// update runs and takes its measured time.
  double host_memory_bytes_per_s = memory::kTypicalHostMemoryBytesPerS;
  /// With `--offload-optimizer-device nvme`: the directory the states' files go in and the
  /// requests' shape (`--nvme-*`; not used on meta, which makes no files), and the drive's
  /// bandwidths the clock times their transfers at.
  optim::NvmeSwapOptions nvme;
  int64_t batch = 8;          ///< B, sequences per micro-batch (≥ 1).
  int64_t seq = 128;          ///< T, tokens per sequence (1 ≤ T ≤ model.max_seq).
  uint64_t seed = 1;          ///< initial weights and the token stream.
  /// The dropout masks' stream; unset: seed + 0x9E3779B97F4A7C15 (a stream apart from the
  /// weights', what `vramlab train` uses).
  std::optional<uint64_t> dropout_seed;
  int64_t branching = 4;      ///< successors per token of the synthetic chain.
  bool grads_to_none = true;  ///< release gradients between steps (else zero them).
  /// `--keep-outputs`: stages lesson 08's leak: every step's (B, T, V) logits stay on the device
  /// for the rest of the run, as `outputs.append(logits)` without `.detach().cpu()` keeps them
  /// (DecoderModel::set_kept_outputs). Not with the loss in chunks, which makes no whole logits.
  bool keep_outputs = false;
  /// The rank's data- and tensor-parallel groups (under `mpirun` or `--simulate-ranks`; made by
  /// dist::launch_ranks); null for one rank. Each data-parallel rank trains on its own `batch`
  /// sequences of every micro-batch (rank r takes rows [r·ΣB, (r+1)·ΣB) of the global batch), so
  /// N ranks train on what one process would with N times the batch.
  ParallelGroups groups;

  /// Sets the groups and the plan's degrees to their sizes together.
  /// \param data_parallel the data-parallel group, or null. \param tensor_parallel the
  /// tensor-parallel group, or null.
  void set_groups(dist::Communicator* data_parallel, dist::Communicator* tensor_parallel = nullptr);
};

/// The seed of the dropout masks of \p options (TrainOptions::dropout_seed).
uint64_t dropout_seed(const TrainOptions& options);

/// The sizes of the micro-batches of one step of \p options: micro_batch_sizes, or grad_accum
/// copies of batch. \throws vramlab::UsageError naming a size or K < 1.
std::vector<int64_t> step_micro_batches(const TrainOptions& options);

/// The loss scaling \p options run with: their plan's loss_scale, or the default for their
/// precision (plan::effective_loss_scale).
amp::LossScaleSpec effective_loss_scale(const TrainOptions& options);

/// One step's measurements.
/// An evaluation loop's settings (Trainer::evaluate).
struct EvalOptions {
  int64_t batches = 1;  ///< batches of B sequences of T tokens (≥ 1)
  /// torch.no_grad(): the forwards save nothing for a backward (DecoderModel::set_grad_enabled).
  bool no_grad = true;
  /// With grad: every batch's saved tensors stay until the loop ends, as `total_loss += loss`
  /// keeps each loss's graph alive; false: a batch's go when its loss is read (`loss.item()`).
  bool keep_graphs = false;
};

/// What an evaluation measured.
struct EvalResult {
  double loss = 0.0;  ///< mean cross-entropy over its batches (0 on meta)
  /// What the saved-activation stores held when the last batch's forward ended: every batch's
  /// with keep_graphs, else the last one's.
  int64_t saved_bytes = 0;
  int64_t saved_peak_bytes = 0;  ///< the largest a batch's store was during its forward
};

/// One step's measurements.
struct StepResult {
  int64_t step = 0;           ///< 1-based step number.
  double loss = 0.0;          ///< mean cross-entropy in nats (0 on meta).
  double seconds = 0.0;       ///< wall time of the whole step.
  double tokens_per_s = 0.0;  ///< B·T / seconds.
  /// The step on the device's stream clock (Note [The stream clock]): from a synchronize before
  /// it to the synchronize that reads its loss back (loss.item()), in seconds.
  double clock_seconds = 0.0;
  /// Of clock_seconds, the copy time that overlap did not hide: what was neither the compute
  /// stream's work nor the host's (host_update_seconds): the compute stream waiting for copies
  /// on other streams (the parameters' copy back, offloaded) and the host waiting for the
  /// gradients' copies before its update.
  double exposed_copy_seconds = 0.0;
  /// Of clock_seconds, with the optimizer offloaded: the host's own work while the device idles
  /// (its update unless delayed, and under ZeRO-2 its adds of later micro-batches' gradient
  /// shards).
  double host_update_seconds = 0.0;
  /// With a delayed parameter update (`--offload-dpu`): the host's update of this step, which
  /// runs on its own thread beside the next step's forward and backward (not in clock_seconds;
  /// what of it the next step could not hide is in that step's exposed_copy_seconds).
  double delayed_update_seconds = 0.0;
  /// The most bytes the step's saved-activation store held at once (requested bytes: the
  /// recompute schedule's peak, without the allocator's rounding).
  int64_t activation_peak_bytes = 0;
  /// What the store held when the forward ended (after the schedule's drops and the compression).
  int64_t activation_bytes_after_forward = 0;
  int64_t micro_batches = 1;  ///< forward/backward passes in the step
  double loss_scale = 1.0;    ///< what this step's backward multiplied the loss by
  bool found_inf = false;     ///< an unscaled gradient was inf or NaN
  bool skipped = false;       ///< the optimizer step was skipped (found_inf under a scaler)
  /// The global norm of the unscaled gradients before clipping (NaN when it was not computed:
  /// no loss scaler and no clipping).
  double grad_norm = 0.0;
  /// What this rank's communicators (data- and tensor-parallel) did during the step.
  dist::CommunicationStats communication;
};

/// Bytes of the model states a rank holds, as the allocator counts what was asked for (its
/// per-category requested bytes, free of the 512-byte rounding): what `vramlab estimate`
/// predicts to the byte.
struct ModelStateMeasured {
  int64_t parameters = 0;        ///< category parameter (ZeRO-3: the shard, nothing gathered)
  int64_t gradients = 0;         ///< category gradient
  int64_t optimizer_states = 0;  ///< category optimizer_state (master weights included)
  /// \return the sum.
  [[nodiscard]] int64_t total() const { return parameters + gradients + optimizer_states; }
};

/// Peak and current bytes per memory category, from the allocator (rounded block sizes).
struct MemoryReport {
  std::array<int64_t, memory::kMemoryCategoryCount> peak_bytes{};     ///< per category
  std::array<int64_t, memory::kMemoryCategoryCount> current_bytes{};  ///< per category
  int64_t peak_total_bytes = 0;                                       ///< allocated_bytes.all.peak
  int64_t reserved_peak_bytes = 0;  ///< reserved_bytes.all.peak (segments)
};

/// Checks the options without allocating anything, as the Trainer does first.
/// \throws vramlab::UsageError naming the bad value: the model's shapes, --batch, --seq (within
/// the model's context), an optimizer the runtime does not implement.
void validate(const TrainOptions& options);

/// The recompute schedule \p options ask for, made for their model, batch and sequence.
/// \throws vramlab::UsageError as validate(), or for a budget no schedule fits.
recompute::RecomputeSchedule recompute_schedule(const TrainOptions& options);

/// The analytic estimate of one step of \p options: `vramlab estimate` for their precision,
/// optimizer, ZeRO stage and data- and tensor-parallel degrees (one rank's bytes), the largest
/// micro-batch and sequence T.
/// \throws vramlab::UsageError as validate().
estimate::Estimate estimate_step(const TrainOptions& options);
/// As estimate_step(options), for \p data_parallel and \p tensor_parallel ranks instead of the
/// groups' sizes (before the groups exist, e.g. to size simulated ranks).
/// \throws vramlab::UsageError as validate() apart from the groups' sizes: a degree the model
/// cannot take, or an optimizer with per-tensor states under ZeRO.
estimate::Estimate estimate_step(const TrainOptions& options, int64_t data_parallel,
                                 int64_t tensor_parallel);
/// What one rank of a step of \p options holds at once at the end of its forward pass: its
/// parameters and saved activations (with checkpointing, the schedule's activation peak; with
/// compression, the bytes held when the forward ends). A lower bound on the step's peak, so a
/// host-memory check on it never refuses a step that fits.
/// \param options the run. \param schedule recompute_schedule(options).
/// \param data_parallel N. \param tensor_parallel t. \return the bytes.
/// \throws vramlab::UsageError as estimate_step().
int64_t step_host_bytes(const TrainOptions& options, const recompute::RecomputeSchedule& schedule,
                        int64_t data_parallel, int64_t tensor_parallel);

/// A model, an optimizer, a token stream and the step loop.
class Trainer {
 public:
  /// Allocates the parameters and the (B, T) input and target buffers (in the training phase
  /// setup). To trace every allocation, turn the allocator's history on before.
  /// \p runtime must outlive the trainer.
  /// \throws vramlab::UsageError naming a bad option or an optimizer the runtime does not
  /// implement; memory::OutOfMemoryError when the parameters do not fit.
  Trainer(nn::Runtime& runtime, const TrainOptions& options);

  /// Runs zero-grad, then forward and backward of each micro-batch, then the loss scaler's check
  /// and the optimizer step (phase optimizer, its states in module "optimizer"; skipped on an
  /// inf/NaN under a scaler) on the next batch, telling the observers about each phase.
  /// \throws memory::OutOfMemoryError (the step's activations, temporaries, gathered parameters
  /// and unit gradients are freed first). A step that throws is undone as far as later steps can
  /// tell: the token stream, the dropout stream and the loss scaler return to where the step
  /// found them, so the next step (e.g. with a smaller batch, set_batch) trains on what a run
  /// without the failure would. Its partial gradients are released under grads_to_none (and when
  /// the step allocated them), else kept for the next zero-grad to clear.
  StepResult step();

  /// Changes B, the sequences per micro-batch of the next steps, as a training loop does after an
  /// out-of-memory error: the (ΣB, T) input and target buffers are reallocated (phase setup) and
  /// the recompute schedule is made again for the new batch.
  /// \param batch B ≥ 1.
  /// \throws vramlab::UsageError naming \p batch when validate() refuses it, or when the run has
  /// explicit micro-batch sizes (TrainOptions::micro_batch_sizes); memory::OutOfMemoryError when
  /// the new buffers do not fit (the trainer then keeps its batch).
  void set_batch(int64_t batch);
  /// Changes T, the tokens per sequence of the next steps, as a loop over batches of varying
  /// length does: the input and target buffers are reallocated and the recompute schedule made
  /// again, as set_batch() does for B. Each length allocates activations of its own sizes, which is
  /// how varying lengths fragment the caching allocator.
  /// \param seq 1 ≤ T ≤ the model's context.
  /// \throws vramlab::UsageError naming \p seq when validate() refuses it;
  /// memory::OutOfMemoryError when the new buffers do not fit (the trainer keeps its T).
  void set_seq(int64_t seq);
  /// Runs an evaluation loop of \p options.batches forwards (phase "evaluation") on a token
  /// stream of its own (the training stream is not advanced), without or with grad; nothing is
  /// updated. PyTorch users meet its out-of-memory errors as "evaluation without torch.no_grad()"
  /// and "`total_loss += loss` across the loop" (keep_graphs).
  /// \throws vramlab::UsageError for batches < 1, keep_graphs with no_grad, or ZeRO-3 (whose
  /// gathers the step's backward releases); memory::OutOfMemoryError when full (every store of
  /// the loop is freed first).
  EvalResult evaluate(const EvalOptions& options);

  /// Registers an observer of every later step's phases (see nn::StepObservers).
  /// \param observer told in registration order; must outlive its registration.
  void add_observer(nn::StepObserver& observer) { model_->observers().add(observer); }
  /// Unregisters every registration of \p observer.
  void remove_observer(const nn::StepObserver& observer) { model_->observers().remove(observer); }

  /// \return rounded block sizes (the allocator's view), not requested bytes.
  [[nodiscard]] MemoryReport memory_report() const;
  /// \return the model states held now (after a step: parameters, gradients until the next
  /// zero-grad, optimizer states once the first step made them).
  [[nodiscard]] ModelStateMeasured model_state() const;
  /// Under `--offload optimizer`, the model states the host holds (Note [Optimizer offload]): the
  /// optimizer states and fp32 master, and the staged copies of this rank's gradients and
  /// parameters the update reads and writes; requested bytes, as model_state(), pinned or not.
  /// \return them, or nothing without optimizer offload.
  [[nodiscard]] std::optional<ModelStateMeasured> host_model_state() const;
  /// Of host_model_state(), what sits in the device's pinned pool (`--offload-pin-memory on`).
  /// \param blocks the blocks' bytes (each a power of two: what the machine gives up) rather
  /// than the bytes asked for. \return them (zeros with nothing pinned).
  [[nodiscard]] ModelStateMeasured host_pinned_model_state(bool blocks) const;
  /// \return the runtime the optimizer's states live on: the host's under `--offload optimizer`,
  /// else the device's.
  [[nodiscard]] nn::Runtime& optimizer_runtime() { return host_ ? *host_ : runtime_; }
  /// \return the data-parallel strategy, or null without a data-parallel group.
  [[nodiscard]] dist::DataParallel* data_parallel() { return data_parallel_.get(); }
  /// Its observers() are the ones add_observer registers with.
  [[nodiscard]] nn::DecoderModel& model() { return *model_; }
  /// \return the optimizer (its states exist after the first step).
  [[nodiscard]] optim::Optimizer& optimizer() { return *optimizer_; }
  /// \return the (ΣB, T) int32 token ids of the current step, in the runtime's memory.
  [[nodiscard]] const memory::Tensor& inputs() const { return inputs_; }
  /// \return the (ΣB, T) int32 next tokens of the current step, in the runtime's memory.
  [[nodiscard]] const memory::Tensor& targets() const { return targets_; }
  /// Entropies for the report: the loss floor the model can reach.
  [[nodiscard]] const SyntheticTokenStream& data() const { return data_; }
  /// The per-layer plan every step runs with (from TrainOptions::recompute).
  [[nodiscard]] const recompute::RecomputeSchedule& schedule() const { return schedule_; }
  /// As given to the constructor (validated).
  [[nodiscard]] const TrainOptions& options() const { return options_; }
  /// The loss scaler (disabled for `--loss-scale none`).
  [[nodiscard]] const amp::GradScaler& scaler() const { return scaler_; }

 private:
  StepResult step_unguarded();  // step() without the cleanup after an out-of-memory error
  // set_batch and set_seq: the buffers and schedule of `options`, all made before any is kept.
  void reshape(TrainOptions options);

  nn::Runtime& runtime_;
  TrainOptions options_;
  SyntheticTokenStream data_;
  // The host under `--offload optimizer` (before model_ and optimizer_: offloaded parameters and
  // the states are freed before it).
  std::unique_ptr<nn::Runtime> host_;
  std::unique_ptr<nn::DecoderModel> model_;
  std::unique_ptr<dist::DataParallel> data_parallel_;  // with a data-parallel group
  std::vector<memory::Tensor> kept_outputs_;  // --keep-outputs: every step's logits (B, T, V)
  std::unique_ptr<optim::Optimizer> optimizer_;
  // `--offload optimizer --offload-overlap on` on one rank: copies each unit's gradients as its
  // backward ends (Note [Gradient streaming]); null otherwise.
  std::unique_ptr<optim::GradientStreaming> streaming_;
  // `--offload-activations on`: the stream the saved tensors' copies go on (made once).
  stream::StreamId activation_stream_ = 0;
  memory::Tensor inputs_;              // (ΣB, T) int32 token ids, every micro-batch's
  memory::Tensor targets_;             // (ΣB, T) int32 next tokens
  // Pinned, as a DataLoader with pin_memory=True stages its batches.
  memory::HostBuffer host_inputs_;   // (N·ΣB, T) int32, the global batch, N data-parallel ranks
  memory::HostBuffer host_targets_;  // (N·ΣB, T) int32
  int64_t steps_done_ = 0;
  recompute::RecomputeSchedule schedule_;
  std::vector<int64_t> micro_batch_sizes_;  // (K) sequences per micro-batch
  amp::GradScaler scaler_;
};

/// Median of per-step times (\p seconds not empty; the mean of the middle two for an even count):
/// robust to the slow first step, which allocates the optimizer states.
double median(std::vector<double> seconds);

}  // namespace vramlab::train
