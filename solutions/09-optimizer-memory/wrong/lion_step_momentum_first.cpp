// Known-wrong variant of exercise 09.2 (kept for `vramlab verify`, never linked into a lesson):
// updates m before taking the sign, so the direction interpolates with beta2 (the new m) instead of
// beta1.
// The exercise's tests must fail for it.
#include <cmath>
#include <string>

#include "common/platform/errors.h"
#include "lessons/09-optimizer-memory/api/lion_step.h"

namespace vramlab::lesson09 {

namespace {

// sign(0) = 0 and sign(NaN) = NaN: a NaN must not turn into a step of ±lr.
float sign_of(float c) {
  if (std::isnan(c)) return c;
  return c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : 0.0f);
}

}  // namespace

void lion_step(std::span<float> param, std::span<const float> grad, std::span<float> momentum,
               const kernels::cpu::LionHyperparameters& hp) {
  if (grad.size() != param.size() || momentum.size() != param.size())
    throw UsageError("lion_step: param has " + std::to_string(param.size()) + " elements, grad " +
                     std::to_string(grad.size()) + ", momentum " + std::to_string(momentum.size()));
  const float decay = 1.0f - hp.learning_rate * hp.weight_decay;
  for (size_t i = 0; i < param.size(); ++i) {
    const float g = grad[i];
    // The direction interpolates with β1 from the momentum of the previous step; only then does
    // the momentum move on, with β2 (Algorithm 2: the two betas play different roles).
    momentum[i] = hp.beta2 * momentum[i] + (1.0f - hp.beta2) * g;
    const float update = sign_of(momentum[i]);
    param[i] = param[i] * decay - hp.learning_rate * update;
  }
}

}  // namespace vramlab::lesson09
