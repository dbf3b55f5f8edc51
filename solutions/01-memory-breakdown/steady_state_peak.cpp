// Reference solution of exercise 01.4: the steady-state peak of training from the first step
// (lessons/01-memory-breakdown/api/steady_state_peak.h).
#include <algorithm>
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/steady_state_peak.h"

namespace vramlab::lesson01 {

//! [reference]
int64_t predict_steady_state_peak(const FirstStepMeasurement& first) {
  for (int64_t v : {first.start_bytes, first.forward_peak_bytes, first.backward_peak_bytes,
                    first.optimizer_peak_bytes, first.end_bytes, first.gradient_bytes})
    if (v < 0) throw UsageError("a measurement is negative: " + std::to_string(v));
  for (int64_t peak :
       {first.forward_peak_bytes, first.backward_peak_bytes, first.optimizer_peak_bytes})
    if (peak < first.start_bytes)
      throw UsageError("a peak of " + std::to_string(peak) + " B is below the " +
                       std::to_string(first.start_bytes) + " B live at the start");
  if (first.end_bytes < first.start_bytes + first.gradient_bytes)
    throw UsageError("end_bytes " + std::to_string(first.end_bytes) +
                     " is below start_bytes + gradient_bytes");
  // Step 1 left behind its gradients and the optimizer states it created. The next zero-grad
  // releases the gradients before anything else runs; the states stay for good.
  const int64_t states = first.end_bytes - first.start_bytes - first.gradient_bytes;
  // Forward and backward run again on top of the states. The optimizer step's peak already held
  // the states (it created them), so it repeats unchanged; so does the start of the step (the
  // gradients and states of the previous one), which is end_bytes, never above that peak.
  return std::max({first.forward_peak_bytes + states, first.backward_peak_bytes + states,
                   first.optimizer_peak_bytes});
}
//! [reference]

}  // namespace vramlab::lesson01
