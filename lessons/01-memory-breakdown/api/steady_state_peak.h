/// \file
/// \brief Exercise 01.4: predict the peak of every training step from the second on, from what
/// the runtime measured during the first.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/steady_state_peak.cpp) and the
/// reference (solutions/01-memory-breakdown/steady_state_peak.cpp). The tests train real models
/// with train::Trainer on the meta device, measure the first step phase by phase, ask for the
/// prediction, and compare it with the allocator's peak of steps 2, 3 and 4 (its peak statistics
/// reset before each step). A step runs zero-grad, forward (loss included), backward and the
/// optimizer step, in that order; zero-grad releases the previous step's gradients (set to None,
/// PyTorch's default) and the optimizer creates its states lazily, during its first step.
#pragma once

#include <cstdint>

namespace vramlab::lesson01 {

/// The first training step, measured by the allocator: allocated bytes (rounded block sizes, the
/// figure of torch.cuda.max_memory_allocated), with the peak statistics reset at the start of
/// each phase.
struct FirstStepMeasurement {
  int64_t start_bytes = 0;           ///< allocated when the step starts.
  int64_t forward_peak_bytes = 0;    ///< the peak during zero-grad and the forward pass (loss
                                     ///< included).
  int64_t backward_peak_bytes = 0;   ///< the peak during the backward pass.
  int64_t optimizer_peak_bytes = 0;  ///< the peak during the optimizer step.
  int64_t end_bytes = 0;             ///< allocated when the step has ended.
  int64_t gradient_bytes = 0;        ///< the gradients, live from backward to the next zero-grad.
};

/// Exercise 01.4: the allocated-bytes peak of every step from the second on.
/// \param first the first step's measurement (all ≥ 0; each peak ≥ start_bytes).
/// \return the predicted peak, in bytes.
/// \throws vramlab::UsageError naming the value for a negative figure, a peak below start_bytes,
///         or an end_bytes below start_bytes + gradient_bytes.
int64_t predict_steady_state_peak(const FirstStepMeasurement& first);

}  // namespace vramlab::lesson01
