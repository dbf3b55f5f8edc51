// The activation-peak model: timelines traced by hand from the rules in activation_peak.h for a
// small chain under each hand schedule and two mixed ones, the recompute cost, the checks on
// schedules and chains, and 64-bit sizes of a 70B-like model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/recompute_cost.h"
#include "common/recompute/recompute_spec.h"
#include "tests/recompute/chain_fixtures.h"

namespace vramlab::recompute {
namespace {

using testing::schedule_of;
using Events = std::vector<ActivationEvent>;

// E = 100, H = 20; sizes all different so that a wrong term shows in the numbers.
//   layer:    0    1    2    3
//   F        50   70   90   80
//   S        30   40   60   45
//   O         5    7   11   13
ChainCosts small_chain(size_t layers) {
  ChainCosts chain;
  chain.before_bytes = 100;
  chain.head_bytes = 20;
  const std::vector<LayerCosts> all = {{50, 30, 5, 2.0, 0.25},
                                       {70, 40, 7, 3.0, 0.5},
                                       {90, 60, 11, 5.0, 0.125},
                                       {80, 45, 13, 7.0, 1.0}};
  chain.layers.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(layers));
  return chain;
}

int64_t max_of(const Events& events) {
  int64_t peak = 0;
  for (const ActivationEvent& e : events) peak = std::max(peak, e.bytes);
  return peak;
}

void expect_timeline(const ChainCosts& chain, const std::string& pattern, const Events& expected) {
  const RecomputeSchedule schedule = schedule_of(pattern);
  const Events events = activation_timeline(chain, schedule);
  EXPECT_EQ(events.size(), expected.size()) << pattern;
  for (size_t i = 0; i < std::min(events.size(), expected.size()); ++i) {
    EXPECT_EQ(events[i].label, expected[i].label) << pattern << " event " << i;
    EXPECT_EQ(events[i].bytes, expected[i].bytes) << pattern << " " << expected[i].label;
  }
  EXPECT_EQ(activation_peak_bytes(chain, schedule), max_of(expected)) << pattern;
}

TEST(ActivationTimeline, NoRecompute) {
  expect_timeline(small_chain(3), "...",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 150},
                   {"forward layer 1", 220},
                   {"layer 1 kept", 220},
                   {"forward layer 2", 310},
                   {"layer 2 kept", 310},
                   {"forward head", 330},
                   {"backward head", 310},
                   {"backward layer 2", 220},
                   {"backward layer 1", 150},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, FullEveryLayerItsOwnSpan) {
  expect_timeline(small_chain(3), "FFF",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 105},
                   {"forward layer 1", 175},
                   {"layer 1 kept", 112},
                   {"forward layer 2", 202},
                   {"layer 2 kept", 123},
                   {"forward head", 143},
                   {"backward head", 123},
                   {"recompute span 2", 202},
                   {"backward layer 2", 112},
                   {"recompute span 1", 175},
                   {"backward layer 1", 105},
                   {"recompute span 0", 150},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, EveryTwo) {
  expect_timeline(small_chain(3), "F.F",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 105},
                   {"forward layer 1", 175},
                   {"layer 1 kept", 175},
                   {"forward layer 2", 265},
                   {"layer 2 kept", 186},
                   {"forward head", 206},
                   {"backward head", 186},
                   {"recompute span 2", 265},
                   {"backward layer 2", 175},
                   {"backward layer 1", 105},
                   {"recompute span 0", 150},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, SqrtSpansOfTwo) {
  // Layer 1 continues layer 0's span: it keeps O1 and drops O0.
  expect_timeline(small_chain(3), "FfF",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 105},
                   {"forward layer 1", 175},
                   {"layer 1 kept", 107},
                   {"forward layer 2", 197},
                   {"layer 2 kept", 118},
                   {"forward head", 138},
                   {"backward head", 118},
                   {"recompute span 2", 197},
                   {"backward layer 2", 107},
                   {"recompute span 0-1", 220},
                   {"backward layer 1", 150},
                   {"backward layer 0", 100}});
  EXPECT_EQ(schedule_pattern(make_schedule(parse_recompute_spec("sqrt"), small_chain(3))), "FfF");
}

TEST(ActivationTimeline, Selective) {
  expect_timeline(small_chain(3), "sss",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 130},
                   {"forward layer 1", 200},
                   {"layer 1 kept", 170},
                   {"forward layer 2", 260},
                   {"layer 2 kept", 230},
                   {"forward head", 250},
                   {"backward head", 230},
                   {"backward layer 2", 170},
                   {"backward layer 1", 130},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, MixedSelectiveSpanNone) {
  expect_timeline(small_chain(4), "sFf.",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 130},
                   {"forward layer 1", 200},
                   {"layer 1 kept", 137},
                   {"forward layer 2", 227},
                   {"layer 2 kept", 141},
                   {"forward layer 3", 221},
                   {"layer 3 kept", 221},
                   {"forward head", 241},
                   {"backward head", 221},
                   {"backward layer 3", 141},
                   {"recompute span 1-2", 290},
                   {"backward layer 2", 200},
                   {"backward layer 1", 130},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, TwoSpansBackToBack) {
  expect_timeline(small_chain(4), "FfFf",
                  {{"start", 100},
                   {"forward layer 0", 150},
                   {"layer 0 kept", 105},
                   {"forward layer 1", 175},
                   {"layer 1 kept", 107},
                   {"forward layer 2", 197},
                   {"layer 2 kept", 118},
                   {"forward layer 3", 198},
                   {"layer 3 kept", 120},
                   {"forward head", 140},
                   {"backward head", 120},
                   {"recompute span 2-3", 277},
                   {"backward layer 3", 197},
                   {"backward layer 2", 107},
                   {"recompute span 0-1", 220},
                   {"backward layer 1", 150},
                   {"backward layer 0", 100}});
}

TEST(ActivationTimeline, NoLayers) {
  expect_timeline(small_chain(0), "",
                  {{"start", 100}, {"forward head", 120}, {"backward head", 100}});
}

// Any schedule of a random chain: the peak is the timeline's largest value, the step ends where
// it started, and each layer appears once forward and once backward.
TEST(ActivationTimeline, RandomSchedulesAreConsistent) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const ChainCosts chain = testing::random_chain(rng, 1 + trial % 9, false);
    std::string pattern;
    for (size_t l = 0; l < chain.layers.size(); ++l) {
      const char c = ".sFf"[rng() % 4];
      pattern += c == 'f' && (l == 0 || pattern.back() == '.' || pattern.back() == 's') ? 'F' : c;
    }
    const RecomputeSchedule schedule = schedule_of(pattern);
    const Events events = activation_timeline(chain, schedule);
    EXPECT_EQ(activation_peak_bytes(chain, schedule), max_of(events)) << pattern;
    EXPECT_EQ(events.front().bytes, chain.before_bytes);
    EXPECT_EQ(events.back().bytes, chain.before_bytes) << pattern;
    for (const ActivationEvent& e : events) EXPECT_GE(e.bytes, chain.before_bytes) << e.label;
    for (size_t l = 0; l < chain.layers.size(); ++l) {
      for (const std::string prefix : {"forward layer ", "backward layer "}) {
        const std::string label = prefix + std::to_string(l);
        EXPECT_EQ(std::count_if(events.begin(), events.end(),
                                [&](const ActivationEvent& e) { return e.label == label; }),
                  1)
            << label << " in " << pattern;
      }
    }
  }
}

TEST(RecomputeCost, SumsFullForwardsAndSelectiveParts) {
  const ChainCosts chain = small_chain(4);
  EXPECT_EQ(recompute_cost(chain, schedule_of("....")), 0.0);
  EXPECT_EQ(recompute_cost(chain, schedule_of("FFFF")), 2.0 + 3.0 + 5.0 + 7.0);
  EXPECT_EQ(recompute_cost(chain, schedule_of("FfFf")), 2.0 + 3.0 + 5.0 + 7.0);
  EXPECT_EQ(recompute_cost(chain, schedule_of("ssss")), 0.25 + 0.5 + 0.125 + 1.0);
  EXPECT_EQ(recompute_cost(chain, schedule_of("sFf.")), 0.25 + 3.0 + 5.0);
  EXPECT_EQ(recompute_cost(chain, schedule_of(".s.F")), 0.5 + 7.0);
}

TEST(ScheduleChecks, AFullLayerAfterANonFullOneMustStartASpan) {
  const ChainCosts chain = small_chain(4);
  for (const char* bad : {"f...", ".f..", "sfFf", "F.f.", "fFFF"}) {
    EXPECT_THROW(activation_peak_bytes(chain, schedule_of(bad)), InternalError) << bad;
    EXPECT_THROW(activation_timeline(chain, schedule_of(bad)), InternalError) << bad;
    EXPECT_THROW(recompute_cost(chain, schedule_of(bad)), InternalError) << bad;
  }
  EXPECT_THROW(activation_peak_bytes(chain, schedule_of("FFF")), InternalError);
  EXPECT_THROW(activation_peak_bytes(chain, schedule_of("FFFFF")), InternalError);
  EXPECT_NO_THROW(activation_peak_bytes(chain, schedule_of("FfFf")));
}

TEST(ChainChecks, InconsistentSizesAreBugsAndOverflowIsUsage) {
  const RecomputeSchedule none = schedule_of("..");
  auto with = [](auto change) {
    ChainCosts chain = small_chain(2);
    change(chain);
    return chain;
  };
  EXPECT_THROW(activation_peak_bytes(with([](ChainCosts& c) { c.before_bytes = -1; }), none),
               InternalError);
  EXPECT_THROW(activation_peak_bytes(with([](ChainCosts& c) { c.head_bytes = -1; }), none),
               InternalError);
  EXPECT_THROW(
      activation_peak_bytes(with([](ChainCosts& c) { c.layers[1].output_bytes = 41; }), none),
      InternalError);  // O > S
  EXPECT_THROW(
      activation_peak_bytes(with([](ChainCosts& c) { c.layers[0].selective_bytes = 51; }), none),
      InternalError);  // S > F
  EXPECT_THROW(
      activation_peak_bytes(with([](ChainCosts& c) { c.layers[0].forward_cost = -1.0; }), none),
      InternalError);
  EXPECT_THROW(activation_peak_bytes(with([](ChainCosts& c) {
                                       c.layers[1].selective_cost =
                                           std::numeric_limits<double>::quiet_NaN();
                                     }),
                                     none),
               InternalError);
  const int64_t quarter = std::numeric_limits<int64_t>::max() / 4;
  const ChainCosts huge = with([&](ChainCosts& c) {
    c.layers.assign(5, LayerCosts{quarter, quarter, quarter, 1.0, 1.0});
  });
  EXPECT_THROW(activation_peak_bytes(huge, schedule_of(".....")), UsageError);
  // Just below the limit is fine.
  const ChainCosts edge = with([&](ChainCosts& c) {
    c.before_bytes = 1;
    c.head_bytes = 2;
    c.layers.assign(4, LayerCosts{quarter, quarter, quarter, 1.0, 1.0});
  });
  EXPECT_EQ(activation_peak_bytes(edge, schedule_of("....")), 3 + 4 * quarter);
}

// A 70B-like chain (80 layers of about 10 GiB each, all sizes different) with every total far
// beyond 32 bits: the peaks follow the closed forms of the model.
TEST(ActivationPeak, SeventyBLikeChainIn64Bits) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  ChainCosts chain;
  chain.before_bytes = kGiB + 12345;
  chain.head_bytes = 9 * kGiB + 777;
  for (int64_t l = 0; l < 80; ++l) {
    const int64_t f = 10 * kGiB + 4099 * l;
    chain.layers.push_back({f, f - 6 * kGiB - 3 * l, 160 * (1 << 20) + 512 * l, 1.0, 0.1});
  }
  int64_t sum_f = 0;
  for (const LayerCosts& layer : chain.layers) sum_f += layer.saved_bytes;
  const int64_t e = chain.before_bytes;
  const int64_t h = chain.head_bytes;
  EXPECT_EQ(activation_peak_bytes(chain, make_schedule(parse_recompute_spec("none"), chain)),
            e + sum_f + h);
  // Every layer its own span: P before layer l is E + O_0 + … + O_{l−1}; the peak is the
  // largest P_{l−1} + F_l or the head's forward.
  int64_t prefix = e;
  int64_t full_peak = 0;
  for (const LayerCosts& layer : chain.layers) {
    full_peak = std::max(full_peak, prefix + layer.saved_bytes);
    prefix += layer.output_bytes;
  }
  full_peak = std::max(full_peak, prefix + h);
  EXPECT_EQ(activation_peak_bytes(chain, make_schedule(parse_recompute_spec("full"), chain)),
            full_peak);
  EXPECT_GT(full_peak, int64_t{1} << 33);
  int64_t sum_s = 0;
  for (const LayerCosts& layer : chain.layers) sum_s += layer.selective_bytes;
  EXPECT_EQ(
      activation_peak_bytes(chain, make_schedule(parse_recompute_spec("selective"), chain)),
      std::max(e + sum_s - chain.layers.back().selective_bytes + chain.layers.back().saved_bytes,
               e + sum_s + h));
  EXPECT_GT(e + sum_f + h, int64_t{800} * kGiB);
}

}  // namespace
}  // namespace vramlab::recompute
