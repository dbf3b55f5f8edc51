/// \file
/// \brief The schedule each `--recompute` value makes for a chain; the forms and their meaning
/// are listed once, in common/plan/recompute_spec.h.
#pragma once

#include "common/plan/recompute_spec.h"
#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::recompute {

/// The spec and its text, from the plan's vocabulary.
using plan::parse_recompute_spec;
using plan::RecomputeSpec;
using plan::to_string;

/// The schedule a spec makes for a chain, named to_string(spec): the hand schedules of the file
/// comment, or optimal_schedule() for `budget`.
/// \param spec the spec. \param costs the chain (its length for the hand schedules).
/// \return the schedule.
/// \throws vramlab::UsageError when no schedule fits a `budget` (see optimal_schedule()).
/// \throws vramlab::InternalError for an invalid chain, or a spec parse_recompute_spec() would
/// refuse (K < 1, a budget ≤ 0).
RecomputeSchedule make_schedule(const RecomputeSpec& spec, const ChainCosts& costs);

}  // namespace vramlab::recompute
