// Tests of exercise 07.1 (the peak of a snapshot's trace and the k largest allocations live
// there). They run against your code (`vramlab check 07.1`) and against the reference (ctest:
// test_ex_07_1_ref).
// Expectations: (a) histories written by tests/history_builder.h, which knows the live set after
// every entry because it made them: random ones (nested modules, pending frees, reused addresses,
// equal sizes, allocations live before the trace, segment/oom/snapshot entries) and hand-made
// edge cases (empty trace, peak before the first entry, tensors past 4 GiB at 70B scale); (b) a
// real training step on `sim`, whose peak must equal the allocator's own peak of requested bytes;
// (c) the runtime's snapshot::analyse_peak (what `vramlab profile` prints) on both. Every value is
// exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_stats.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "exercises/07-profiling/tests/history_builder.h"
#include "lessons/07-profiling/api/top_at_peak.h"

namespace vramlab::lesson07 {
namespace {

using testing::HistoryBuilder;
using testing::Made;
using workbook::Comparison;
using workbook::Unit;

std::string text(std::uint64_t address, std::int64_t bytes, const std::string& module,
                 const std::string& phase, const std::string& tensor, std::int64_t event) {
  std::ostringstream out;
  out << "0x" << std::hex << address << std::dec << " " << bytes << " B " << module << "/" << phase
      << "/" << tensor << " @" << event;
  return out.str();
}

std::vector<std::string> expected_top(const HistoryBuilder& h, std::size_t k) {
  std::vector<Made> live;
  for (const auto& [address, made] : h.live_at_peak()) live.push_back(made);
  std::sort(live.begin(), live.end(), [](const Made& a, const Made& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.address < b.address;
  });
  if (live.size() > k) live.resize(k);
  std::vector<std::string> names;
  for (const Made& m : live)
    names.push_back(
        text(m.address, m.bytes, m.owner.module, m.owner.phase, m.owner.tensor, m.alloc_event));
  return names;
}

std::vector<std::string> actual_top(const TopAtPeak& got) {
  std::vector<std::string> names;
  for (const PeakAllocation& a : got.top)
    names.push_back(text(a.address, a.bytes, a.module, a.phase, a.tensor, a.alloc_event));
  return names;
}

// Peak bytes, peak entry and the top list of many histories, against the builder's answers.
struct PeakChecks {
  Comparison peak{"peak live requested bytes", Unit::kBytes};
  Comparison event{"index of the entry that reached the peak (-1: before the first)"};
  std::int64_t lists = 0;
  std::int64_t wrong_lists = 0;
  std::string first_wrong;

  void add(const std::string& where, const HistoryBuilder& h, std::mt19937_64& rng, std::size_t k) {
    const TopAtPeak got = top_at_peak(h.snapshot(rng), k);
    peak.add(where, static_cast<double>(h.peak_bytes()), static_cast<double>(got.peak_bytes));
    event.add(where, static_cast<double>(h.peak_event()), static_cast<double>(got.peak_event));
    const std::vector<std::string> want = expected_top(h, k);
    const std::vector<std::string> have = actual_top(got);
    ++lists;
    const workbook::NameSetDiff diff = workbook::compare_names(want, have);
    if (!diff.same() && ++wrong_lists == 1) {
      first_wrong = where + " (k=" + std::to_string(k) + ", " + std::to_string(h.entries()) +
                    " entries, peak at entry " + std::to_string(h.peak_event()) +
                    "): " + workbook::describe(diff, have) + "\n  expected, in order:";
      for (const std::string& name : want) first_wrong += "\n    " + name;
    }
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(peak);
    VRAMLAB_EXPECT_PASSES(event);
    EXPECT_EQ(wrong_lists, 0) << "the top allocations at the peak differ in " << wrong_lists
                              << " of " << lists << " histories; first: " << first_wrong;
  }
};

//! [test]
TEST(TopAtPeak, RandomHistoriesHaveTheBuildersPeakAndTopAllocations) {
  std::mt19937_64 rng(701);
  PeakChecks checks;
  for (const int before_trace : {0, 6, 40})
    for (const int events : {1, 2, 9, 120, 900})
      for (const std::int64_t max_bytes : {std::int64_t{1000}, std::int64_t{3} << 20})
        for (const std::size_t k :
             {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{10}, std::size_t{100000}})
          for (int trial = 0; trial < 2; ++trial) {
            const HistoryBuilder h = testing::random_history(rng, before_trace, events, max_bytes);
            checks.add("random: " + std::to_string(before_trace) + " events before the trace, " +
                           std::to_string(events) + " after, sizes up to " +
                           std::to_string(max_bytes),
                       h, rng, k);
          }
  checks.expect_passes();
}
//! [test]

TEST(TopAtPeak, TensorsPast4GiBAt70BScaleAreSummedIn64Bits) {
  std::mt19937_64 rng(702);
  PeakChecks checks;
  // Llama 2 70B in bf16 with AdamW: one FlatParameter of 138 GB, gradients, fp32 moments.
  const std::int64_t psi = 68'976'648'192;
  HistoryBuilder h;
  h.enter("model");
  const std::uint64_t params = h.alloc(2 * psi, "flat_param");
  h.start_recording();
  h.set_phase("backward");
  const std::uint64_t grads = h.alloc(2 * psi, "flat_grad");
  h.set_phase("optimizer");
  h.alloc(4 * psi, "exp_avg");
  h.alloc(4 * psi, "exp_avg_sq");
  h.free(grads);
  h.alloc(std::int64_t{5} << 30, "logits");  // 5 GiB: past 2^32 on its own
  h.free(params);
  h.exit();
  checks.add("70B bf16 AdamW", h, rng, 3);
  for (int trial = 0; trial < 20; ++trial)
    checks.add("random, sizes up to 20 GiB",
               testing::random_history(rng, 4, 150, std::int64_t{20} << 30), rng, 5);
  checks.expect_passes();
}

TEST(TopAtPeak, PendingFreesStayLiveUntilTheFreeCompletes) {
  std::mt19937_64 rng(703);
  PeakChecks checks;
  HistoryBuilder h;
  h.start_recording();
  const std::uint64_t a = h.alloc(1000, "a");
  h.free_request(a);  // e.g. used by another stream: still reserved
  h.alloc(600, "b");  // the peak: a (pending) and b
  h.free_complete(a);
  h.alloc(700, "c");
  checks.add("a freed but pending while b is allocated", h, rng, 5);
  checks.expect_passes();
}

TEST(TopAtPeak, AllocationsLiveBeforeTheTraceCountFromTheSegmentsAndFromTheirFrees) {
  std::mt19937_64 rng(704);
  PeakChecks checks;
  {
    HistoryBuilder h;  // the peak is the state before the first entry
    const std::uint64_t p = h.alloc(5000, "p");
    const std::uint64_t q = h.alloc(3000, "q");
    h.start_recording();
    h.free(q);           // freed in the trace: known only from its free
    h.alloc(2000, "a");  // 7000 < 8000
    h.free_request(p);   // pending at the end: still a live block
    checks.add("peak before the first entry", h, rng, 4);
  }
  {
    HistoryBuilder h;  // one live before, still live at the end, plus the trace's own
    h.alloc(5000, "p");
    h.start_recording();
    const std::uint64_t a = h.alloc(2000, "a");
    h.free(a);
    h.alloc(2000, "b", a);  // the same address again
    h.alloc(1, "c");
    checks.add("a block live throughout, an address reused", h, rng, 4);
  }
  {
    HistoryBuilder h;  // an empty trace: the peak is what the segments hold
    h.alloc(10, "x");
    const std::uint64_t y = h.alloc(20, "y");
    h.alloc(30, "z");
    h.free_request(y);
    h.start_recording();
    checks.add("empty trace", h, rng, 2);
  }
  checks.expect_passes();
}

TEST(TopAtPeak, TheFirstOfEqualPeaksWinsAndEqualSizesGoByAddress) {
  std::mt19937_64 rng(705);
  PeakChecks checks;
  {
    HistoryBuilder h;
    h.start_recording();
    const std::uint64_t a = h.alloc(4096, "a");
    h.free(a);
    h.alloc(4096, "b");  // the same live bytes again, later
    checks.add("two equal peaks", h, rng, 1);
  }
  {
    HistoryBuilder h;
    h.start_recording();
    for (int i = 0; i < 6; ++i) {  // equal sizes at descending addresses
      std::string tensor = "t";
      tensor += std::to_string(i);
      h.alloc(512, tensor, 0x7f2000000000ULL - static_cast<std::uint64_t>(i) * 512);
    }
    h.alloc(1024, "big");
    checks.add("equal sizes at the peak", h, rng, 4);
  }
  checks.expect_passes();
}

TEST(TopAtPeak, SegmentOomAndSnapshotEntriesChangeNothingLive) {
  std::mt19937_64 rng(706);
  PeakChecks checks;
  HistoryBuilder h;
  h.start_recording();
  h.noise("segment_alloc", 2 << 20);
  const std::uint64_t a = h.alloc(1 << 20, "a");
  h.noise("segment_map", 2 << 20);  // an expandable segment grows
  h.alloc(1 << 19, "b");
  h.noise("oom", 1 << 30);  // a failed request: nothing was allocated
  h.noise("snapshot", 1 << 30);
  h.free(a);
  h.noise("segment_unmap", 2 << 20);
  h.noise("segment_free", 2 << 20);
  checks.add("segments, an OOM and a snapshot", h, rng, 3);
  checks.expect_passes();
}

// A real step: the trace starts after a first step (parameters, optimizer states and the
// allocator's cache exist before it), so the peak is the allocator's peak of requested bytes
// since reset_peak_stats().
TEST(TopAtPeak, ARealTrainingStepPeaksAtTheAllocatorsPeakOfRequestedBytes) {
  for (const char* name : {"gpt2-mini", "gpt2-tiny"}) {
    nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
    train::TrainOptions options;
    options.model = model_config_by_name(name);
    options.batch = 3;
    options.seq = 17;
    train::Trainer trainer(runtime, options);
    trainer.step();
    memory::CachingAllocator& allocator = runtime.allocator();
    allocator.reset_peak_stats();
    allocator.record_history(memory::RecordMode::all);
    trainer.step();
    const nlohmann::json snapshot = allocator.snapshot();
    const std::int64_t peak = allocator.stats().requested_bytes[memory::kAggregate].peak;

    const TopAtPeak all = top_at_peak(snapshot, SIZE_MAX);
    Comparison bytes(std::string(name) + ": peak live requested bytes of a real step",
                     Unit::kBytes);
    bytes.add("allocator requested_bytes.peak", static_cast<double>(peak),
              static_cast<double>(all.peak_bytes));
    std::int64_t sum = 0;
    for (const PeakAllocation& a : all.top) sum += a.bytes;
    bytes.add("sum of every allocation live at the peak", static_cast<double>(peak),
              static_cast<double>(sum));
    VRAMLAB_EXPECT_PASSES(bytes);
    const std::size_t live_before = static_cast<std::size_t>(std::count_if(
        all.top.begin(), all.top.end(), [](const PeakAllocation& a) { return a.alloc_event < 0; }));
    EXPECT_GT(live_before, 0U) << name << ": the parameters were live before the trace";

    const TopAtPeak three = top_at_peak(snapshot, 3);
    ASSERT_EQ(three.top.size(), 3U) << name;
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_EQ(text(three.top[i].address, three.top[i].bytes, "", "", "", 0),
                text(all.top[i].address, all.top[i].bytes, "", "", "", 0))
          << name << ": the top 3 are the first 3 of every live allocation";
  }
}

// What the runtime's analysis (snapshot::analyse_peak) says of the same snapshot: the peak, its
// entry, and every allocation live there, in the exercise's order.
void expect_agrees_with_analyse_peak(const std::string& where, const nlohmann::json& snapshot,
                                     Comparison& peak, Comparison& event, std::int64_t& lists,
                                     std::int64_t& wrong_lists, std::string& first_wrong) {
  const snapshot::PeakReport runtime = snapshot::analyse_peak(snapshot);
  const TopAtPeak got = top_at_peak(snapshot, SIZE_MAX);
  peak.add(where, static_cast<double>(runtime.peak_bytes), static_cast<double>(got.peak_bytes));
  event.add(where, static_cast<double>(runtime.peak_event), static_cast<double>(got.peak_event));
  std::vector<snapshot::Allocation> live = runtime.live_at_peak;
  std::sort(live.begin(), live.end(),
            [](const snapshot::Allocation& a, const snapshot::Allocation& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes : a.address < b.address;
            });
  std::vector<std::string> want;
  for (const snapshot::Allocation& a : live)
    want.push_back(text(a.address, a.bytes, a.module, a.phase, a.tensor, a.alloc_event));
  const std::vector<std::string> have = actual_top(got);
  ++lists;
  const workbook::NameSetDiff diff = workbook::compare_names(want, have);
  if (!diff.same() && ++wrong_lists == 1)
    first_wrong = where + ": " + workbook::describe(diff, have);
}

TEST(TopAtPeak, AgreesWithTheRuntimesAnalysisOnRandomHistoriesAndARealStep) {
  std::mt19937_64 rng(707);
  Comparison peak("peak live requested bytes, against snapshot::analyse_peak", Unit::kBytes);
  Comparison event("index of the peak's entry, against snapshot::analyse_peak");
  std::int64_t lists = 0, wrong_lists = 0;
  std::string first_wrong;
  for (const int before_trace : {0, 8})
    for (const int events : {1, 50, 600})
      for (int trial = 0; trial < 5; ++trial)
        expect_agrees_with_analyse_peak(
            "random history, " + std::to_string(events) + " events",
            testing::random_history(rng, before_trace, events, std::int64_t{1} << 33).snapshot(rng),
            peak, event, lists, wrong_lists, first_wrong);
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
  train::TrainOptions options;
  options.model = model_config_by_name("gpt2-mini");
  options.batch = 2;
  options.seq = 23;
  train::Trainer trainer(runtime, options);
  trainer.step();
  runtime.allocator().record_history(memory::RecordMode::all);
  trainer.step();
  expect_agrees_with_analyse_peak("a real gpt2-mini step", runtime.allocator().snapshot(), peak,
                                  event, lists, wrong_lists, first_wrong);
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(event);
  EXPECT_EQ(wrong_lists, 0) << "the allocations live at the peak differ from analyse_peak's in "
                            << wrong_lists << " of " << lists
                            << " snapshots; first: " << first_wrong;
}

TEST(TopAtPeak, RejectsASnapshotWithoutSegmentsOrTracesNamingTheKey) {
  for (const char* key : {"segments", "device_traces"}) {
    nlohmann::json snapshot = {{"segments", nlohmann::json::array()},
                               {"device_traces", nlohmann::json::array()}};
    snapshot.erase(key);
    try {
      (void)top_at_peak(snapshot, 1);
      ADD_FAILURE() << "a snapshot without \"" << key << "\" was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos)
          << "the message should name " << key << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson07
