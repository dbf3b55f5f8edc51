// Tests of exercise 04.3 (the bytes of gathered parameter units ZeRO-3 holds at each phase of a
// step, and their peak). They run against your code (`vramlab check 04.3`) and against the
// reference (ctest: test_ex_04_3_ref).
// Expectations: an oracle written another way (each unit's gather and release phases as an
// interval, summed per phase) for random odd units, world sizes, tied or not, prefetch or not;
// a closed form of the peak for GPT-2 124M (tied), Llama 2 7B and 70B (untied), whose units come
// from dist::ShardLayout and whose bytes pass 2³¹; units of 2⁴⁰ elements; and the peak the
// runtime's ZeRO-3 (dist::DataParallel) measures in one training step on simulated ranks on the
// meta device. Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dist/shard_layout.h"
#include "common/dist/simulated_communicator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/04-zero/api/zero3_schedule.h"

namespace vramlab::lesson04 {
namespace {

using workbook::Comparison;
using workbook::Unit;

int64_t padded_bytes(int64_t n, int64_t world_size, int64_t element_bytes) {
  return (n / world_size + (n % world_size != 0 ? 1 : 0)) * world_size * element_bytes;
}

std::vector<std::string> phase_names(int64_t layers) {
  std::vector<std::string> names = {"forward_embedding"};
  for (int64_t l = 0; l < layers; ++l) names.push_back("forward_layer " + std::to_string(l));
  names.push_back("forward_head");
  names.push_back("backward_head");
  for (int64_t l = layers - 1; l >= 0; --l) names.push_back("backward_layer " + std::to_string(l));
  names.push_back("backward_embedding");
  return names;
}

// The oracle: every (unit, pass) is held over a closed interval of phase indices
// [gathered before, released after]; a phase holds the units whose interval contains it.
std::vector<int64_t> interval_oracle(const Zero3Schedule& s) {
  const auto layers = static_cast<int64_t>(s.unit_numel.size()) - 2;
  const int64_t forward_head = layers + 1, backward_head = layers + 2, last = 2 * layers + 3;
  const auto forward_layer = [](int64_t l) { return 1 + l; };
  const auto backward_layer = [layers](int64_t l) { return layers + 3 + (layers - 1 - l); };
  struct Held {
    int64_t unit, first, last;
  };
  std::vector<Held> held = {
      {0, 0, s.tied_embeddings ? forward_head : 0},         // embedding, forward
      {0, s.tied_embeddings ? backward_head : last, last},  // embedding, backward
      {layers + 1, forward_head, forward_head},             // head, forward
      {layers + 1, backward_head, backward_head}};          // head, backward
  for (int64_t l = 0; l < layers; ++l) {
    // Prefetch gathers block l with block l−1 in the forward, with block l+1 in the backward.
    const bool forward_early = s.prefetch && l >= 1;
    const bool backward_early = s.prefetch && l + 1 < layers;
    held.push_back({1 + l, forward_layer(forward_early ? l - 1 : l), forward_layer(l)});
    held.push_back({1 + l, backward_layer(backward_early ? l + 1 : l), backward_layer(l)});
  }
  std::vector<int64_t> per_phase(static_cast<size_t>(last + 1), 0);
  for (const Held& h : held)
    for (int64_t k = h.first; k <= h.last; ++k)
      per_phase[static_cast<size_t>(k)] +=
          padded_bytes(s.unit_numel[static_cast<size_t>(h.unit)], s.world_size, s.element_bytes);
  return per_phase;
}

std::string describe(const Zero3Schedule& s, const std::string& what) {
  return what + " (L=" + std::to_string(s.unit_numel.size() - 2) +
         ", N=" + std::to_string(s.world_size) + ", " + std::to_string(s.element_bytes) +
         " B/element" + (s.tied_embeddings ? ", tied" : ", untied") +
         (s.prefetch ? ", prefetch" : ", no prefetch") + ")";
}

struct ScheduleChecks {
  Comparison phases{"gathered bytes during a phase (each unit held from its gather to its release)",
                    Unit::kBytes};
  Comparison phase_count{"number of phases returned (2L + 4)"};
  Comparison peak{"peak gathered bytes (zero3_peak_gathered_bytes)", Unit::kBytes};

  void add(const Zero3Schedule& s, const std::string& what) {
    const std::vector<int64_t> expected = interval_oracle(s);
    const std::vector<int64_t> got = zero3_gathered_bytes_per_phase(s);
    const std::string where = describe(s, what);
    phase_count.add(where, static_cast<double>(expected.size()), static_cast<double>(got.size()));
    const std::vector<std::string> names =
        phase_names(static_cast<int64_t>(s.unit_numel.size()) - 2);
    for (size_t k = 0; k < expected.size() && k < got.size(); ++k)
      phases.add(where + " at " + names[k], static_cast<double>(expected[k]),
                 static_cast<double>(got[k]));
    peak.add(where, static_cast<double>(*std::max_element(expected.begin(), expected.end())),
             static_cast<double>(zero3_peak_gathered_bytes(s)));
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(phase_count);
    VRAMLAB_EXPECT_PASSES(phases);
    VRAMLAB_EXPECT_PASSES(peak);
  }
};

//! [test]
TEST(Zero3Schedule, EveryPhaseOfRandomOddUnitsTiedOrNotWithAndWithoutPrefetch) {
  std::mt19937_64 rng(431);
  std::uniform_int_distribution<int64_t> layers(0, 9), numel(0, 100000), world(1, 70);
  ScheduleChecks checks;
  for (int i = 0; i < 400; ++i) {
    Zero3Schedule s;
    s.unit_numel.resize(static_cast<size_t>(layers(rng) + 2));
    for (int64_t& n : s.unit_numel) n = numel(rng);
    s.world_size = world(rng);
    s.element_bytes = i % 3 == 0 ? 4 : 2;
    s.tied_embeddings = (i / 2) % 2 == 1;
    s.prefetch = i % 2 == 1;
    checks.add(s, "random units " + std::to_string(i));
  }
  checks.expect_passes();
}
//! [test]

TEST(Zero3Schedule, PeakOfGpt2Llama7BAnd70BEqualsTheClosedForm) {
  // Blocks are all alike, so the peak is one of three moments: a block phase (two blocks with
  // prefetch and L ≥ 2), the head's phase, or the embedding's; a tied embedding is held beside
  // the blocks and the head in both passes.
  Comparison peak("peak gathered bytes of a real model", Unit::kBytes);
  Comparison phases("gathered bytes during a phase of a real model", Unit::kBytes);
  for (const std::string_view name : {"gpt2-124m", "llama2-7b", "llama2-70b"}) {
    const ModelConfig model = model_config_by_name(name);
    const dist::ShardLayout layout(model.parameters(), 1);
    std::vector<int64_t> units;
    for (const dist::ShardUnit& unit : layout.units()) units.push_back(unit.numel);
    for (const int64_t world_size : {1, 2, 3, 4, 7, 8, 64, 1000})
      for (const int64_t element_bytes : {2, 4})
        for (const bool prefetch : {false, true}) {
          Zero3Schedule s;
          s.unit_numel = units;
          s.world_size = world_size;
          s.element_bytes = element_bytes;
          s.tied_embeddings = model.tied_embeddings;
          s.prefetch = prefetch;
          const auto p = [&](int64_t n) { return padded_bytes(n, world_size, element_bytes); };
          const int64_t blocks = (prefetch && model.layers >= 2 ? 2 : 1) * p(units[1]);
          const int64_t expected = s.tied_embeddings
                                       ? p(units.front()) + std::max(blocks, p(units.back()))
                                       : std::max({p(units.front()), blocks, p(units.back())});
          const std::string where = describe(s, std::string(name));
          peak.add(where, static_cast<double>(expected),
                   static_cast<double>(zero3_peak_gathered_bytes(s)));
          const std::vector<int64_t> oracle = interval_oracle(s);
          const std::vector<int64_t> got = zero3_gathered_bytes_per_phase(s);
          const std::vector<std::string> names = phase_names(model.layers);
          for (size_t k = 0; k < oracle.size(); ++k)
            phases.add(where + " at " + names[k], static_cast<double>(oracle[k]),
                       k < got.size() ? static_cast<double>(got[k]) : -1.0);
        }
  }
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(phases);
}

TEST(Zero3Schedule, SmallModelsAndUnitsOf2To40ElementsAreExact) {
  // L = 0 (no block), L = 1 (nothing to prefetch), empty units, and units whose bytes need 64
  // bits (double holds them exactly: below 2⁵³).
  ScheduleChecks checks;
  const int64_t huge = (int64_t{1} << 40) + 3;
  for (const bool tied : {false, true})
    for (const bool prefetch : {false, true})
      for (const std::vector<int64_t>& units :
           {std::vector<int64_t>{5, 3}, std::vector<int64_t>{0, 7, 0},
            std::vector<int64_t>{9, 1000001, 1}, std::vector<int64_t>{huge, huge, huge - 1, 17},
            std::vector<int64_t>{1, huge, 2, huge, 1}})
        for (const int64_t world_size : {1, 3, 1000}) {
          Zero3Schedule s;
          s.unit_numel = units;
          s.world_size = world_size;
          s.element_bytes = 4;
          s.tied_embeddings = tied;
          s.prefetch = prefetch;
          checks.add(s, "edge units");
        }
  checks.expect_passes();
}

TEST(Zero3Schedule, PeakEqualsWhatTheRuntimesZero3HoldsInOneStepOnSimulatedRanks) {
  // One step of the runtime's ZeRO-3 (common/dist/data_parallel.h) per case, every rank on the
  // meta device (sizes, no memory): the most bytes of gathered units it held at once.
  Comparison peak("peak gathered bytes: the runtime's DataParallel::gathered_peak_bytes",
                  Unit::kBytes);
  for (const std::string_view name : {"gpt2-mini", "llama-tiny", "gpt2-124m", "llama2-7b"})
    for (const int64_t world_size : {2, 3})
      for (const amp::Precision precision : {amp::Precision::fp32, amp::Precision::mixed_bf16})
        for (const bool prefetch : {false, true}) {
          const ModelConfig model = model_config_by_name(name);
          std::vector<int64_t> measured(static_cast<size_t>(world_size), 0);
          dist::run_simulated_ranks(world_size, false, [&](dist::Communicator& comm) {
            comm.set_move_data(false);
            nn::Runtime runtime(memory::parse_device("meta"));
            train::TrainOptions options;
            options.model = model;
            options.batch = 1;
            options.seq = 16;
            options.plan.amp.precision = precision;
            options.set_groups(&comm);
            options.plan.parallel.zero = dist::ZeroStage::parameters;
            options.plan.parallel.prefetch = prefetch;
            train::Trainer trainer(runtime, options);
            (void)trainer.step();
            measured[static_cast<size_t>(comm.rank())] =
                trainer.data_parallel()->gathered_peak_bytes();
          });
          Zero3Schedule s;
          const dist::ShardLayout layout(model.parameters(), 1);
          for (const dist::ShardUnit& unit : layout.units()) s.unit_numel.push_back(unit.numel);
          s.world_size = world_size;
          s.element_bytes = precision == amp::Precision::fp32 ? 4 : 2;
          s.tied_embeddings = model.tied_embeddings;
          s.prefetch = prefetch;
          const int64_t predicted = zero3_peak_gathered_bytes(s);
          for (int64_t r = 0; r < world_size; ++r)
            peak.add(describe(s, std::string(name)) + " rank " + std::to_string(r),
                     static_cast<double>(measured[static_cast<size_t>(r)]),
                     static_cast<double>(predicted));
        }
  VRAMLAB_EXPECT_PASSES(peak);
}

template <typename F>
void expect_usage_error_naming(const std::string& call, const std::string& value, F f) {
  try {
    f();
    ADD_FAILURE() << call << " accepted " << value;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos)
        << call << ": the message should name " << value << ": " << e.what();
  }
}

TEST(Zero3Schedule, RejectsBadInputNamingTheValue) {
  const auto with = [](std::vector<int64_t> units, int64_t element_bytes, int64_t world_size) {
    Zero3Schedule s;
    s.unit_numel = std::move(units);
    s.element_bytes = element_bytes;
    s.world_size = world_size;
    return s;
  };
  expect_usage_error_naming("one unit", "1",
                            [&] { (void)zero3_gathered_bytes_per_phase(with({10}, 2, 2)); });
  expect_usage_error_naming("a unit of -9 elements", "-9", [&] {
    (void)zero3_gathered_bytes_per_phase(with({10, -9, 4}, 2, 2));
  });
  expect_usage_error_naming("element_bytes 0", "0", [&] {
    (void)zero3_peak_gathered_bytes(with({10, 4}, 0, 2));
  });
  expect_usage_error_naming("N = -2", "-2", [&] {
    (void)zero3_peak_gathered_bytes(with({10, 4}, 2, -2));
  });
  // 2⁶² elements of 4 bytes: any message will do, but not a wrapped count.
  expect_usage_error_naming("bytes past 2^63", "", [&] {
    (void)zero3_peak_gathered_bytes(with({int64_t{1} << 62, 4}, 4, 1));
  });
}

}  // namespace
}  // namespace vramlab::lesson04
