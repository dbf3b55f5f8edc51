/// \file
/// \brief What a recompute schedule costs: the forward work backward repeats.
#pragma once

#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::recompute {

/// Σ forward_cost over the `full` layers + Σ selective_cost over the `selective` layers, summed
/// from layer 0 up (the planner adds in the same order, so equal schedules give equal doubles).
/// \param costs the chain. \param schedule a valid schedule for it.
/// \return the cost, in the unit of the chain's costs.
/// \throws vramlab::InternalError when the schedule does not fit the chain (validate_schedule).
double recompute_cost(const ChainCosts& costs, const RecomputeSchedule& schedule);

}  // namespace vramlab::recompute
