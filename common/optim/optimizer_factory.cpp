// The optimizer factory (see optimizer_factory.h).
#include "common/optim/optimizer_factory.h"

#include <stdexcept>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::optim {

namespace {

constexpr estimate::Optimizer kImplemented[] = {
    estimate::Optimizer::sgd, estimate::Optimizer::sgd_momentum, estimate::Optimizer::adamw};

std::string implemented_names() {
  std::string names;
  for (const estimate::Optimizer kind : kImplemented) {
    if (!names.empty()) names += ", ";
    names += estimate::optimizer_name(kind);
  }
  return names;
}

}  // namespace

void require_implemented(estimate::Optimizer kind) {
  for (const estimate::Optimizer implemented : kImplemented)
    if (implemented == kind) return;
  throw UsageError("optimizer '" + std::string(estimate::optimizer_name(kind)) +
                   "' is estimated but not implemented by the training runtime (implemented: " +
                   implemented_names() + ")");
}

std::unique_ptr<Optimizer> make_optimizer(nn::Runtime& runtime, estimate::Optimizer kind,
                                          const OptimizerSettings& settings,
                                          const amp::PrecisionPolicy& precision) {
  require_implemented(kind);
  switch (kind) {
    case estimate::Optimizer::sgd:
      return std::make_unique<Sgd>(runtime, settings.learning_rate, 0.0f, settings.weight_decay,
                                   false, precision);
    case estimate::Optimizer::sgd_momentum:
      return std::make_unique<Sgd>(runtime, settings.learning_rate, settings.momentum,
                                   settings.weight_decay, false, precision);
    case estimate::Optimizer::adamw: {
      kernels::cpu::AdamWHyperparameters hp;
      hp.learning_rate = settings.learning_rate;
      hp.weight_decay = settings.weight_decay;
      return std::make_unique<AdamW>(runtime, hp, precision);
    }
    case estimate::Optimizer::adamw_8bit:
    case estimate::Optimizer::lion:
    case estimate::Optimizer::adam_mini:
      break;
  }
  throw std::logic_error("make_optimizer: kImplemented and the switch disagree");
}

}  // namespace vramlab::optim
