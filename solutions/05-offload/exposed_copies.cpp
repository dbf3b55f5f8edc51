// Exercise 05.1 — reference: the copy time an offloaded step cannot hide.
#include "lessons/05-offload/api/exposed_copies.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::lesson05 {

//! [reference]
double exposed_copy_seconds(const OffloadedStep& step) {
  const double bw = step.link_bytes_per_s;
  if (!std::isfinite(bw) || bw <= 0.0)
    throw UsageError("link_bytes_per_s must be a finite number > 0, got " + std::to_string(bw));
  if (step.parameter_bytes < 0)
    throw UsageError("parameter_bytes must be >= 0, got " + std::to_string(step.parameter_bytes));
  // The copy stream: each copy starts when its data is final and the previous copy is done.
  double copy_stream_free = 0.0;
  for (const UnitGradients& u : step.units) {
    if (u.bytes < 0)
      throw UsageError("a unit's bytes must be >= 0, got " + std::to_string(u.bytes));
    const double data_final = step.overlap ? u.ready_seconds : step.backward_end_seconds;
    copy_stream_free = std::max(copy_stream_free, data_final) + static_cast<double>(u.bytes) / bw;
  }
  // The host waits for the last gradient after the backward (not before: it had nothing to do),
  // then the compute stream waits for every byte of the parameters' copy back.
  const double host_waits = std::max(0.0, copy_stream_free - step.backward_end_seconds);
  return host_waits + static_cast<double>(step.parameter_bytes) / bw;
}
//! [reference]

}  // namespace vramlab::lesson05
