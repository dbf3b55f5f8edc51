/// \file
/// \brief The recompute schedule of least cost whose activation peak fits a memory budget, and
/// the smallest peak any schedule reaches.
///
/// The search is an exact dynamic program over the chain, left to right. A boundary i
/// (0 ≤ i ≤ L) has layers 0..i−1 decided and no span open; a state there is P_i, the bytes
/// layers before i keep (E included). With budget B, the transitions out of a state are
///
///     none:          P_{i+1} = P_i + F_i            if P_i + F_i ≤ B
///     selective:     P_{i+1} = P_i + S_i            if P_i + F_i ≤ B,  cost + s_i
///     span [i,j):    P_j     = P_i + O_{j−1}        if P_i + F_i + … + F_{j−1} ≤ B,
///                                                      cost + f_i + … + f_{j−1}
///
/// and every state needs P_i + H ≤ B, since P only grows and the head's forward adds H to P_L.
/// These conditions are exactly the peak candidates of activation_peak.h (a span's forward
/// values are never above its recompute, as O ≤ F), so a path from P_0 = E to boundary L is a
/// schedule that fits, and every schedule that fits is one path. A state also carries its cost
/// C and M, the largest A so far (M_0 = E; a transition raises it to the value it checks
/// against B); the schedule's peak is max(M_L, P_L + H).
///
/// The order among schedules that fit: least cost, then least peak, then least P_L (the bytes
/// held through the head), then the smaller schedule_pattern() in byte order (at the first layer
/// that differs: none, a full span start, a full continuation, selective).
///
/// The passes. A coarse one (P compared in 1/256ths of the budget) finds the cost U of some
/// schedule that fits. An exact one keeps, per boundary, the states no other beats in both P and
/// C (a staircase), ignoring prefixes dearer than U, and finds the least cost C*. The last drops
/// every prefix dearer than C* and orders the rest fully: state t makes state u useless when
/// P_t ≤ P_u and either C_t < C_u, or C_t = C_u, M_t ≤ M_u and (P_t, pattern_t) <
/// (P_u, pattern_u): any suffix that fits after u fits after t and ends no later in the order
/// (C and P add the suffix's share, M and the peak only take maxima, a pattern comparison is
/// decided by the prefix). "Dearer" includes a lower bound on the rest: the cheapest savings per
/// byte (selective, then full, per layer's convex hull) that bring P_L + H within B, the linear
/// relaxation of the per-layer choice. A pass costs O(L · W · G · log(W · G)) for W states kept
/// per boundary and spans of at most G layers that fit (G ≤ L). W depends on the chain: 96
/// identical GPT-3-sized layers plan in 1–55 ms at eleven budgets (build/bench/bin/
/// bench_optimal_schedule); 80 layers whose costs form an arithmetic progression (many exact ties,
/// each tie a staircase in (P, M)) took up to 0.4 s (Release build, one core). Costs are doubles
/// summed from layer 0 up as recompute_cost() does and compared exactly: integer costs (FLOPs) tie
/// exactly; fractional costs equal only up to rounding are decided by the rounding.
///
/// Sources: spans with only their boundaries kept are Chen et al. 2016, "Training Deep Nets
/// with Sublinear Memory Cost" §4 (whose √L "segments" are the `sqrt` schedule's spans; its
/// planner places span ends greedily under a budget, this one searches exactly); selective
/// recompute is Korthikanti et al. 2022 §5. The general problem, any tensor recomputed any number
/// of times on a graph, is Griewank & Walther's Revolve (ACM TOMS 2000, "Algorithm 799") for
/// chains and Checkmate (Jain et al., MLSys 2020) as an integer program; this planner keeps to
/// what the runtime can do: each layer recomputed at most once, a span from its kept input.
#pragma once

#include <cstdint>

#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::recompute {

/// The schedule of least recompute_cost() whose activation_peak_bytes() is at most the budget
/// (ties as in the file comment). Named "budget:" and the budget, e.g. "budget:20GiB".
/// \param costs the chain (validate_chain_costs()).
/// \param budget_bytes the largest activation peak allowed, in bytes.
/// \return the schedule.
/// \throws vramlab::UsageError naming the budget and least_activation_peak_bytes() when no
/// schedule fits.
/// \throws vramlab::InternalError for an invalid chain.
RecomputeSchedule optimal_schedule(const ChainCosts& costs, int64_t budget_bytes);

/// The smallest activation_peak_bytes() any schedule of the chain reaches: the least budget
/// optimal_schedule() accepts. Same recurrence without a budget, keeping per boundary the states
/// no other beats in both P and the peak so far.
/// \param costs the chain (validate_chain_costs()).
/// \return the peak in bytes.
/// \throws vramlab::InternalError for an invalid chain.
int64_t least_activation_peak_bytes(const ChainCosts& costs);

}  // namespace vramlab::recompute
