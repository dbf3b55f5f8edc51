// The optimizer registry (see optimizer_factory.h).
#include "common/optim/optimizer_factory.h"

#include <stdexcept>
#include <string>

#include "common/optim/low_memory_optimizers.h"
#include "common/platform/errors.h"

namespace vramlab::optim {

bool needs_model(plan::Optimizer kind) {
  return kind == plan::Optimizer::adam_mini || kind == plan::Optimizer::adafactor ||
         kind == plan::Optimizer::adamw_8bit;
}

namespace {

// The optimizer of \p kind with its states on \p runtime.
std::unique_ptr<Optimizer> make_kind(nn::Runtime& runtime, plan::Optimizer kind,
                                     const OptimizerSettings& settings,
                                     const amp::PrecisionPolicy& precision,
                                     const ModelConfig* model) {
  if (needs_model(kind) && model == nullptr)
    throw std::invalid_argument("make_optimizer: '" + std::string(plan::optimizer_name(kind)) +
                                "' needs the model's shapes");
  kernels::cpu::AdamWHyperparameters adamw;
  adamw.learning_rate = settings.learning_rate;
  adamw.weight_decay = settings.weight_decay;
  switch (kind) {
    case plan::Optimizer::sgd:
    case plan::Optimizer::sgd_momentum:
      return std::make_unique<Sgd>(
          runtime,
          kernels::cpu::SgdHyperparameters{
              .learning_rate = settings.learning_rate,
              .momentum = kind == plan::Optimizer::sgd_momentum ? settings.momentum : 0.0f,
              .weight_decay = settings.weight_decay},
          precision);
    case plan::Optimizer::adamw:
      return std::make_unique<AdamW>(runtime, adamw, precision);
    case plan::Optimizer::adamw_8bit:
      return std::make_unique<AdamW8bit>(runtime, *model, adamw, settings.eight_bit, precision);
    case plan::Optimizer::adam_mini:
      return std::make_unique<AdamMini>(runtime, *model, adamw, precision);
    case plan::Optimizer::lion: {
      kernels::cpu::LionHyperparameters hp;
      hp.learning_rate = settings.learning_rate;
      hp.weight_decay = settings.weight_decay;
      return std::make_unique<Lion>(runtime, hp, precision);
    }
    case plan::Optimizer::adafactor: {
      kernels::cpu::AdafactorHyperparameters hp;
      hp.learning_rate = settings.learning_rate;
      hp.weight_decay = settings.weight_decay;
      return std::make_unique<Adafactor>(runtime, *model, hp, precision);
    }
  }
  throw std::logic_error("make_optimizer: an optimizer kind without a case");
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(nn::Runtime& runtime, plan::Optimizer kind,
                                          const OptimizerSettings& settings,
                                          const amp::PrecisionPolicy& precision,
                                          const ModelConfig* model, nn::Runtime* parameters) {
  std::unique_ptr<Optimizer> optimizer = make_kind(runtime, kind, settings, precision, model);
  if (parameters != nullptr) optimizer->keep_parameters_on(*parameters);
  return optimizer;
}

}  // namespace vramlab::optim
