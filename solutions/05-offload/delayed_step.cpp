// Exercise 05.2 — reference: how long a step with the delayed parameter update takes.
#include "lessons/05-offload/api/delayed_step.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::lesson05 {

//! [reference]
double delayed_step_seconds(const DelayedStep& step) {
  const double bw = step.link_bytes_per_s;
  if (!std::isfinite(bw) || bw <= 0.0)
    throw UsageError("link_bytes_per_s must be a finite number > 0, got " + std::to_string(bw));
  if (!std::isfinite(step.update_seconds) || step.update_seconds < 0.0)
    throw UsageError("update_seconds must be a finite number >= 0, got " +
                     std::to_string(step.update_seconds));
  if (step.parameter_bytes < 0)
    throw UsageError("parameter_bytes must be >= 0, got " + std::to_string(step.parameter_bytes));
  // Every copy waits for the previous update: it reads the gradient buffer and writes the
  // parameter buffer. So the copy stream is first free when that update ends.
  double copy_stream_free = step.update_seconds;
  const auto copy = [&](double data_ready, int64_t bytes) {
    copy_stream_free = std::max(copy_stream_free, data_ready) + static_cast<double>(bytes) / bw;
  };
  const auto parameters = [&] { copy(step.backward_end_seconds, step.parameter_bytes); };
  if (!step.overlap) parameters();
  for (const UnitGradients& u : step.units) {
    if (u.bytes < 0)
      throw UsageError("a unit's bytes must be >= 0, got " + std::to_string(u.bytes));
    copy(step.overlap ? u.ready_seconds : step.backward_end_seconds, u.bytes);
  }
  if (step.overlap) parameters();
  return std::max(step.backward_end_seconds, copy_stream_free);
}
//! [reference]

}  // namespace vramlab::lesson05
