/// \file
/// \brief Exercise 05.2: how long an offloaded step takes when its optimizer update is delayed by
/// one step (ZeRO-Offload's delayed parameter update, `--offload-dpu`), predicted from its
/// backward, the link and the host's update time; the runtime's stream clock measures the same
/// step (train::StepResult::clock_seconds).
///
/// The one API shared by the stub (exercises/05-offload/delayed_step.cpp) and the reference
/// (solutions/05-offload/delayed_step.cpp).
///
/// The step is a steady one of a delayed run: time 0 is its start. The host's update of the
/// previous step starts then, on a thread of its own, and runs for update_seconds; meanwhile this
/// step's forward and backward run on the compute stream, on the parameters of the update before
/// it. The host keeps one buffer for the gradients, which that update reads, and one for the
/// 16-bit parameters, which it writes.
///
/// One copy stream carries every copy over the link, one at a time, in this order:
///   - with overlap: each unit's gradients in the units' order, then the parameters that the
///     previous step's update made (parameter_bytes);
///   - without overlap: those parameters first, then each unit's gradients in order.
/// A copy takes its bytes over link_bytes_per_s and starts as soon as all of these hold:
///   - the copy stream is free (the copy before it has finished);
///   - the previous step's update has finished (its buffers are free again);
///   - its data is ready: a unit's gradients when its backward ended (ready_seconds) with
///     overlap, when the whole backward ended (backward_end_seconds) without; the parameters once
///     the backward has ended.
/// The step ends when the backward and every copy have ended (this step's own update starts then,
/// on the host's thread, and belongs to the next step).
#pragma once

#include <cstdint>
#include <vector>

#include "lessons/05-offload/api/exposed_copies.h"

namespace vramlab::lesson05 {

/// One steady step of a run with the delayed update, times from the step's start.
struct DelayedStep {
  std::vector<UnitGradients> units;   ///< in the order the backward made them final.
  double backward_end_seconds = 0.0;  ///< when the backward ended (≥ every ready_seconds).
  int64_t parameter_bytes = 0;        ///< the 16-bit parameters copied up (≥ 0).
  double link_bytes_per_s = 0.0;      ///< the host link's bandwidth, each direction (> 0).
  bool overlap = true;                ///< copy each unit as it is ready, else after the backward.
  double update_seconds = 0.0;        ///< the previous step's host update (≥ 0).
};

/// Exercise 05.2 (see the file comment).
/// \param step the step. \return its time in seconds, from its start to its end.
/// \throws vramlab::UsageError naming the value when link_bytes_per_s is not a finite number
/// > 0, update_seconds is negative or not finite, or a byte count is negative.
double delayed_step_seconds(const DelayedStep& step);

}  // namespace vramlab::lesson05
