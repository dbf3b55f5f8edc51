/// \file
/// \brief The planner's search: every combination of the techniques the runtime has, priced by
/// step_cost.h, for the one that fits the device and the host at the least predicted step time;
/// with why (the constraint that ruled out the faster plans, the largest category left), the
/// runner-up, and, when nothing fits, what would have to change.
///
/// The search is exhaustive over its space (a few thousand candidates for one GPU count; each is
/// priced once), so the plan it returns is the cheapest the cost model knows of: the planner's
/// errors are its cost model's, which `vramlab plan` measures by running the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/planner/step_cost.h"

namespace vramlab::planner {

/// Where the optimizer's states and the parameters may live (DeepSpeed's offload_optimizer and
/// offload_param, with their device).
struct OffloadChoice {
  bool optimizer = false;   ///< the states (and fp32 master) on the host
  bool parameters = false;  ///< the parameter shard on the host too (ZeRO-3)
  plan::OffloadDevice device = plan::OffloadDevice::cpu;  ///< host memory or NVMe files
  bool operator==(const OffloadChoice&) const = default;  ///< field by field
};
/// \return "none", "optimizer", "both", "optimizer-nvme" or "both-nvme".
std::string offload_choice_name(const OffloadChoice& choice);
/// \param text one of offload_choice_name()'s spellings. \return the choice.
/// \throws vramlab::UsageError naming \p text and the spellings otherwise.
OffloadChoice parse_offload_choice(std::string_view text);

/// The values each knob may take. An empty list means the knob's default set (default_space()).
struct SearchSpace {
  std::vector<plan::Precision> precisions;                ///< `--precisions`
  std::vector<plan::RecomputeSpec> recomputes;            ///< `--recomputes`
  std::vector<plan::ActivationCompression> compressions;  ///< saved activations' storage
  std::vector<bool> activation_offload;                   ///< `--activation-offload`
  std::vector<plan::AttentionKind> attentions;            ///< `--attentions`
  std::vector<plan::Optimizer> optimizers;                ///< `--optimizers`
  std::vector<plan::ZeroStage> zero_stages;               ///< `--zero`
  std::vector<int64_t> tensor_parallel;                   ///< `--tp`
  std::vector<OffloadChoice> offloads;                    ///< `--offloads`
  std::vector<int64_t> loss_chunks;                       ///< `--loss-chunks`
};

/// The problem: train \p model at sequence \p seq with \p global_batch sequences per optimizer
/// step on \p machine.
struct Problem {
  ModelConfig model;         ///< the model, with its shapes
  int64_t seq = 0;           ///< T
  int64_t global_batch = 0;  ///< sequences per step over every data-parallel rank (N·K·B)
  Machine machine;           ///< the GPUs, their links and the host
  SearchSpace space;  ///< what may vary; unset knobs take default_space()'s values
  plan::Plan base;    ///< the plan every candidate starts from (learning rate, clipping, ...)
};

/// The default values of every knob for \p problem: fp32 and mixed precision in bf16 (fp16 on a
/// device whose bf16 rate is its fp32 rate: no bf16 tensor cores); recompute none, selective,
/// every:2, sqrt and full; no activation compression (it changes the gradients; opt in); saved
/// activations on the device or offloaded; naive and flash attention; AdamW (another optimizer
/// changes the training; opt in); ZeRO 0 to 3; every tensor-parallel degree that divides the GPUs
/// within a node; offload none, optimizer, both, and with a drive their NVMe forms; the loss
/// whole or in 8 chunks.
SearchSpace default_space(const Problem& problem);

/// Every candidate of \p problem's space (unset knobs as default_space()), in the order ties are
/// broken (simpler techniques and larger micro-batches first), whether the runtime runs it or
/// not. Micro-batches: every B dividing the per-rank batch global_batch / N, with K = that / B.
/// On one data-parallel rank a ZeRO stage is listed only where it differs from DDP: stage 2 with
/// the optimizer offloaded, stage 3 with the parameters.
std::vector<Candidate> enumerate_candidates(const Problem& problem);

/// One priced candidate.
struct Priced {
  Candidate candidate;       ///< the plan and its micro-batch
  StepMemory memory;         ///< its predicted bytes
  StepTime time;             ///< its predicted step time
  bool fits_device = false;  ///< memory.device_peak ≤ the device's capacity
  bool fits_host = false;    ///< host RAM within the budget, and no NVMe without a drive
  /// \return fits_device and fits_host.
  [[nodiscard]] bool fits() const { return fits_device && fits_host; }
};

/// \return \p candidate priced on \p problem's machine. \throws vramlab::UsageError as
/// predict_memory() for a candidate the runtime cannot run.
Priced price(const Problem& problem, const Candidate& candidate);

/// What ruled out the plans predicted faster than the chosen one.
enum class Binding {
  none,           ///< no plan is faster: the fastest plan fits
  device_memory,  ///< every faster plan overflows the device
  host_memory,    ///< every faster plan overflows the host (or needs a drive)
  both,           ///< some overflow the device, the others the host
};
/// \return "none", "device memory", "host memory" or "device and host memory".
std::string binding_name(Binding binding);

/// When nothing fits: what would make something fit, each found by pricing again.
struct Shortfall {
  int64_t least_device_bytes = 0;  ///< the least predicted device peak of any runnable candidate
  /// The smallest preset whose capacity holds least_device_bytes (empty: none does).
  std::string larger_preset;
  /// The least host RAM per node among candidates that fit the device (0: none fits the device).
  int64_t least_host_bytes = 0;
  /// The fewest GPUs (doubling, up to 64x) at which a plan fits, the global batch unchanged; 0
  /// when none found.
  int64_t gpus_that_fit = 0;
};

/// The search's outcome.
struct SearchResult {
  std::optional<Priced> chosen;        ///< the fitting candidate of least predicted time
  std::optional<Priced> runner_up;     ///< the cheapest fitting one whose techniques differ
  std::optional<Priced> fastest;       ///< the runnable candidate of least time, fitting or not
  Binding binding = Binding::none;     ///< why nothing faster than chosen was taken
  int64_t candidates = 0;              ///< enumerated
  int64_t runnable = 0;                ///< of them, plans the runtime runs
  int64_t fitting = 0;                 ///< of them, plans that fit
  std::optional<Shortfall> shortfall;  ///< set when nothing fits
};

/// Searches \p problem (file comment). \throws vramlab::UsageError naming a bad value: T outside
/// the model's context, a global batch < 1, GPUs < 1, a device without a capacity or a roofline.
SearchResult search_plans(const Problem& problem);

/// \return whether \p a and \p b use the same techniques (their plans equal once the micro-batch
/// split is set aside).
bool same_techniques(const Candidate& a, const Candidate& b);

}  // namespace vramlab::planner
