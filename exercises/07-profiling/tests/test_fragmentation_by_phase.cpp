// Tests of exercise 07.4 (the largest reserved − allocated gap per training phase). They run
// against your code (`vramlab check 07.4`) and against the reference (ctest: test_ex_07_4_ref).
// Expectations: recordings written by tests/history_builder.h, which reserves and releases
// segments (plain and expandable) as an allocator does and knows reserved and allocated bytes after
// every entry and the phase it ran in: random ones (segments reserved and allocations made before
// the trace, pending frees, OOM and snapshot entries), hand-made ones (an empty trace, a cache
// emptied in the optimizer step, an expandable segment that grows and shrinks, 70B-scale segments
// past 4 GiB); and real profiled steps, whose every moment must lie within the allocator's own
// bounds (reserved covers allocated, the parameters are always allocated, neither exceeds the
// allocator's peaks). Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_stats.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/profile/profiler.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "exercises/07-profiling/tests/history_builder.h"
#include "lessons/07-profiling/api/fragmentation_by_phase.h"

namespace vramlab::lesson07 {
namespace {

using testing::HistoryBuilder;
using workbook::Comparison;
using workbook::Unit;

// Every phase's worst moment, and the phases' order, against the builder's.
struct GapChecks {
  Comparison gap{"largest reserved - allocated in the phase", Unit::kBytes};
  Comparison reserved{"reserved bytes at the phase's worst moment", Unit::kBytes};
  Comparison allocated{"allocated bytes at the phase's worst moment", Unit::kBytes};
  Comparison event{"index of the first entry that reached the phase's worst gap"};
  Comparison entries{"trace entries that ran in the phase"};
  std::int64_t orders = 0;
  std::int64_t wrong_orders = 0;
  std::string first_wrong;

  void add(const std::string& where, const HistoryBuilder& h, std::mt19937_64& rng) {
    std::vector<PhaseGap> want;
    for (const auto& [phase, g] : h.worst_gap())
      want.push_back({phase, g.entries, g.gap, g.event, g.reserved, g.allocated});
    std::sort(want.begin(), want.end(), [](const PhaseGap& x, const PhaseGap& y) {
      return x.gap_bytes != y.gap_bytes ? x.gap_bytes > y.gap_bytes : x.phase < y.phase;
    });
    const std::vector<PhaseGap> got = fragmentation_by_phase(h.recording(rng));
    std::vector<std::string> want_names, got_names;
    for (const PhaseGap& p : want) want_names.push_back(p.phase);
    for (const PhaseGap& p : got) got_names.push_back(p.phase);
    ++orders;
    const workbook::NameSetDiff diff = workbook::compare_names(want_names, got_names);
    if (!diff.same() && ++wrong_orders == 1)
      first_wrong = where + ": " + workbook::describe(diff, got_names);
    std::map<std::string, PhaseGap> by_phase;
    for (const PhaseGap& p : got) by_phase[p.phase] = p;
    for (const PhaseGap& w : want) {
      const PhaseGap g = by_phase.count(w.phase) != 0 ? by_phase[w.phase] : PhaseGap{};
      const std::string at = where + ", phase " + w.phase;
      gap.add(at, static_cast<double>(w.gap_bytes), static_cast<double>(g.gap_bytes));
      reserved.add(at, static_cast<double>(w.reserved_bytes),
                   static_cast<double>(g.reserved_bytes));
      allocated.add(at, static_cast<double>(w.allocated_bytes),
                    static_cast<double>(g.allocated_bytes));
      event.add(at, static_cast<double>(w.event), static_cast<double>(g.event));
      entries.add(at, static_cast<double>(w.entries), static_cast<double>(g.entries));
    }
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(gap);
    VRAMLAB_EXPECT_PASSES(reserved);
    VRAMLAB_EXPECT_PASSES(allocated);
    VRAMLAB_EXPECT_PASSES(event);
    VRAMLAB_EXPECT_PASSES(entries);
    EXPECT_EQ(wrong_orders, 0) << "the phases (by worst gap, then name) differ in " << wrong_orders
                               << " of " << orders << " recordings; first: " << first_wrong;
  }
};

//! [test]
TEST(FragmentationByPhase, TheOptimizerStepAfterACacheFullOfActivationsIsTheWorst) {
  std::mt19937_64 rng(741);
  GapChecks checks;
  HistoryBuilder h;
  h.set_phase("setup");
  h.segment_alloc(std::int64_t{20} << 20);  // before the trace: the parameters' segment
  h.alloc(std::int64_t{19} << 20, "params");
  h.start_recording();
  h.set_phase("forward");
  h.segment_alloc(std::int64_t{64} << 20);
  std::vector<std::uint64_t> activations;
  for (int i = 0; i < 6; ++i) activations.push_back(h.alloc((std::int64_t{9} << 20) + 1, "act"));
  h.set_phase("backward");
  for (const std::uint64_t a : activations) h.free(a);  // the cache keeps the 64 MiB segment
  h.alloc(std::int64_t{3} << 20, "grad");
  h.set_phase("optimizer");
  h.noise("snapshot", 0);  // changes nothing, but counts for the optimizer's phase
  h.segment_alloc(std::int64_t{2} << 20);
  h.alloc(std::int64_t{1} << 20, "exp_avg");
  checks.add("forward, backward, optimizer", h, rng);
  checks.expect_passes();
}
//! [test]

TEST(FragmentationByPhase, RandomRecordingsMatchTheBuilder) {
  std::mt19937_64 rng(742);
  GapChecks checks;
  for (const int before_trace : {0, 10, 60})
    for (const int events : {1, 4, 80, 700})
      for (const std::int64_t max_bytes : {std::int64_t{5000}, std::int64_t{7} << 20})
        for (int trial = 0; trial < 3; ++trial)
          checks.add("random: " + std::to_string(before_trace) + " events before the trace, " +
                         std::to_string(events) + " after, sizes up to " +
                         std::to_string(max_bytes),
                     testing::random_history(rng, before_trace, events, max_bytes), rng);
  checks.expect_passes();
}

TEST(FragmentationByPhase, ExpandableSegmentsMapAndUnmapPages) {
  std::mt19937_64 rng(743);
  GapChecks checks;
  HistoryBuilder h;
  const std::uint64_t segment = h.segment_alloc(std::int64_t{2} << 20, true);  // before the trace
  h.start_recording();
  h.set_phase("forward");
  const std::uint64_t a = h.alloc(std::int64_t{1} << 20, "a");
  h.segment_remap(segment, std::int64_t{8} << 20);  // grows in place: no new segment
  const std::uint64_t b = h.alloc(std::int64_t{9} << 20, "b");
  h.set_phase("backward");
  h.free(b);
  h.segment_remap(segment, -(std::int64_t{6} << 20));  // empty_cache unmaps the free pages
  h.free(a);
  h.noise("oom", std::int64_t{1} << 40);  // a failed request changes nothing
  checks.add("an expandable segment", h, rng);
  checks.expect_passes();
}

TEST(FragmentationByPhase, SegmentsPast4GiBAt70BScale) {
  std::mt19937_64 rng(744);
  GapChecks checks;
  const std::int64_t psi = 68'976'648'192;  // Llama 2 70B
  HistoryBuilder h;
  h.segment_alloc(2 * psi + (std::int64_t{1} << 30));
  h.alloc(2 * psi, "flat_param");
  h.start_recording();
  h.set_phase("backward");
  const std::uint64_t grads = h.segment_alloc(2 * psi + (std::int64_t{3} << 30));
  const std::uint64_t g = h.alloc(2 * psi, "flat_grad");
  h.set_phase("optimizer");
  h.segment_alloc(8 * psi);
  h.alloc(4 * psi, "exp_avg");
  h.alloc(4 * psi, "exp_avg_sq");
  h.free(g);
  h.segment_free(grads);
  checks.add("70B bf16 AdamW", h, rng);
  for (int trial = 0; trial < 10; ++trial)
    checks.add("random, sizes up to 20 GiB",
               testing::random_history(rng, 5, 200, std::int64_t{20} << 30), rng);
  checks.expect_passes();
}

TEST(FragmentationByPhase, AnEmptyTraceHasNoPhase) {
  std::mt19937_64 rng(745);
  HistoryBuilder h;
  h.segment_alloc(std::int64_t{2} << 20);
  h.alloc(100, "x");
  h.start_recording();
  EXPECT_TRUE(fragmentation_by_phase(h.recording(rng)).empty());
  GapChecks checks;
  h.set_phase("optimizer");
  h.alloc(200, "y");
  checks.add("one entry", h, rng);
  checks.expect_passes();
}

// A real step (profiled from the second step, so parameters, optimizer states and cached segments
// exist before the trace): every phase's worst moment must be one the allocator could be in.
TEST(FragmentationByPhase, ARealProfiledStepStaysWithinTheAllocatorsBounds) {
  for (const char* name : {"gpt2-mini", "llama-tiny"}) {
    nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
    train::TrainOptions options;
    options.model = model_config_by_name(name);
    options.batch = 3;
    options.seq = 11;
    train::Trainer trainer(runtime, options);
    trainer.step();
    memory::CachingAllocator& allocator = runtime.allocator();
    allocator.reset_peak_stats();
    const std::int64_t parameters = trainer.model().parameters().values().bytes();
    profile::ProfilerOptions profiler_options;
    profiler_options.cpp_stacks = false;
    profile::Profiler profiler(runtime, profiler_options);
    trainer.step();
    const memory::DeviceStats stats = allocator.stats();
    const std::vector<PhaseGap> phases = fragmentation_by_phase(profiler.stop());
    std::vector<std::string> names;
    for (const PhaseGap& p : phases) names.push_back(p.phase);
    for (const char* phase : {"forward", "backward", "optimizer"})
      EXPECT_NE(std::find(names.begin(), names.end(), phase), names.end())
          << name << ": no entry in the " << phase << " phase";
    Comparison bounds(std::string(name) + ": bounds at each phase's worst moment (0 = within)",
                      Unit::kBytes);
    const auto over = [](std::int64_t value, std::int64_t limit) {
      return static_cast<double>(std::max<std::int64_t>(value - limit, 0));
    };
    for (const PhaseGap& p : phases) {
      bounds.add(p.phase + ": allocated above reserved", 0.0,
                 over(p.allocated_bytes, p.reserved_bytes));
      bounds.add(p.phase + ": reserved above the allocator's reserved peak", 0.0,
                 over(p.reserved_bytes, stats.reserved_bytes[memory::kAggregate].peak));
      bounds.add(p.phase + ": allocated above the allocator's requested peak", 0.0,
                 over(p.allocated_bytes, stats.requested_bytes[memory::kAggregate].peak));
      bounds.add(p.phase + ": allocated below the parameters' bytes", 0.0,
                 over(parameters, p.allocated_bytes));
      bounds.add(p.phase + ": gap is reserved - allocated", static_cast<double>(p.gap_bytes),
                 static_cast<double>(p.reserved_bytes - p.allocated_bytes));
    }
    VRAMLAB_EXPECT_PASSES(bounds);
  }
}

TEST(FragmentationByPhase, RejectsASnapshotWithoutTracesNamingTheKey) {
  profile::Recording recording;
  recording.snapshot = {{"segments", nlohmann::json::array()}};
  try {
    (void)fragmentation_by_phase(recording);
    ADD_FAILURE() << "a snapshot without \"device_traces\" was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("device_traces"), std::string::npos)
        << "the message should name device_traces: " << e.what();
  }
}

}  // namespace
}  // namespace vramlab::lesson07
