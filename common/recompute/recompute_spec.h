/// \file
/// \brief The schedule each `--recompute` value (common/plan/recompute_spec.h) makes for a chain.
///
/// The forms:
///   - `none`: nothing recomputed.
///   - `full`: every layer recomputed, each its own segment: every layer checkpointed, as
///     Hugging Face's gradient_checkpointing_enable() wraps each decoder layer.
///   - `every:K` (K ≥ 1): layers 0, K, 2K, … recomputed, each its own one-layer segment;
///     `every:2` checkpoints half the layers, `every:1` is `full`. A K of the chain's length or
///     more recomputes layer 0 only: the spec is parsed without knowing the chain, and one spec
///     can serve models of different depths.
///   - `sqrt`: Chen et al. 2016 ("Training Deep Nets with Sublinear Memory Cost"): every layer
///     recomputed, in segments of k = ⌈√L⌉ consecutive layers (the last one shorter), so about
///     √L segment outputs are kept.
///   - `selective`: every layer recomputes only its attention probabilities (Korthikanti et al.
///     2022, "Reducing Activation Recomputation in Large Transformer Models" §5).
///   - `budget:BYTES`: the cheapest schedule whose activation peak is at most BYTES
///     (optimal_schedule()). BYTES is a plain integer or a size with a unit as `--device sim:SIZE`
///     takes it: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024),
///     e.g. budget:20GiB.
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
