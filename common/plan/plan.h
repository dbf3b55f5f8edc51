/// \file
/// \brief Plan: one value for *how* a model is trained — precision and loss scaling, the
/// recompute schedule, where saved activations live, the attention kernel, the optimizer, the
/// micro-batches, the parallel layout, offload and dropout.
///
/// The trainer runs a {model, Plan, micro-batch B, sequence T} (train::TrainOptions); the
/// estimator estimates the same value (estimate::EstimateInputs); `vramlab train --json` prints
/// the plan it ran, and `--plan FILE` reads one back (PlanFlags, plan_flags.h), so a plan printed
/// by one command is run or estimated by another. The fields are named as their flags are:
/// `amp.precision` is `--precision`, `optimizer.max_grad_norm` is `--clip-grad-norm`.
///
/// In JSON a plan is an object with the struct's nesting and field names, and every enum by the
/// name its flag takes:
///
///     {"amp": {"precision": "mixed-bf16", "fp32_grads": false, "stochastic_rounding": false,
///              "loss_scale": null},
///      "recompute": "every:2", "activations": {"compression": "none", "offload": false,
///                                              "loss_chunks": 1}, "attention": "flash",
///      "optimizer": {"name": "adamw", "learning_rate": 0.001, ...}, "batch": {...},
///      "parallel": {...}, "offload": {...}, "dropout": {...}}
///
/// Reading one, a key that is missing keeps the value the reader started from (a command's
/// defaults), and a key it does not know is an error naming it: a typo is not a silent default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/plan/recompute_spec.h"
#include "common/plan/techniques.h"

namespace vramlab::plan {

/// Storage precision and loss scaling (torch.autocast and GradScaler).
struct AmpPlan {
  Precision precision = Precision::fp32;  ///< `--precision`
  bool fp32_grads = false;                ///< `--fp32-grads`: fp32 gradients under mixed precision
  /// `--stochastic-rounding`: pure bf16's optimizer rounds updated parameters stochastically.
  bool stochastic_rounding = false;
  /// `--loss-scale`; unset means the precision's default (dynamic for mixed-fp16, none otherwise;
  /// effective_loss_scale()).
  std::optional<LossScaleSpec> loss_scale;

  bool operator==(const AmpPlan&) const = default;  ///< field by field
};

/// Where and how the activations a layer keeps for its backward are held.
struct ActivationPlan {
  /// `--compress-activations`: int8 with an absmax scale per tensor or per block.
  ActivationCompression compression = ActivationCompression::none;
  /// `--offload-activations on`: each layer's saved tensors go to pinned host memory on a copy
  /// stream once its forward is done with them, and come back one layer ahead of its backward
  /// (Note [Activation offload] in activation_offload.cpp). With a
  /// recompute schedule only the kept checkpoints travel.
  bool offload = false;
  /// `--loss-chunks K`: the cross-entropy runs over K slices of the B·T rows and saves no
  /// (B, T, V) probabilities; the backward makes each slice's logits again (Note [Chunked
  /// cross-entropy] in decoder_model.cpp). 1: the whole loss at once.
  int64_t loss_chunks = 1;

  bool operator==(const ActivationPlan&) const = default;  ///< field by field
};
/// The most chunks `--loss-chunks` takes: more than any B·T a run has rows for would only be
/// slices of one row.
inline constexpr int64_t kMaxLossChunks = int64_t{1} << 24;

/// The optimizer and its hyperparameters.
struct OptimizerPlan {
  Optimizer name = Optimizer::adamw;  ///< `--optimizer`
  float learning_rate = 1e-3f;        ///< `--lr` (> 0)
  float weight_decay = 0.0f;          ///< decoupled (AdamW) or L2 (SGD) weight decay (≥ 0)
  /// `--clip-grad-norm`: the largest global gradient norm after the unscale
  /// (torch.nn.utils.clip_grad_norm_); 0 turns clipping off.
  float max_grad_norm = 0.0f;
  EightBitOptions eight_bit;  ///< `--block-size`, `--min-8bit-size`, `--fp32-embeddings`

  bool operator==(const OptimizerPlan&) const = default;  ///< field by field
};

/// How one optimizer step's sequences are split into forward/backward passes.
struct BatchPlan {
  /// `--grad-accum K`: K micro-batches of B sequences per optimizer step.
  int64_t grad_accum = 1;
  /// Micro-batches of different sizes, one entry per micro-batch (each ≥ 1); when not empty it
  /// replaces B × grad_accum (each token then weighs 1/Σ tokens).
  std::vector<int64_t> micro_batch_sizes;

  bool operator==(const BatchPlan&) const = default;  ///< field by field
};

/// How the run is spread over ranks: N data-parallel groups of t tensor-parallel ranks.
struct ParallelPlan {
  int64_t data_parallel = 1;        ///< N (`--dp`; `vramlab train` counts its ranks)
  ZeroStage zero = ZeroStage::ddp;  ///< `--zero`: what the data-parallel ranks shard
  int64_t tensor_parallel = 1;      ///< t (`--tp`, Megatron)
  bool sequence_parallel = false;   ///< `--sp` (Korthikanti et al.; estimator only)
  /// `--prefetch`: ZeRO-3 gathers the next unit's parameters with the current one's.
  bool prefetch = false;

  bool operator==(const ParallelPlan&) const = default;  ///< field by field
};

/// Where an offloaded state lives: host memory, or files on an NVMe drive (DeepSpeed's
/// `offload_optimizer.device` / `offload_param.device`).
enum class OffloadDevice { cpu, nvme };
/// `--offload-optimizer-device`'s values: cpu, nvme. \throws vramlab::UsageError naming another.
OffloadDevice parse_offload_device(std::string_view text);
/// \return \p device as parse_offload_device takes it.
std::string_view offload_device_name(OffloadDevice device);

/// What lives in host memory instead of on the device (`--offload`). The trainer runs the
/// optimizer offloaded (ZeRO-Offload), with or without its delayed parameter update, and under
/// ZeRO-3 the parameters with it (`both`, ZeRO-Infinity: each gather fetches its unit's shard).
struct OffloadPlan {
  bool optimizer = false;   ///< the (partitioned) optimizer states, master weights included
  bool parameters = false;  ///< the parameter partition (ZeRO stage 3 only)
  /// With the optimizer offloaded: each block's gradients go to the host on a copy stream as
  /// soon as its backward ends, hidden behind the blocks still running (ZeRO-Offload), instead of
  /// all of them after the backward (`--offload-overlap off`).
  bool overlap = true;
  /// `--offload-dpu N`: from step N on (1-based), ZeRO-Offload's one-step delayed parameter
  /// update (Ren et al. §5.2): the host's update of step i runs beside step i + 1's forward and
  /// backward, which use the parameters of step i − 1, so the update's time hides and the
  /// gradients are one step stale. Steps before N update at once (the paper's first N − 1 steps;
  /// its experiments start at 40). 0 (`off`, the default): never.
  int64_t delay_update_from = 0;
  /// `--offload-copy-back tiled`: the host updates the parameters tile by tile (of
  /// kCopyBackTileElements) and each finished tile's 16-bit parameters go back while it updates
  /// the next, so only the last tile's copy waits after the update (ZeRO-Offload's CPU-Adam,
  /// §5.1); `whole` (false, the default) copies them all once the update ends.
  bool tiled_copy_back = false;
  /// `--offload-optimizer-device nvme`: the offloaded optimizer states (master weights included)
  /// live in files of the NVMe tier and come to host memory one ZeRO-3 unit at a time for the
  /// update (ZeRO-Infinity; DeepSpeed's `offload_optimizer.device: nvme`, which it allows under
  /// stage 3 only, as here); `cpu` (the default) keeps them all in host memory.
  OffloadDevice optimizer_device = OffloadDevice::cpu;
  /// `--offload-param-device nvme`: the offloaded parameters (each rank's 16-bit shard) live in
  /// files of the NVMe tier, one per ZeRO-3 unit, read for each fetch and written after each
  /// update (ZeRO-Infinity; DeepSpeed's `offload_param.device: nvme`). Here it needs the
  /// optimizer's states on NVMe too: the update writes a unit's parameters where it swaps its
  /// states. `cpu` (the default) keeps the shard in host memory.
  OffloadDevice param_device = OffloadDevice::cpu;
  /// `--offload-pin-memory`: with the optimizer offloaded, the host's buffers the link's copies
  /// touch (the staged gradients and parameters) and the fp32 master are page-locked, each block
  /// rounded up to a power of two as PyTorch's pinned allocator does (DeepSpeed's `pin_memory`,
  /// true by default, pins the same buffers); off: pageable, exact sizes.
  bool pin_memory = true;

  bool operator==(const OffloadPlan&) const = default;  ///< field by field
};
/// The tile of `--offload-copy-back tiled`, in parameters: DeepSpeed's CPU-Adam's TILE, 128·2^20
/// elements (csrc/includes/cpu_adam.h).
inline constexpr int64_t kCopyBackTileElements = int64_t{128} << 20;

/// `--offload`'s values: none, optimizer, params, both. \throws vramlab::UsageError naming an
/// unknown one.
OffloadPlan parse_offload(std::string_view text);
/// \return \p offload as parse_offload takes it.
std::string_view offload_name(const OffloadPlan& offload);
/// `--offload-dpu`'s values: off (0), or the step N ≥ 1 from which the update is delayed.
/// \throws vramlab::UsageError naming anything else.
int64_t parse_delay_update(std::string_view text);
/// \return \p delay_update_from as parse_delay_update takes it.
std::string delay_update_name(int64_t delay_update_from);

/// Dropout of the attention probabilities and of both residual branches (GPT-2's attn_pdrop =
/// resid_pdrop). The masks' seed is the run's, not the plan's.
struct DropoutPlan {
  float p = 0.0f;  ///< `--dropout`, in [0, 1); 0 runs no dropout at all
  /// A re-run (checkpointed) forward replays the masks its first forward drew.
  bool preserve_rng_state = true;

  bool operator==(const DropoutPlan&) const = default;  ///< field by field
};

/// How a model is trained (file comment).
struct Plan {
  AmpPlan amp;                                     ///< precision and loss scaling
  RecomputeSpec recompute;                         ///< `--recompute`
  ActivationPlan activations;                      ///< saved-activation storage
  AttentionKind attention = AttentionKind::naive;  ///< `--attention`
  OptimizerPlan optimizer;                         ///< the optimizer
  BatchPlan batch;                                 ///< micro-batches
  ParallelPlan parallel;                           ///< ranks
  OffloadPlan offload;                             ///< host-resident state
  DropoutPlan dropout;                             ///< dropout

  bool operator==(const Plan&) const = default;  ///< field by field
};

/// \throws vramlab::UsageError unless 0 ≤ \p p < 1, naming p. PlanFlags checks `--dropout` as
/// typed (a double that would round to 1.0f is still refused as typed), validate() the stored
/// value.
void check_dropout_probability(double p);

/// Checks what a plan says on its own (without a model or ranks).
/// \throws vramlab::UsageError naming the flag and the value: a learning rate that is not a
/// finite number > 0, a weight decay or clipping norm that is not finite and ≥ 0, a dropout
/// outside [0, 1), 8-bit options validate() refuses, K outside [1, 2^24], a micro-batch < 1, a
/// parallel degree < 1, `--prefetch` or parameter offload below ZeRO stage 3, a delayed update
/// (`--offload-dpu`) before step 1 or without the optimizer offloaded, a tiled copy back
/// without the optimizer offloaded.
void validate(const Plan& plan);

/// The loss scaling \p amp runs with: its loss_scale, or the default for its precision
/// (dynamic from 2^16 for mixed-fp16, none otherwise).
LossScaleSpec effective_loss_scale(const AmpPlan& amp);

/// \param plan a plan. \return it as JSON (file comment), every field present.
nlohmann::json to_json(const Plan& plan);

/// Reads a plan from JSON over \p defaults (file comment).
/// \param j an object. \param defaults what a missing key keeps.
/// \return the plan, validated. \throws vramlab::UsageError naming the key (e.g.
/// "plan.optimizer.name") and the value for an unknown key, a wrong type or a bad value.
Plan plan_from_json(const nlohmann::json& j, const Plan& defaults = {});

/// Reads the plan of a file: a plan object, or any object with a "plan" key (what
/// `vramlab train --json` and `vramlab estimate --json` print).
/// \param path the file. \param defaults what a missing key keeps. \return the plan.
/// \throws vramlab::UsageError naming \p path when it cannot be read or is not such JSON.
Plan read_plan_file(const std::string& path, const Plan& defaults = {});

}  // namespace vramlab::plan
