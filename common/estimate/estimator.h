/// \file
/// \brief The analytic training-memory estimator behind `vramlab estimate`: bytes per device for
/// parameters, gradients, optimizer states and activations, each with its formula's source.
///
/// Model states follow ZeRO (Rajbhandari et al. 2020) generalised by bytes per parameter (see
/// model_state_memory.h): with P, G, O the parameter, gradient and optimizer-state (incl. master
/// weights) bytes of the parameters one tensor-parallel rank holds,
///   stage 0 (DP): P + G + O;  stage 1 (P_os): P + G + O/Nd;  stage 2 (P_os+g): P + (G + O)/Nd;
///   stage 3 (P_os+g+p): (P + G + O)/Nd,
/// each partition rounded up to a whole byte. Mixed-precision Adam gives 2Ψ + 2Ψ + 12Ψ, ZeRO's
/// Figure 1. Under tensor parallelism a rank holds, with the model's shapes, exactly
/// ModelConfig::rank_parameter_count(t): Megatron's column- and row-parallel weights split by t,
/// the norms, embeddings, LM head and row-parallel biases whole (what the runtime allocates);
/// with Ψ alone, Ψ/t. The optimizers' per-tensor extras (Adam-mini's v blocks, Adafactor's
/// factors, 8-bit AdamW's absmax) are divided by t in both cases. Activations follow Korthikanti
/// et al. 2022 Table 2 × L (see activation_memory.h). Gradient accumulation does not change
/// per-device bytes: activations belong to one micro-batch and gradients accumulate in place.
///
/// Offload: `plan.offload.optimizer` moves the (partitioned) optimizer states, master weights
/// included, to host memory; under ZeRO stages 2 and 3 each reduced gradient shard goes to the
/// host as the backward makes it, so the GPU keeps no gradient (DeepSpeed's 2Ψ GPU bytes); under
/// the other stages the GPU keeps its gradients until they are copied. `plan.offload.parameters`
/// needs ZeRO stage 3 (as DeepSpeed's offload_param does): the partition lives on the host and
/// the GPU keeps none of it between uses; a unit exists on the GPU while it is gathered, working
/// memory as under ZeRO-3 without offload (not a model state: not counted here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/estimate/activation_memory.h"
#include "common/estimate/model_state_memory.h"
#include "common/model/model_config.h"
#include "common/plan/plan.h"
#include "common/recompute/activation_compression.h"
#include "common/recompute/recompute_schedule.h"
#include "common/recompute/recompute_spec.h"

namespace vramlab::estimate {

/// The plan `vramlab estimate` starts from: mixed-bf16 (the precision the papers' tables count),
/// everything else the plan's defaults.
plan::Plan default_estimate_plan();

/// What to estimate: a model (or a parameter count), a micro-batch and a sequence length, and the
/// plan that trains them (common/plan/plan.h), named as the trainer names it. The plan's
/// learning rate, clipping, loss scale, stochastic rounding and dropout change no byte; its
/// grad_accum is echoed (activations belong to one micro-batch, gradients accumulate in place).
///
/// The plan's parallel layout: Nd = plan.parallel.data_parallel, t = tensor_parallel, ZeRO stage,
/// sequence parallelism; its activation storage changes only the runtime column's bytes after
/// forward (the paper's formulas have no such term); flash attention saves no (B, H, T, T)
/// tensor, so the paper's column uses its selective row (the s² term gone) and the runtime
/// column saves lse instead of att. Every recompute spec applies: Korthikanti et al.'s Table 2
/// has rows for none, selective and full; every:K, sqrt and budget schedules apply its per-layer
/// bytes through the planner's peak model (recompute::activation_peak_bytes).
struct EstimateInputs {
  std::optional<ModelConfig> model;  ///< shapes; without them only model states are estimated.
  int64_t parameter_count = 0;       ///< Ψ when \ref model is empty (ignored otherwise).
  int64_t micro_batch = 1;           ///< b, sequences per micro-batch per device.
  int64_t seq = 0;                   ///< s; 0 means the model's max_seq.
  plan::Plan plan = default_estimate_plan();  ///< how the model is trained.
};

/// One component's bytes on one device and where its formula comes from.
struct ComponentEstimate {
  int64_t bytes = 0;   ///< bytes per device.
  std::string source;  ///< the formula and its source.
};

/// The estimate for one device.
struct Estimate {
  int64_t parameter_count = 0;             ///< Ψ of the whole model.
  int64_t seq = 0;                         ///< the sequence length used (0 without a model).
  ComponentEstimate parameters;            ///< working-precision parameters on the GPU.
  ComponentEstimate gradients;             ///< gradients on the GPU.
  ComponentEstimate optimizer_states;      ///< optimizer states incl. master weights, on the GPU.
  int64_t master_weight_bytes = 0;         ///< the master-weight part of optimizer_states (GPU).
  ComponentEstimate activations;           ///< Korthikanti et al. activations (0 without a model).
  bool has_activations = false;            ///< false for a parameter-count-only estimate.
  int64_t activation_bytes_per_layer = 0;  ///< Korthikanti et al. bytes of one layer.
  /// What this workbook's runtime saves (runtime_activations.h), f32 for fp32 training and
  /// 2-byte otherwise, one device, no TP/SP, no recompute; 0 without a model.
  int64_t runtime_activation_bytes = 0;
  int64_t runtime_activation_bytes_per_layer = 0;  ///< of one Block.
  std::string runtime_activation_source;           ///< what the runtime column counts.
  /// The schedule inputs.recompute makes for the runtime's chain (runtime_chain_costs), and the
  /// most bytes of saved activations the runtime holds under it (what `vramlab train` measures as
  /// activation_peak_bytes; f32 for fp32 training, 2-byte otherwise); 0 without a model.
  recompute::RecomputeSchedule runtime_schedule;
  int64_t runtime_schedule_peak_bytes =
      0;  ///< see runtime_schedule (offloaded: OffloadedActivationBytes::device_peak)
  double recomputed_forward_fraction = 0.0;  ///< of the runtime's forward FLOPs (see above)
  /// What the runtime's store holds when the forward ends under the schedule and the compression
  /// (fp32; what `vramlab train` reports as activation_bytes_after_forward).
  int64_t runtime_bytes_after_forward = 0;
  /// Under `--offload-activations on`: the saved activations in pinned host memory when the
  /// forward ends, in power-of-two blocks (runtime_offloaded_activation_bytes), and their own
  /// bytes; not in cpu_offload_bytes, which counts model states. 0 without the offload.
  int64_t host_activation_bytes = 0;
  int64_t host_activation_requested_bytes = 0;  ///< see host_activation_bytes
  int64_t total_bytes = 0;         ///< parameters + gradients + optimizer_states + activations.
  int64_t cpu_offload_bytes = 0;   ///< bytes moved to host memory per device (the three below).
  std::string cpu_offload_source;  ///< what is on the host.
  /// Of cpu_offload_bytes: the optimizer states (fp32 master included) on the host.
  int64_t host_optimizer_state_bytes = 0;
  /// Of cpu_offload_bytes: the gradients the host's optimizer step reads, staged there in their
  /// own dtype (the runtime's Note [Optimizer offload]; ZeRO-Offload's 16-bit gradient buffer).
  int64_t host_gradient_bytes = 0;
  /// Of cpu_offload_bytes: the parameters on the host, offloaded (`--offload params`) or, with
  /// the optimizer only, the staged copy its step writes before the copy back to the device.
  int64_t host_parameter_bytes = 0;
  /// Under `--offload-optimizer-device nvme`: the optimizer states' files on the drive, one per
  /// state and ZeRO-3 unit, each rounded up to 4096 bytes for O_DIRECT (host_optimizer_state_bytes
  /// is then the host's staging: two units' states); 0 otherwise.
  int64_t nvme_optimizer_state_bytes = 0;
  /// Under `--offload-param-device nvme`: the parameters' files, one per ZeRO-3 unit shard, each
  /// rounded up to 4096 bytes (host_parameter_bytes is then the one unit's shard the host holds
  /// at a time, for a fetch or an update); 0 otherwise.
  int64_t nvme_parameter_bytes = 0;
  /// Under `--offload-pin-memory on` (the default with the optimizer offloaded): of
  /// cpu_offload_bytes, the page-locked buffers (the staged gradients and parameters, and the
  /// fp32 master unless it is on NVMe) as requested, and the blocks that hold them, each a power
  /// of two (PyTorch's pinned allocator): what the machine gives up. 0 otherwise.
  int64_t host_pinned_requested_bytes = 0;
  int64_t host_pinned_bytes = 0;   ///< see host_pinned_requested_bytes
  ModelStateBytes unpartitioned;   ///< model states of all Ψ on one device (bytes/param source).
};

/// Validates \p inputs and estimates bytes per device.
/// \param inputs the run to estimate.
/// \return the estimate.
/// \throws vramlab::UsageError naming the bad value: sizes ≤ 0, a ZeRO stage outside 0–3,
/// Nd < 1, t < 1 or t not dividing heads, kv_heads or ffn_hidden, SP with t not dividing s, s
/// beyond a learned position table, parameter offload below stage 3, an invalid model, or an
/// overflow.
Estimate estimate_memory(const EstimateInputs& inputs);

/// Parses a parameter count: an integer ("124439808"), scientific notation ("7.5e9") or a
/// suffix K/M/B/T (case-insensitive: "7.5B", "124m"). The value must be a positive whole number.
/// \param text the text. \return the count.
/// \throws vramlab::UsageError "invalid parameter count 'TEXT' ..." otherwise.
int64_t parse_parameter_count(std::string_view text);

}  // namespace vramlab::estimate
