// `--recompute` forms: every form parses and prints back, bad input is refused with the value
// and the list of forms, and each hand schedule recomputes the layers its definition names.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "tests/recompute/chain_fixtures.h"

namespace vramlab::recompute {
namespace {

using Kind = RecomputeSpec::Kind;

ChainCosts chain_of(size_t layers) {
  ChainCosts chain;
  chain.layers.assign(layers, LayerCosts{10, 6, 2, 1.0, 0.1});
  return chain;
}

TEST(RecomputeSpec, ParsesEveryForm) {
  EXPECT_EQ(parse_recompute_spec("none"), (RecomputeSpec{Kind::none, 0, 0}));
  EXPECT_EQ(parse_recompute_spec("full"), (RecomputeSpec{Kind::full, 0, 0}));
  EXPECT_EQ(parse_recompute_spec("sqrt"), (RecomputeSpec{Kind::sqrt, 0, 0}));
  EXPECT_EQ(parse_recompute_spec("selective"), (RecomputeSpec{Kind::selective, 0, 0}));
  EXPECT_EQ(parse_recompute_spec("every:1"), (RecomputeSpec{Kind::every, 1, 0}));
  EXPECT_EQ(parse_recompute_spec("every:7"), (RecomputeSpec{Kind::every, 7, 0}));
  EXPECT_EQ(parse_recompute_spec("every:1000000"), (RecomputeSpec{Kind::every, 1000000, 0}));
}

TEST(RecomputeSpec, BudgetTakesPlainBytesAndUnits) {
  struct Case {
    const char* text;
    int64_t bytes;
  };
  for (const Case c :
       {Case{"budget:1", 1}, Case{"budget:123456789", 123456789}, Case{"budget:4KiB", 4096},
        Case{"budget:3MiB", 3 * 1048576}, Case{"budget:20GiB", int64_t{20} << 30},
        Case{"budget:2KB", 2000}, Case{"budget:5MB", 5000000}, Case{"budget:7GB", 7000000000},
        Case{"budget:1.5GiB", int64_t{3} << 29}, Case{"budget:9000000000000", 9000000000000}}) {
    EXPECT_EQ(parse_recompute_spec(c.text), (RecomputeSpec{Kind::budget, 0, c.bytes})) << c.text;
  }
}

TEST(RecomputeSpec, PrintsWhatItParses) {
  for (const char* text :
       {"none", "full", "sqrt", "selective", "every:1", "every:13", "budget:20GiB", "budget:3MiB",
        "budget:4KiB", "budget:2TiB", "budget:1000", "budget:1"}) {
    EXPECT_EQ(to_string(parse_recompute_spec(text)), text);
  }
  // Decimal units print in bytes, or in the binary unit that divides them exactly.
  EXPECT_EQ(to_string(parse_recompute_spec("budget:7GB")), "budget:7000000000");
  EXPECT_EQ(to_string(parse_recompute_spec("budget:2KB")), "budget:2000");
  EXPECT_EQ(to_string(parse_recompute_spec("budget:1073741824")), "budget:1GiB");
  EXPECT_EQ(to_string(parse_recompute_spec("budget:1536MiB")), "budget:1536MiB");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const RecomputeSpec spec{Kind::budget, 0, static_cast<int64_t>(rng() >> (2 + i % 60)) + 1};
    EXPECT_EQ(parse_recompute_spec(to_string(spec)), spec) << to_string(spec);
  }
}

TEST(RecomputeSpec, BadInputNamesTheValueAndListsTheForms) {
  for (const char* text : {"",
                           "None",
                           "FULL",
                           " full",
                           "full ",
                           "every",
                           "every:",
                           "every:0",
                           "every:-2",
                           "every:+2",
                           "every:2.5",
                           "every:x",
                           "every:2:3",
                           "sqrt:4",
                           "budget",
                           "budget:",
                           "budget:0",
                           "budget:-5",
                           "budget:0GiB",
                           "budget:20XB",
                           "budget:GiB",
                           "budget:1e9",
                           "budget:99999999999999999999",
                           "budget:20 GiB",
                           "checkpoint",
                           "selective:1"}) {
    try {
      parse_recompute_spec(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& error) {
      const std::string message = error.what();
      const std::string quoted = std::string(1, '\'').append(text).append(1, '\'');
      EXPECT_NE(message.find(quoted), std::string::npos) << message;
      for (const char* form : {"none", "full", "every:K", "sqrt", "selective", "budget:BYTES"}) {
        EXPECT_NE(message.find(form), std::string::npos) << form << " missing from: " << message;
      }
    }
  }
}

// The hand schedules as patterns: '.' none, 's' selective, 'F' full span start, 'f' full.
std::string pattern_for(const char* spec, size_t layers) {
  const RecomputeSchedule schedule = make_schedule(parse_recompute_spec(spec), chain_of(layers));
  EXPECT_EQ(schedule.name, spec);
  EXPECT_EQ(schedule.layers.size(), layers);
  validate_schedule(schedule, layers);
  return schedule_pattern(schedule);
}

TEST(HandSchedules, NoneFullSelective) {
  EXPECT_EQ(pattern_for("none", 5), ".....");
  EXPECT_EQ(pattern_for("full", 5), "FFFFF");
  EXPECT_EQ(pattern_for("selective", 5), "sssss");
  EXPECT_EQ(pattern_for("full", 0), "");
}

TEST(HandSchedules, EveryKRecomputesLayersZeroKTwoK) {
  EXPECT_EQ(pattern_for("every:1", 4), "FFFF");
  EXPECT_EQ(pattern_for("every:2", 6), "F.F.F.");
  EXPECT_EQ(pattern_for("every:2", 7), "F.F.F.F");
  EXPECT_EQ(pattern_for("every:3", 8), "F..F..F.");
  // K of the chain's length or more: layer 0 only (documented in recompute_spec.h).
  EXPECT_EQ(pattern_for("every:5", 5), "F....");
  EXPECT_EQ(pattern_for("every:9", 5), "F....");
  EXPECT_EQ(pattern_for("every:9223372036854775807", 3), "F..");
  for (size_t layers = 1; layers <= 40; ++layers) {
    for (int64_t k = 1; k <= 12; ++k) {
      const std::string spec = "every:" + std::to_string(k);
      const std::string pattern = pattern_for(spec.c_str(), layers);
      for (size_t l = 0; l < layers; ++l) {
        EXPECT_EQ(pattern[l], l % static_cast<size_t>(k) == 0 ? 'F' : '.') << spec << " " << l;
      }
    }
  }
}

TEST(HandSchedules, FullLayerCountAndNames) {
  auto full_layers = [](const char* spec, size_t layers) {
    return full_layer_count(make_schedule(parse_recompute_spec(spec), chain_of(layers)));
  };
  EXPECT_EQ(full_layers("none", 7), 0u);
  EXPECT_EQ(full_layers("selective", 7), 0u);
  EXPECT_EQ(full_layers("full", 7), 7u);
  EXPECT_EQ(full_layers("sqrt", 7), 7u);
  EXPECT_EQ(full_layers("every:3", 7), 3u);  // layers 0, 3, 6
  EXPECT_EQ(full_layers("every:3", 6), 2u);  // layers 0, 3
  EXPECT_EQ(to_string(LayerRecompute::none), "none");
  EXPECT_EQ(to_string(LayerRecompute::full), "full");
  EXPECT_EQ(to_string(LayerRecompute::selective), "selective");
}

TEST(HandSchedules, SqrtIsSpansOfCeilRootL) {
  EXPECT_EQ(pattern_for("sqrt", 1), "F");
  EXPECT_EQ(pattern_for("sqrt", 2), "Ff");
  EXPECT_EQ(pattern_for("sqrt", 4), "FfFf");
  EXPECT_EQ(pattern_for("sqrt", 5), "FffFf");
  EXPECT_EQ(pattern_for("sqrt", 9), "FffFffFff");
  EXPECT_EQ(pattern_for("sqrt", 10), "FfffFfffFf");
  for (size_t layers = 1; layers <= 200; ++layers) {
    const std::string pattern = pattern_for("sqrt", layers);
    size_t k = 1;
    while (k * k < layers) ++k;
    size_t starts = 0;
    for (size_t l = 0; l < layers; ++l) {
      EXPECT_EQ(pattern[l], l % k == 0 ? 'F' : 'f') << layers << " layers, layer " << l;
      starts += pattern[l] == 'F';
    }
    EXPECT_EQ(starts, (layers + k - 1) / k);
    EXPECT_LE(static_cast<double>(starts), std::ceil(std::sqrt(static_cast<double>(layers))));
  }
}

}  // namespace
}  // namespace vramlab::recompute
