/// \file
/// \brief Exercise 05.1: the copy time an offloaded step leaves exposed, predicted from when each
/// unit's gradients became final and how many bytes they are; the runtime's stream clock measures
/// the same step (train::StepResult::exposed_copy_seconds).
///
/// The one API shared by the stub (exercises/05-offload/exposed_copies.cpp) and the reference
/// (solutions/05-offload/exposed_copies.cpp).
///
/// The step is one of ZeRO-Offload's after the first (Ren et al., ATC 2021): the optimizer's
/// states and its update live on the host. The compute stream runs the backward; each unit's
/// 16-bit gradients (the head, each block from the last, the embedding) must then go to the host
/// over the link, on one copy stream, and the host updates once all of them are there. Then the
/// updated 16-bit parameters come back over the link, all of them once the update has ended
/// (`--offload-copy-back whole`, the default), and the compute stream waits for them before the
/// next step.
///
/// The copy stream runs its copies one at a time, in the units' order. A copy takes its bytes
/// over link_bytes_per_s and starts as soon as both
///   - its data is final: with overlap, when its unit's backward ended (ready_seconds); without
///     overlap, when the whole backward ended (backward_end_seconds), and
///   - the copy stream is free: the previous copy has finished.
///
/// Exposed copy time: the time the step spends waiting for copies that nothing hid. The host
/// waits from backward_end_seconds until the last gradient copy has finished (zero if it finished
/// before), and the compute stream waits for the whole copy back of parameter_bytes (nothing runs
/// beside it: the update must end before it can start). The host's update itself is not copy time.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::lesson05 {

/// One unit's gradients in the step's backward.
struct UnitGradients {
  double ready_seconds = 0.0;  ///< when its backward ended, on the compute stream's clock.
  int64_t bytes = 0;           ///< its gradients' bytes (≥ 0).
};

/// One offloaded step, as the clock saw its backward.
struct OffloadedStep {
  std::vector<UnitGradients> units;   ///< in the order the backward made them final.
  double backward_end_seconds = 0.0;  ///< when the backward ended (≥ every ready_seconds).
  int64_t parameter_bytes = 0;        ///< the 16-bit parameters copied back (≥ 0).
  double link_bytes_per_s = 0.0;      ///< the host link's bandwidth, each direction (> 0).
  bool overlap = true;                ///< copy each unit as it is ready, else after the backward.
};

/// Exercise 05.1 (see the file comment).
/// \param step the step. \return its exposed copy time in seconds (≥ 0).
/// \throws vramlab::UsageError naming the value when link_bytes_per_s is not a finite number
/// > 0, or a byte count is negative.
double exposed_copy_seconds(const OffloadedStep& step);

}  // namespace vramlab::lesson05
