/// \file
/// \brief ZeRO-Offload's gradient streaming: with the optimizer offloaded, each unit's gradients
/// go to the host on a copy stream as soon as its backward is done, while the units before it
/// still run backward on the compute stream. Note [Gradient streaming] in gradient_streaming.cpp.
#pragma once

#include <cstdint>

#include "common/nn/step_observer.h"
#include "common/optim/optimizer.h"

namespace vramlab::optim {

/// A step observer that calls Optimizer::stream_gradients for each unit of the store (the head,
/// each block, the embedding) after the backward that makes its gradients final.
class GradientStreaming final : public nn::StepObserver {
 public:
  /// \param optimizer must be offloaded (Optimizer::offloaded()) and outlive the observer.
  /// \throws std::logic_error when it is not offloaded.
  explicit GradientStreaming(Optimizer& optimizer);

  /// Says whether the backward about to run is the step's last micro-batch's: only then are the
  /// gradients final (with gradient accumulation the earlier ones add to them).
  void set_last_micro_batch(bool last) { last_micro_batch_ = last; }

  void after(const nn::PhaseEvent& event) override;

 private:
  // Streams unit \p unit of the store's layout (-1: none).
  void stream_unit(const nn::PhaseEvent& event, int64_t unit);

  Optimizer& optimizer_;
  bool last_micro_batch_ = true;
};

}  // namespace vramlab::optim
