/// \file
/// \brief GradientSnapshot: an observer that copies the parameter gradients to the host, as f32,
/// just before the optimizer step (after every micro-batch's backward, before any unscale).
///
/// What lessons and tests compare: the accumulated gradient of K micro-batches against one
/// batch's, and the exponents of the gradient values against the 16-bit formats' ranges. The
/// values are the gradients as stored (scaled by the loss scale, if any); on meta nothing is
/// copied.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/step_observer.h"

namespace vramlab::train {

/// Register with Trainer::add_observer; after a step, values() holds that step's gradients.
class GradientSnapshot final : public nn::StepObserver {
 public:
  /// Copies the gradients when the optimizer step is about to start.
  void before(const nn::PhaseEvent& event) override;
  /// \return the last step's gradients, widened to f32, (parameter count); empty before a step.
  [[nodiscard]] const std::vector<float>& values() const { return values_; }

 private:
  std::vector<float> values_;  // (numel) the flat gradient block
};

}  // namespace vramlab::train
