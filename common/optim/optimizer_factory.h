/// \file
/// \brief The optimizer registry: the one place that turns an optimizer kind (plan::Optimizer, the
/// plan's vocabulary, so `vramlab train --optimizer`, `vramlab estimate --optimizer` and the
/// lessons name the same thing) into a runtime optimizer.
///
/// Every kind the estimator knows is implemented: SGD, SGD with momentum, AdamW
/// (common/optim/optimizer.h), Lion, Adam-mini, Adafactor and 8-bit AdamW
/// (common/optim/low_memory_optimizers.h).
#pragma once

#include <memory>

#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer.h"
#include "common/plan/techniques.h"

namespace vramlab::optim {

/// Hyper-parameters shared by the optimizers the factory makes; AdamW's betas and epsilon keep
/// torch.optim.AdamW's defaults (kernels::cpu::AdamWHyperparameters).
struct OptimizerSettings {
  float learning_rate = 1e-3f;  ///< step size (> 0).
  float weight_decay = 0.0f;    ///< decoupled (AdamW) or L2 (SGD) weight decay (≥ 0).
  float momentum = 0.9f;        ///< SGD with momentum's momentum in [0, 1) (plain SGD: unused).
  plan::EightBitOptions eight_bit;  ///< 8-bit AdamW's block size, minimum size, embeddings.
};

/// \param kind an optimizer. \return true when it needs the model's shapes (Adam-mini,
/// Adafactor, 8-bit AdamW step tensor by tensor).
bool needs_model(plan::Optimizer kind);

/// Builds the runtime optimizer of \p kind: Sgd with momentum 0 for `sgd`, Sgd with
/// settings.momentum for `sgd_momentum`, AdamW, Lion, AdamMini, Adafactor or AdamW8bit, with
/// settings.learning_rate and settings.weight_decay and each paper's defaults for the rest.
/// The states live on \p runtime, allocated lazily at the first step, in \p precision's state
/// type (8-bit AdamW: u8 codes and f32 absmax), with an fp32 master copy under mixed precision.
/// \param runtime holds the states; must outlive the optimizer.
/// \param kind which optimizer.
/// \param settings learning rate, weight decay, momentum, 8-bit options.
/// \param precision the states' types and whether a master copy exists.
/// \param model the model whose store will be stepped; required when needs_model(kind).
/// \param parameters where the parameters and gradients live when that is not \p runtime:
/// optimizer offload, with \p runtime the host's (Optimizer::keep_parameters_on); null or
/// \p runtime for none.
/// \return the optimizer.
/// \throws vramlab::UsageError naming a bad hyper-parameter, or an optimizer that cannot keep
/// its states apart from the parameters; std::invalid_argument without a model when one is
/// needed.
std::unique_ptr<Optimizer> make_optimizer(nn::Runtime& runtime, plan::Optimizer kind,
                                          const OptimizerSettings& settings = {},
                                          const amp::PrecisionPolicy& precision = {},
                                          const ModelConfig* model = nullptr,
                                          nn::Runtime* parameters = nullptr);

}  // namespace vramlab::optim
