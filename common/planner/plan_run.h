/// \file
/// \brief The planner's proof: a candidate run for a few whole steps on devices sized as the
/// machine's GPUs (one simulated rank per GPU), with expandable segments as the plan's PyTorch
/// lines ask. On meta nothing is computed and the collectives count bytes, so a 70B model on 64
/// ranks runs in seconds with every byte the runtime would allocate allocated; on sim the step
/// really runs, in host memory, for a model small enough for this machine.
#pragma once

#include <cstdint>
#include <string>

#include "common/planner/search.h"

namespace vramlab::planner {

/// What the run measured, the most of any rank.
struct MeasuredRun {
  bool fits = false;           ///< every rank ran every step
  int64_t peak_bytes = 0;      ///< allocated_bytes.all.peak of the fullest rank
  int64_t reserved_bytes = 0;  ///< reserved_bytes.all.peak of the fullest rank
  double step_seconds = 0.0;   ///< the last step on rank 0's stream clock (Note [The stream clock])
  std::string out_of_memory;   ///< the error's first sentence when a rank ran out
};

/// Runs \p candidate of \p problem for \p steps (≥ 2: the optimizer's states appear at the first)
/// on \p kind (meta or sim) devices of the machine's preset. \throws vramlab::UsageError for
/// steps < 2, another kind, a candidate the runtime refuses, or a sim run beyond the host's
/// memory budget (memory::require_host_memory).
MeasuredRun run_plan(const Problem& problem, const Candidate& candidate,
                     memory::DeviceKind kind = memory::DeviceKind::meta, int64_t steps = 2);

}  // namespace vramlab::planner
