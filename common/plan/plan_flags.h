/// \file
/// \brief PlanFlags: the technique flags of `vramlab train`, `vramlab estimate` and the lessons,
/// registered once with one help text and CLI11's validators, read into one plan::Plan.
///
/// The plan a command runs is built in three layers: the command's defaults, then the plan of
/// `--plan FILE` (a plan object, or the output of `vramlab train --json` that holds one), then
/// each technique flag given on the command line. So `vramlab train --plan run.json --lr 3e-4`
/// reruns a printed plan with one change. A command registers only the flags it acts on.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "common/plan/plan.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace vramlab::plan {

/// One technique flag (its spelling in the comment).
enum class PlanFlag {
  plan_file,                 ///< --plan FILE
  precision,                 ///< --precision
  fp32_grads,                ///< --fp32-grads
  stochastic_rounding,       ///< --stochastic-rounding
  loss_scale,                ///< --loss-scale
  recompute,                 ///< --recompute
  compress_activations,      ///< --compress-activations
  offload_activations,       ///< --offload-activations
  loss_chunks,               ///< --loss-chunks
  attention,                 ///< --attention
  optimizer,                 ///< --optimizer
  learning_rate,             ///< --lr
  block_size,                ///< --block-size
  min_8bit_size,             ///< --min-8bit-size
  fp32_embeddings,           ///< --fp32-embeddings
  clip_grad_norm,            ///< --clip-grad-norm
  grad_accum,                ///< --grad-accum
  zero,                      ///< --zero
  data_parallel,             ///< --dp
  tensor_parallel,           ///< --tp
  sequence_parallel,         ///< --sp
  prefetch,                  ///< --prefetch
  offload,                   ///< --offload
  offload_overlap,           ///< --offload-overlap
  offload_dpu,               ///< --offload-dpu
  offload_copy_back,         ///< --offload-copy-back
  offload_optimizer_device,  ///< --offload-optimizer-device
  offload_param_device,      ///< --offload-param-device
  offload_pin_memory,        ///< --offload-pin-memory
  dropout,                   ///< --dropout
};

/// Every technique flag.
inline constexpr std::initializer_list<PlanFlag> kAllPlanFlags = {
    PlanFlag::plan_file,
    PlanFlag::precision,
    PlanFlag::fp32_grads,
    PlanFlag::stochastic_rounding,
    PlanFlag::loss_scale,
    PlanFlag::recompute,
    PlanFlag::compress_activations,
    PlanFlag::offload_activations,
    PlanFlag::loss_chunks,
    PlanFlag::attention,
    PlanFlag::optimizer,
    PlanFlag::learning_rate,
    PlanFlag::block_size,
    PlanFlag::min_8bit_size,
    PlanFlag::fp32_embeddings,
    PlanFlag::clip_grad_norm,
    PlanFlag::grad_accum,
    PlanFlag::zero,
    PlanFlag::data_parallel,
    PlanFlag::tensor_parallel,
    PlanFlag::sequence_parallel,
    PlanFlag::prefetch,
    PlanFlag::offload,
    PlanFlag::offload_overlap,
    PlanFlag::offload_dpu,
    PlanFlag::offload_copy_back,
    PlanFlag::offload_optimizer_device,
    PlanFlag::offload_param_device,
    PlanFlag::offload_pin_memory,
    PlanFlag::dropout};

/// \return the technique flags `vramlab train` acts on: all but --dp (its ranks decide it) and
/// --sp (the estimator's only, so far).
std::vector<PlanFlag> train_plan_flags();
/// \return the technique flags `vramlab estimate` acts on: those that change a byte (not --lr,
/// --clip-grad-norm, --loss-scale, --stochastic-rounding, --prefetch, --offload-overlap,
/// --offload-dpu, --offload-copy-back or --dropout).
std::vector<PlanFlag> estimate_plan_flags();

/// The flags of one command and what the command line gave them (file comment).
class PlanFlags {
 public:
  /// Registers \p flags on \p app, in a "Plan" group of its help, each showing its default from
  /// \p defaults. \p app must outlive this object, which must outlive parsing.
  PlanFlags(CLI::App& app, const Plan& defaults, const std::vector<PlanFlag>& flags);
  ~PlanFlags();
  PlanFlags(const PlanFlags&) = delete;
  PlanFlags& operator=(const PlanFlags&) = delete;

  /// After parsing: the defaults, then `--plan FILE`, then each flag given (file comment).
  /// \return the plan, validated (plan::validate).
  /// \throws vramlab::UsageError naming the flag or the file's key and the value.
  [[nodiscard]] Plan plan() const;

  /// After parsing: \return whether \p flag was on the command line.
  [[nodiscard]] bool given(PlanFlag flag) const;

 private:
  struct Values;
  Plan defaults_;
  // One entry a registered flag: its option and what it changes in the plan when given (plan()
  // applies the given ones in this order). Registering a flag and its effect are one case of the
  // constructor's switch, so a new flag is written in one place.
  struct Entry {
    PlanFlag flag;
    CLI::Option* option;
    std::function<void(Plan&)> apply;  // empty for --plan itself
  };
  std::vector<Entry> options_;
  std::unique_ptr<Values> values_;  // the storage CLI11 writes into
};

}  // namespace vramlab::plan
