// Tests of exercise 07.3 (the leak from two snapshots). They run against your code (`vramlab check
// 07.3`) and against the reference (ctest: test_ex_07_3_ref).
// Expectations: (a) training-like histories written by tests/history_builder.h, which knows what
// the program holds at each snapshot because it made every allocation: per step, activations
// that come and go, gradients re-allocated at new addresses, frees still pending at the snapshot,
// a cache that grows, and planted leaks (a loss kept every step, a list that grows by an odd
// size); blocks in a shuffled order; leaks past 4 GiB at 70B scale. (b) A real training step on
// `sim` with a planted leak of three tensors, whose sizes the test chose. Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/tensor.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "exercises/07-profiling/tests/history_builder.h"
#include "lessons/07-profiling/api/leak_finder.h"

namespace vramlab::lesson07 {
namespace {

using testing::HistoryBuilder;
using testing::Made;
using workbook::Comparison;
using workbook::Unit;
using Key = std::tuple<std::string, std::string, std::string>;

struct Held {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};

// What the program holds per owner: live allocations it has not freed (a pending free is freed).
std::map<Key, Held> held(const std::map<std::uint64_t, Made>& live) {
  std::map<Key, Held> by_owner;
  for (const auto& [address, m] : live) {
    if (m.free_requested) continue;
    Held& h = by_owner[{m.owner.module, m.owner.phase, m.owner.tensor}];
    ++h.count;
    h.bytes += m.bytes;
  }
  return by_owner;
}

std::string name_of(const std::string& module, const std::string& phase,
                    const std::string& tensor) {
  return (module.empty() ? "(none)" : module) + "/" + phase + "/" + tensor;
}

// Grown owners, their numbers and their order, against what the builder knows.
struct LeakChecks {
  Comparison counts{"blocks held per owner (before and after)"};
  Comparison bytes{"requested bytes held per owner (before and after)", Unit::kBytes};
  Comparison per_step{"growth in bytes per step", Unit::kBytes, 0.0, 1e-12};
  std::int64_t lists = 0;
  std::int64_t wrong_lists = 0;
  std::string first_wrong;

  void add(const std::string& where, const std::map<std::uint64_t, Made>& live_before,
           const nlohmann::json& before, const std::map<std::uint64_t, Made>& live_after,
           const nlohmann::json& after, std::int64_t steps) {
    const std::map<Key, Held> was = held(live_before), now = held(live_after);
    std::vector<OwnerGrowth> want;
    for (const auto& [key, h] : now) {
      const Held w = was.count(key) != 0 ? was.at(key) : Held{};
      if (h.bytes <= w.bytes && h.count <= w.count) continue;
      OwnerGrowth g;
      std::tie(g.module, g.phase, g.tensor) = key;
      g.count_before = w.count;
      g.count_after = h.count;
      g.bytes_before = w.bytes;
      g.bytes_after = h.bytes;
      g.bytes_per_step = static_cast<double>(h.bytes - w.bytes) / static_cast<double>(steps);
      want.push_back(g);
    }
    std::sort(want.begin(), want.end(), [](const OwnerGrowth& x, const OwnerGrowth& y) {
      const std::int64_t dx = x.bytes_after - x.bytes_before, dy = y.bytes_after - y.bytes_before;
      if (dx != dy) return dx > dy;
      const std::int64_t cx = x.count_after - x.count_before, cy = y.count_after - y.count_before;
      if (cx != cy) return cx > cy;
      return std::tie(x.module, x.phase, x.tensor) < std::tie(y.module, y.phase, y.tensor);
    });
    const std::vector<OwnerGrowth> got = leaked_owners(before, after, steps);
    std::vector<std::string> want_names, got_names;
    for (const OwnerGrowth& g : want) want_names.push_back(name_of(g.module, g.phase, g.tensor));
    for (const OwnerGrowth& g : got) got_names.push_back(name_of(g.module, g.phase, g.tensor));
    ++lists;
    const workbook::NameSetDiff diff = workbook::compare_names(want_names, got_names);
    if (!diff.same() && ++wrong_lists == 1)
      first_wrong = where + ": " + workbook::describe(diff, got_names);
    std::map<std::string, OwnerGrowth> by_name;
    for (const OwnerGrowth& g : got) by_name[name_of(g.module, g.phase, g.tensor)] = g;
    for (const OwnerGrowth& w : want) {
      const std::string name = name_of(w.module, w.phase, w.tensor);
      const OwnerGrowth g = by_name.count(name) != 0 ? by_name[name] : OwnerGrowth{};
      const std::string at = where + ", " + name;
      counts.add(at + " before", static_cast<double>(w.count_before),
                 static_cast<double>(g.count_before));
      counts.add(at + " after", static_cast<double>(w.count_after),
                 static_cast<double>(g.count_after));
      bytes.add(at + " before", static_cast<double>(w.bytes_before),
                static_cast<double>(g.bytes_before));
      bytes.add(at + " after", static_cast<double>(w.bytes_after),
                static_cast<double>(g.bytes_after));
      per_step.add(at, w.bytes_per_step, g.bytes_per_step);
    }
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(counts);
    VRAMLAB_EXPECT_PASSES(bytes);
    VRAMLAB_EXPECT_PASSES(per_step);
    EXPECT_EQ(wrong_lists, 0) << "the grown owners (by growth in bytes, in count, then name) "
                                 "differ in "
                              << wrong_lists << " of " << lists << " cases; first: " << first_wrong;
  }
};

// One training-like step: activations made and freed, gradients re-made at new addresses,
// optimizer states that stay, and the planted leaks.
struct Training {
  HistoryBuilder h;
  std::mt19937_64& rng;
  std::int64_t scale;
  std::vector<std::uint64_t> grads;
  std::uint64_t pending = 0;
  int step_index = 0;

  Training(std::mt19937_64& r, std::int64_t s) : rng(r), scale(s) { h.start_recording(); }

  std::int64_t size(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng) * scale;
  }

  void step(bool leak_loss, int leak_list_items) {
    if (pending != 0) h.free_complete(pending);  // last step's pending free completes
    pending = 0;
    h.set_phase("forward");
    std::vector<std::uint64_t> activations;
    for (const char* block : {"blocks.0", "blocks.1"}) {
      h.enter(block);
      h.enter(std::string(block) + ".attn");
      activations.push_back(h.alloc(size(100, 5000), "att"));
      h.exit();
      h.enter(std::string(block) + ".mlp");
      activations.push_back(h.alloc(size(100, 9000), "fc"));
      h.exit();
      h.exit();
    }
    h.enter("loss");
    const std::uint64_t loss = h.alloc(4, "loss");
    h.exit();
    h.set_phase("backward");
    for (const std::uint64_t a : activations) h.free(a);
    for (const std::uint64_t g : grads) h.free(g);  // re-made each step, elsewhere
    grads.clear();
    for (const char* block : {"blocks.0", "blocks.1"}) {
      h.enter(block);
      grads.push_back(h.alloc(size(1000, 1000), "grad"));
      h.exit();
    }
    if (!leak_loss) h.free(loss);
    h.set_phase("optimizer");
    h.enter("optimizer");
    if (step_index == 0)
      for (int i = 0; i < 2; ++i) h.alloc(size(2000, 2000), "exp_avg");          // made once, kept
    for (int i = 0; i < leak_list_items; ++i) h.alloc(size(1, 777), "history");  // grows
    if (leak_list_items > 0) {  // a large cache that grows a little: held most, grew least
      if (step_index == 0) h.alloc(size(100000, 100000), "kv_cache");
      h.alloc(size(1, 5), "kv_cache");
    }
    const std::uint64_t scratch = h.alloc(size(10, 300), "scratch");
    h.free_request(scratch);  // pending (another stream) when the snapshot is taken
    pending = scratch;
    h.exit();
    ++step_index;
  }
};

//! [test]
TEST(LeakFinder, AKeptLossAndAGrowingListAreFoundWithTheirGrowthPerStep) {
  std::mt19937_64 rng(731);
  LeakChecks checks;
  for (const std::int64_t steps : {1, 3, 7})
    for (int trial = 0; trial < 10; ++trial) {
      Training t(rng, 1);
      const bool leak_loss = trial % 2 == 0;
      const int list_items = trial % 3;
      const bool late = trial % 4 == 1;  // the leaks start after the first snapshot
      for (int s = 0; s < 2; ++s) t.step(leak_loss && !late, late ? 0 : list_items);
      const std::map<std::uint64_t, Made> live_before = t.h.live();
      const nlohmann::json before = t.h.snapshot(rng);
      for (std::int64_t s = 0; s < steps; ++s) t.step(leak_loss, list_items);
      checks.add(std::to_string(steps) + " steps apart, loss kept: " + (leak_loss ? "yes" : "no") +
                     ", " + std::to_string(list_items) + " list items a step" +
                     (late ? ", leaking only after the first snapshot" : ""),
                 live_before, before, t.h.live(), t.h.snapshot(rng), steps);
    }
  checks.expect_passes();
}
//! [test]

TEST(LeakFinder, NoLeakMeansNoOwnerEvenWhenTheCacheAndTheAddressesChange) {
  std::mt19937_64 rng(732);
  LeakChecks checks;
  for (int trial = 0; trial < 10; ++trial) {
    Training t(rng, 1);
    t.step(false, 0);
    const std::map<std::uint64_t, Made> live_before = t.h.live();
    const nlohmann::json before = t.h.snapshot(rng, 1 + trial % 4);
    for (int s = 0; s < 4; ++s) t.step(false, 0);
    const nlohmann::json after = t.h.snapshot(rng, 1 + (trial + 1) % 4);
    EXPECT_TRUE(leaked_owners(before, after, 4).empty()) << "trial " << trial;
    checks.add("no leak, trial " + std::to_string(trial), live_before, before, t.h.live(), after,
               4);
  }
  EXPECT_EQ(checks.lists, 10);
}

TEST(LeakFinder, LeaksPast4GiBAt70BScaleAreExact) {
  std::mt19937_64 rng(733);
  LeakChecks checks;
  for (const std::int64_t steps : {1, 2, 5}) {
    Training t(rng, std::int64_t{1} << 21);  // sizes × 2 MiB: a kept list item up to 1.5 GiB
    for (int s = 0; s < 2; ++s) t.step(true, 3);
    const std::map<std::uint64_t, Made> live_before = t.h.live();
    const nlohmann::json before = t.h.snapshot(rng);
    for (std::int64_t s = 0; s < steps; ++s) t.step(true, 3);
    checks.add("70B scale, " + std::to_string(steps) + " steps", live_before, before, t.h.live(),
               t.h.snapshot(rng), steps);
  }
  checks.expect_passes();
}

// A real run: two steps, a snapshot, three more steps that each keep one tensor of a size the
// test chose, another snapshot. Whatever the owner keys say, exactly one owner grew, by exactly
// those three tensors; the cache the steps left behind is not a leak.
TEST(LeakFinder, ARealRunFindsThePlantedTensorsAndNothingElse) {
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
  train::TrainOptions options;
  options.model = model_config_by_name("gpt2-mini");
  options.batch = 2;
  options.seq = 19;
  train::Trainer trainer(runtime, options);
  memory::CachingAllocator& allocator = runtime.allocator();
  allocator.record_history(memory::RecordMode::state);
  for (int s = 0; s < 2; ++s) trainer.step();
  const nlohmann::json before = allocator.snapshot();
  std::vector<memory::Tensor> kept;
  const std::vector<std::int64_t> sizes = {1, 333, 70001};  // u8 elements: requested bytes
  for (const std::int64_t n : sizes) {
    trainer.step();
    kept.emplace_back(allocator, std::vector<std::int64_t>{n}, DType::u8,
                      memory::MemoryCategory::other, "kept_loss");
  }
  const nlohmann::json after = allocator.snapshot();
  const std::vector<OwnerGrowth> grown = leaked_owners(before, after, 3);
  ASSERT_EQ(grown.size(), 1U) << "one owner grew (the planted tensors); got " << grown.size();
  Comparison growth("the planted leak", Unit::kBytes);
  growth.add("blocks grown", 3.0,
             static_cast<double>(grown[0].count_after - grown[0].count_before));
  growth.add("bytes grown", 1.0 + 333.0 + 70001.0,
             static_cast<double>(grown[0].bytes_after - grown[0].bytes_before));
  growth.add("bytes per step", (1.0 + 333.0 + 70001.0) / 3.0, grown[0].bytes_per_step);
  // The runtime's compare_snapshots (`vramlab profile --compare`) sees the same growth in total.
  std::int64_t runtime_bytes = 0, runtime_count = 0;
  for (const snapshot::Growth& g : snapshot::compare_snapshots(before, after)) {
    runtime_bytes += g.bytes_after - g.bytes_before;
    runtime_count += g.count_after - g.count_before;
  }
  growth.add("blocks grown, by snapshot::compare_snapshots", static_cast<double>(runtime_count),
             static_cast<double>(grown[0].count_after - grown[0].count_before));
  growth.add("bytes grown, by snapshot::compare_snapshots", static_cast<double>(runtime_bytes),
             static_cast<double>(grown[0].bytes_after - grown[0].bytes_before));
  VRAMLAB_EXPECT_PASSES(growth);
}

TEST(LeakFinder, RejectsBadInputNamingTheValue) {
  const nlohmann::json empty = {{"segments", nlohmann::json::array()},
                                {"device_traces", nlohmann::json::array()}};
  for (const std::int64_t steps : {std::int64_t{0}, std::int64_t{-3}}) {
    try {
      (void)leaked_owners(empty, empty, steps);
      ADD_FAILURE() << "steps_between " << steps << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(steps)), std::string::npos)
          << "the message should name " << steps << ": " << e.what();
    }
  }
  try {
    (void)leaked_owners(nlohmann::json::object(), empty, 1);
    ADD_FAILURE() << "a snapshot without \"segments\" was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("segments"), std::string::npos)
        << "the message should name segments: " << e.what();
  }
}

}  // namespace
}  // namespace vramlab::lesson07
