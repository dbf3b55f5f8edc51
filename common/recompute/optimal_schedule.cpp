// The exact planner (the recurrence and its order key are in optimal_schedule.h).
#include "common/recompute/optimal_schedule.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/memory/oom_error.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/recompute_cost.h"
#include "common/recompute/recompute_spec.h"

namespace vramlab::recompute {

namespace {

// Pattern characters (schedule_pattern()).
constexpr char kNone = '.';
constexpr char kSelective = 's';
constexpr char kSpanStart = 'F';
constexpr char kSpanContinue = 'f';

// A state of the cheapest-schedule pass: the layers before its boundary decided.
struct State {
  int64_t kept = 0;     // P: bytes the decided layers keep, E included
  int64_t peak = 0;     // M: the largest A so far
  double cost = 0.0;    // their recompute cost, summed from layer 0 up
  std::string pattern;  // their schedule_pattern()
};

// A state proposed for a boundary, its pattern given by its parent and one block, so that the
// pattern is only built for the candidates that survive.
struct Candidate {
  int64_t kept = 0;
  int64_t peak = 0;
  double cost = 0.0;
  int32_t from = 0;    // the parent's boundary
  int32_t parent = 0;  // its index in the front at `from`
  char block = kNone;  // kNone, kSelective, or kSpanStart for a span [from, boundary)
};

// A lower bound on what the layers from a boundary on must cost so that P_L + H fits: against
// keeping everything, each layer can save F − S for its selective cost or up to F for its
// forward cost, and the cheapest savings per byte are taken first, the last one in part (the
// linear relaxation of choosing one option per layer; it ignores the per-layer peaks, so it
// never exceeds the true cost).
class RemainingCost {
 public:
  RemainingCost(const ChainCosts& costs, int64_t budget)
      : suffix_saved_(costs.layers.size() + 1, 0),
        steps_(costs.layers.size() + 1),
        excess_(costs.head_bytes - budget) {
    const std::vector<LayerCosts>& layers = costs.layers;
    std::vector<Step> all;
    for (size_t i = layers.size(); i-- > 0;) {
      const LayerCosts& l = layers[i];
      suffix_saved_[i] = suffix_saved_[i + 1] + l.saved_bytes;
      const int64_t selective_saving = l.saved_bytes - l.selective_bytes;
      // The lower convex hull of (0, 0), (F − S, s), (F, f) in (saving, cost).
      if (selective_saving > 0 && l.selective_cost * static_cast<double>(l.saved_bytes) <=
                                      l.forward_cost * static_cast<double>(selective_saving)) {
        all.push_back({selective_saving, l.selective_cost});
        if (l.selective_bytes > 0) {
          all.push_back({l.selective_bytes, std::max(0.0, l.forward_cost - l.selective_cost)});
        }
      } else if (l.saved_bytes > 0) {
        all.push_back({l.saved_bytes, l.forward_cost});
      }
      std::vector<Step> sorted = all;
      std::sort(sorted.begin(), sorted.end(), [](const Step& a, const Step& b) {
        return a.cost * static_cast<double>(b.saving) < b.cost * static_cast<double>(a.saving);
      });
      for (size_t k = 1; k < sorted.size(); ++k) {
        sorted[k].saving += sorted[k - 1].saving;  // running sums from here on
        sorted[k].cost += sorted[k - 1].cost;
      }
      steps_[i] = std::move(sorted);
    }
  }

  // The bound for the layers from `boundary` on, after prefixes that keep `kept` bytes;
  // infinity when even the largest savings cannot fit.
  double at(size_t boundary, int64_t kept) const {
    const int64_t required = kept + suffix_saved_[boundary] + excess_;
    if (required <= 0) return 0.0;
    const std::vector<Step>& steps = steps_[boundary];
    const auto k = static_cast<size_t>(
        std::lower_bound(steps.begin(), steps.end(), required,
                         [](const Step& step, int64_t value) { return step.saving < value; }) -
        steps.begin());
    if (k == steps.size()) return std::numeric_limits<double>::infinity();
    const int64_t before_saving = k == 0 ? 0 : steps[k - 1].saving;
    const double before_cost = k == 0 ? 0.0 : steps[k - 1].cost;
    const double step_cost = steps[k].cost - before_cost;
    const auto step_saving = static_cast<double>(steps[k].saving - before_saving);
    return before_cost + step_cost * static_cast<double>(required - before_saving) / step_saving;
  }

  // True when a prefix of this cost cannot end within cost_bound. The bound and the sums it is
  // compared with are rounded differently, so a relative margin keeps rounding from pruning the
  // optimum.
  bool hopeless(size_t boundary, int64_t kept, double cost, double cost_bound) const {
    return cost + at(boundary, kept) > cost_bound + 1e-9 * cost_bound;
  }

 private:
  struct Step {
    int64_t saving;  // bytes, cumulative once sorted
    double cost;     // cumulative once sorted
  };
  std::vector<int64_t> suffix_saved_;     // Σ F over the layers from a boundary on
  std::vector<std::vector<Step>> steps_;  // per boundary, by cost per byte
  int64_t excess_;                        // H − B
};

// The least cost of a schedule that fits, among prefixes no dearer than cost_bound: the same
// transitions, keeping per boundary the states no other beats in both P and C (a staircase, P
// falling as C rises). With a bucket wider than one byte, states whose P differ by less than a
// bucket count as equal: the front shrinks and the result is the cost of some schedule that fits,
// possibly not the least (an upper bound for the exact pass).
std::optional<double> least_cost(const ChainCosts& costs, int64_t budget, int64_t bucket,
                                 double cost_bound) {
  struct Point {
    int64_t kept;  // P
    double cost;   // C
  };
  const std::vector<LayerCosts>& layers = costs.layers;
  const size_t count = layers.size();
  const int64_t head = costs.head_bytes;
  if (costs.before_bytes + head > budget) return std::nullopt;
  const RemainingCost remaining(costs, budget);
  std::vector<std::vector<Point>> pending{{Point{costs.before_bytes, 0.0}}};
  pending.resize(count + 1);
  for (size_t i = 0; i <= count; ++i) {
    std::vector<Point>& points = pending[i];
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
      return a.cost != b.cost ? a.cost < b.cost : a.kept < b.kept;
    });
    std::vector<Point> front;
    for (const Point& point : points) {
      if (front.empty() || point.kept / bucket < front.back().kept / bucket) {
        front.push_back(point);
      }
    }
    points = {};
    if (i == count) {
      if (front.empty()) return std::nullopt;
      return front.front().cost;
    }
    auto propose = [&](size_t to, int64_t kept, double cost) {
      if (kept + head <= budget && cost <= cost_bound &&
          !remaining.hopeless(to, kept, cost, cost_bound)) {
        pending[to].push_back({kept, cost});
      }
    };
    for (const Point& s : front) {
      if (s.kept + layers[i].saved_bytes <= budget) {
        propose(i + 1, s.kept + layers[i].saved_bytes, s.cost);
        propose(i + 1, s.kept + layers[i].selective_bytes, s.cost + layers[i].selective_cost);
      }
      int64_t recompute = s.kept;
      double cost = s.cost;
      for (size_t j = i + 1; j <= count; ++j) {
        recompute += layers[j - 1].saved_bytes;
        if (recompute > budget) break;
        cost += layers[j - 1].forward_cost;
        if (cost > cost_bound) break;
        propose(j, s.kept + layers[j - 1].output_bytes, cost);
      }
    }
  }
  return std::nullopt;
}

// The cheapest schedule in the full order, given the least cost: a prefix dearer than that
// cannot start a cheapest schedule (costs only add), which keeps the (P, M) staircases of
// dearer prefixes out of the fronts.
class CheapestPass {
 public:
  CheapestPass(const ChainCosts& costs, int64_t budget, double cost_bound)
      : costs_(costs), budget_(budget), cost_bound_(cost_bound), remaining_(costs, budget) {}

  // The first schedule whose peak fits in the order (cost, peak, P_L, pattern); none when
  // nothing fits.
  std::optional<State> run() {
    const std::vector<LayerCosts>& layers = costs_.layers;
    const auto count = static_cast<int32_t>(layers.size());
    const int64_t head = costs_.head_bytes;
    if (costs_.before_bytes + head > budget_) return std::nullopt;
    fronts_.assign(static_cast<size_t>(count) + 1, {});
    std::vector<std::vector<Candidate>> pending(static_cast<size_t>(count) + 1);
    fronts_[0].push_back({costs_.before_bytes, costs_.before_bytes, 0.0, ""});
    for (int32_t i = 0; i <= count; ++i) {
      if (i > 0) build_front(i, pending[i]);
      if (i == count) break;
      const LayerCosts& layer = layers[i];
      for (int32_t p = 0; p < static_cast<int32_t>(fronts_[i].size()); ++p) {
        const State& s = fronts_[i][p];
        auto propose = [&](int32_t to, int64_t kept, int64_t peak, double cost, char block) {
          // P never shrinks, so a state whose head's forward would already overflow is dead.
          if (kept + head <= budget_ && cost <= cost_bound_ &&
              !remaining_.hopeless(static_cast<size_t>(to), kept, cost, cost_bound_)) {
            pending[to].push_back({kept, peak, cost, i, p, block});
          }
        };
        const int64_t forward = s.kept + layer.saved_bytes;
        if (forward <= budget_) {
          const int64_t peak = std::max(s.peak, forward);
          propose(i + 1, forward, peak, s.cost, kNone);
          propose(i + 1, s.kept + layer.selective_bytes, peak, s.cost + layer.selective_cost,
                  kSelective);
        }
        int64_t recompute = s.kept;
        double cost = s.cost;
        for (int32_t j = i + 1; j <= count; ++j) {
          recompute += layers[j - 1].saved_bytes;
          if (recompute > budget_) break;  // longer spans only re-run more
          cost += layers[j - 1].forward_cost;
          if (cost > cost_bound_) break;  // and only cost more
          propose(j, s.kept + layers[j - 1].output_bytes, std::max(s.peak, recompute), cost,
                  kSpanStart);
        }
      }
    }
    const State* best = nullptr;
    auto order = [&](const State& s) {
      return std::make_tuple(s.cost, std::max(s.peak, s.kept + head), s.kept, std::cref(s.pattern));
    };
    for (const State& s : fronts_[count]) {
      if (best == nullptr || order(s) < order(*best)) best = &s;
    }
    if (best == nullptr) return std::nullopt;
    return *best;
  }

 private:
  char pattern_at(const Candidate& c, int32_t k) const {
    if (k < c.from) return fronts_[c.from][c.parent].pattern[k];
    if (c.block != kSpanStart) return c.block;
    return k == c.from ? kSpanStart : kSpanContinue;
  }

  bool pattern_less(const Candidate& a, const Candidate& b, int32_t length) const {
    for (int32_t k = 0; k < length; ++k) {
      const char x = pattern_at(a, k);
      const char y = pattern_at(b, k);
      if (x != y) return x < y;
    }
    return false;
  }

  // Keeps the candidates no other dominates. t dominates u when both continue alike and t ends
  // no later in the order (cost, peak, P_L, pattern): P_t ≤ P_u and either t is cheaper, or it
  // costs the same with M_t ≤ M_u and (P_t, pattern_t) < (P_u, pattern_u). In order of (cost,
  // M, P, pattern) that is: P not below the least P of a cheaper survivor, or (P, pattern) not
  // below the least of an earlier survivor of the same cost.
  // Of candidates equal in (cost, M, P) only the least pattern can survive (it dominates the
  // rest), so the sort leaves patterns out and each such run is scanned once for its least:
  // a pattern comparison walks up to `boundary` characters, and uniform chains tie often (a
  // 128-layer chain spent a third of its planning time comparing patterns inside the sort).
  void build_front(int32_t boundary, std::vector<Candidate>& candidates) {
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.cost != b.cost) return a.cost < b.cost;
      if (a.peak != b.peak) return a.peak < b.peak;
      return a.kept < b.kept;
    });
    int64_t cheaper_least = std::numeric_limits<int64_t>::max();  // least P of cheaper survivors
    const Candidate* group_least = nullptr;  // least (P, pattern) among this cost's survivors
    int64_t group_least_kept = cheaper_least;
    for (size_t k = 0, run_end = 0; k < candidates.size(); k = run_end) {
      const Candidate* least = &candidates[k];  // the least pattern of this (cost, M, P) run
      for (run_end = k + 1; run_end < candidates.size(); ++run_end) {
        const Candidate& next = candidates[run_end];
        if (next.cost != least->cost || next.peak != least->peak || next.kept != least->kept) {
          break;
        }
        if (pattern_less(next, *least, boundary)) least = &next;
      }
      const Candidate& c = *least;
      if (k > 0 && c.cost != candidates[k - 1].cost) {
        cheaper_least = std::min(cheaper_least, group_least_kept);
        group_least = nullptr;
      }
      if (c.kept >= cheaper_least) continue;
      if (group_least != nullptr &&
          (group_least->kept < c.kept ||
           (group_least->kept == c.kept && !pattern_less(c, *group_least, boundary)))) {
        continue;
      }
      group_least = &c;
      group_least_kept = c.kept;
      State state{c.kept, c.peak, c.cost, fronts_[c.from][c.parent].pattern};
      if (c.block == kSpanStart) {
        state.pattern += kSpanStart;
        state.pattern.append(static_cast<size_t>(boundary - c.from - 1), kSpanContinue);
      } else {
        state.pattern += c.block;
      }
      fronts_[boundary].push_back(std::move(state));
    }
    candidates = {};
  }

  const ChainCosts& costs_;
  int64_t budget_;
  double cost_bound_;
  RemainingCost remaining_;
  std::vector<std::vector<State>> fronts_;  // per boundary
};

RecomputeSchedule from_pattern(std::string name, const std::string& pattern) {
  RecomputeSchedule schedule{std::move(name), std::vector<LayerPlan>(pattern.size())};
  for (size_t l = 0; l < pattern.size(); ++l) {
    switch (pattern[l]) {
      case kSelective:
        schedule.layers[l].recompute = LayerRecompute::selective;
        break;
      case kSpanStart:
      case kSpanContinue:
        schedule.layers[l] = {LayerRecompute::full, pattern[l] == kSpanStart};
        break;
      default:
        break;
    }
  }
  return schedule;
}

// The least peak, from a peak some schedule reaches: a bound that prunes every state above it.
int64_t least_peak(const ChainCosts& costs, int64_t upper) {
  struct Point {
    int64_t kept;  // P
    int64_t peak;  // the largest A so far
  };
  const std::vector<LayerCosts>& layers = costs.layers;
  const size_t count = layers.size();
  const int64_t head = costs.head_bytes;
  // Per boundary, the points proposed for it; boundary 0 starts the step with A = E.
  std::vector<std::vector<Point>> pending{{Point{costs.before_bytes, costs.before_bytes}}};
  pending.resize(count + 1);
  int64_t least = upper;
  for (size_t i = 0; i <= count; ++i) {
    std::vector<Point>& points = pending[i];
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
      return a.kept != b.kept ? a.kept < b.kept : a.peak < b.peak;
    });
    std::vector<Point> front;
    for (const Point& point : points) {
      if (front.empty() || point.peak < front.back().peak) front.push_back(point);
    }
    points = {};
    if (i == count) {
      for (const Point& point : front)
        least = std::min(least, std::max(point.peak, point.kept + head));
      break;
    }
    auto propose = [&](size_t to, int64_t kept, int64_t peak) {
      if (peak <= upper && kept + head <= upper) pending[to].push_back({kept, peak});
    };
    for (const Point& s : front) {
      const int64_t forward = std::max(s.peak, s.kept + layers[i].saved_bytes);
      propose(i + 1, s.kept + layers[i].saved_bytes, forward);
      propose(i + 1, s.kept + layers[i].selective_bytes, forward);
      int64_t recompute = s.kept;
      for (size_t j = i + 1; j <= count; ++j) {
        recompute += layers[j - 1].saved_bytes;
        if (recompute > upper) break;
        propose(j, s.kept + layers[j - 1].output_bytes, std::max(s.peak, recompute));
      }
    }
  }
  return least;
}

}  // namespace

int64_t least_activation_peak_bytes(const ChainCosts& costs) {
  validate_chain_costs(costs);
  // Hand schedules bound the search from above: every layer its own span keeps the least
  // between layers, no recompute re-runs nothing, √L spans sit between the two.
  int64_t upper = std::numeric_limits<int64_t>::max();
  for (const char* spec : {"full", "none", "sqrt"}) {
    upper = std::min(
        upper, activation_peak_bytes(costs, make_schedule(parse_recompute_spec(spec), costs)));
  }
  return least_peak(costs, upper);
}

RecomputeSchedule optimal_schedule(const ChainCosts& costs, int64_t budget_bytes) {
  validate_chain_costs(costs);
  // A budget ≤ 0 cannot come from parse_recompute_spec(); it still gets a name and the error.
  const std::string name =
      budget_bytes > 0 ? to_string(RecomputeSpec{RecomputeSpec::Kind::budget, 0, budget_bytes})
                       : "budget:" + std::to_string(budget_bytes);
  // A coarse pass (P in 1/256ths of the budget) finds a cost some schedule reaches; the exact
  // pass then ignores every dearer prefix, which is most of them when the budget is loose.
  const std::optional<double> bound =
      least_cost(costs, budget_bytes, std::max<int64_t>(1, budget_bytes / 256),
                 std::numeric_limits<double>::infinity());
  const std::optional<double> cost =
      least_cost(costs, budget_bytes, 1, bound.value_or(std::numeric_limits<double>::infinity()));
  std::optional<State> best;
  if (cost) best = CheapestPass(costs, budget_bytes, *cost).run();
  if (!best) {
    const int64_t least = least_activation_peak_bytes(costs);
    throw UsageError("no recompute schedule fits " + name + " (" + std::to_string(budget_bytes) +
                     " bytes of saved activations): the least peak any schedule of the " +
                     std::to_string(costs.layers.size()) +
                     (costs.layers.size() == 1 ? " layer" : " layers") + " reaches is " +
                     std::to_string(least) + " bytes (" +
                     memory::format_size(static_cast<uint64_t>(least)) + ")");
  }
  const RecomputeSchedule schedule = from_pattern(name, best->pattern);
  const int64_t high = activation_peak_bytes(costs, schedule);
  if (high > budget_bytes || recompute_cost(costs, schedule) != *cost) {
    throw InternalError("planned schedule " + schedule_pattern(schedule) + " peaks at " +
                        std::to_string(high) + " bytes, budget " + std::to_string(budget_bytes));
  }
  return schedule;
}

}  // namespace vramlab::recompute
