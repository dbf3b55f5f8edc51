/// \file
/// \brief The one place that turns an optimizer kind (the estimator's estimate::Optimizer, so a
/// run and its estimate name the same thing) into a runtime optimizer.
///
/// The runtime implements SGD (no state), SGD with momentum (one fp32 state) and AdamW (two fp32
/// states); the estimator also knows 8-bit AdamW, Lion and Adam-mini, which the factory refuses
/// by name rather than silently training with something else.
#pragma once

#include <memory>

#include "common/estimate/model_state_memory.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer.h"

namespace vramlab::optim {

/// Hyper-parameters shared by the optimizers the factory makes; AdamW's betas and epsilon keep
/// torch.optim.AdamW's defaults (kernels::cpu::AdamWHyperparameters).
struct OptimizerSettings {
  float learning_rate = 1e-3f;  ///< step size (> 0).
  float weight_decay = 0.0f;    ///< decoupled (AdamW) or L2 (SGD) weight decay (≥ 0).
  float momentum = 0.9f;        ///< SGD with momentum's momentum in [0, 1) (plain SGD: unused).
};

/// Refuses, without allocating anything, a kind make_optimizer() cannot build (to check a run's
/// settings before its runtime exists).
/// \throws vramlab::UsageError naming \p kind and the implemented kinds.
void require_implemented(estimate::Optimizer kind);

/// Builds the runtime optimizer of \p kind: Sgd with momentum 0 for `sgd`, Sgd with
/// settings.momentum for `sgd_momentum`, AdamW for `adamw`.
/// The states live on \p runtime, allocated lazily at the first step, in \p precision's state
/// type, with an fp32 master copy under mixed precision.
/// \throws vramlab::UsageError naming the optimizer for a kind the runtime does not implement,
/// or naming a bad hyper-parameter.
std::unique_ptr<Optimizer> make_optimizer(nn::Runtime& runtime, estimate::Optimizer kind,
                                          const OptimizerSettings& settings = {},
                                          const amp::PrecisionPolicy& precision = {});

}  // namespace vramlab::optim
