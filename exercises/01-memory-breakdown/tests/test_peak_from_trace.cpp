// Tests of exercise 01.3 (the peak of an allocation trace and what is live at it). They run
// against your code (`vramlab check 01.3`) and against the reference (ctest: test_ex_01_3_ref).
// Expectations: an independent brute-force model (re-sum the live tensors after every event), and
// the real caching allocator of common/memory replaying the same trace
// (allocated_bytes.all.peak, PyTorch's figure).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/memory/backing.h"
#include "common/memory/caching_allocator.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/01-memory-breakdown/api/peak_from_trace.h"

namespace vramlab::lesson01 {
namespace {

using memory::MemoryCategory;
using workbook::Comparison;
using workbook::Unit;

TraceEvent alloc(std::string name, int64_t bytes,
                 MemoryCategory category = MemoryCategory::activation) {
  return {TraceAction::kAlloc, std::move(name), bytes, category};
}
TraceEvent release(std::string name) {
  return {TraceAction::kFree, std::move(name), 0, MemoryCategory::other};
}

// "w7": names built by appending, which GCC 12's -Wrestrict does not misjudge.
std::string numbered(const char* prefix, int64_t i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

// Brute force: after event k, re-sum every tensor allocated and not yet freed in events 0..k.
struct Moment {
  int64_t bytes = 0;
  std::vector<std::string> live;  // sorted, > 0 bytes
};
Moment state_after(const std::vector<TraceEvent>& trace, size_t k) {
  std::map<std::string, int64_t> live;
  for (size_t i = 0; i <= k; ++i) {
    if (trace[i].action == TraceAction::kAlloc)
      live[trace[i].name] =
          trace[i].size_bytes == 0 ? 0 : ((trace[i].size_bytes - 1) / 512 + 1) * 512;
    else
      live.erase(trace[i].name);
  }
  Moment m;
  for (const auto& [name, bytes] : live) {
    m.bytes += bytes;
    if (bytes > 0) m.live.push_back(name);
  }
  return m;
}

// A random valid trace: allocations of odd, exact, zero and large sizes; frees of live tensors;
// names reused after they are freed; plateaus that reach the same peak twice.
std::vector<TraceEvent> random_trace(std::mt19937_64& rng, size_t events,
                                     int64_t max_bytes = int64_t{3} << 20) {
  std::vector<TraceEvent> trace;
  std::vector<std::string> live;
  int64_t next_id = 0;
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  while (trace.size() < events) {
    const int64_t r = pick(0, 99);
    if (!live.empty() && r < 40) {
      const size_t at = static_cast<size_t>(pick(0, static_cast<int64_t>(live.size()) - 1));
      trace.push_back(release(live[at]));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
      continue;
    }
    int64_t bytes = 0;
    if (r < 60)
      bytes = pick(1, 4096);  // small and odd
    else if (r < 75)
      bytes = 512 * pick(1, 64);  // exact multiples of 512
    else if (r < 80)
      bytes = 0;  // empty tensors
    else
      bytes = pick(1, max_bytes);  // up to large-pool sizes
    std::string name = "t";
    name += std::to_string(pick(0, 1) == 0 ? next_id++ : pick(0, next_id));
    if (std::find(live.begin(), live.end(), name) != live.end()) continue;
    trace.push_back(alloc(name, bytes, static_cast<MemoryCategory>(pick(0, 6))));
    live.push_back(name);
  }
  return trace;
}

//! [test]
TEST(PeakFromTrace, RandomTracesMatchABruteForceReplay) {
  std::mt19937_64 rng(0x0103);
  Comparison peak("peak bytes", Unit::kBytes), index("first event at the peak");
  size_t wrong_live_sets = 0;
  std::string first_wrong_live_set;
  for (int t = 0; t < 300; ++t) {
    const auto trace = random_trace(rng, static_cast<size_t>(1 + t % 60));
    Moment best;
    int64_t best_index = -1;
    for (size_t k = 0; k < trace.size(); ++k) {
      Moment m = state_after(trace, k);
      if (m.bytes > best.bytes) best = std::move(m), best_index = static_cast<int64_t>(k);
    }
    const PeakReport report = find_peak(trace);
    const std::string where =
        "trace " + std::to_string(t) + " (" + std::to_string(trace.size()) + " events)";
    peak.add(where, static_cast<double>(best.bytes), static_cast<double>(report.peak_bytes));
    index.add(where, static_cast<double>(best_index), static_cast<double>(report.peak_event_index));
    const workbook::NameSetDiff names = workbook::compare_names(best.live, report.live_at_peak);
    if (!names.same() && wrong_live_sets++ == 0)
      first_wrong_live_set = where + ": " + workbook::describe(names, report.live_at_peak);
  }
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(index);
  if (wrong_live_sets > 0)
    ADD_FAILURE() << "live_at_peak (names, sorted) is wrong in " << wrong_live_sets
                  << " traces; first at " << first_wrong_live_set;
}
//! [test]

TEST(PeakFromTrace, ReportsTheFirstMomentOfAPeakReachedTwice) {
  // 1 KiB + 2 KiB live after event 1 (3 KiB); freed; then 3 KiB again after event 4.
  const std::vector<TraceEvent> trace = {alloc("a", 1024), alloc("b", 2048), release("a"),
                                         release("b"), alloc("c", 3072)};
  const PeakReport report = find_peak(trace);
  Comparison peak("peak bytes", Unit::kBytes), index("first event at the peak");
  peak.add("two equal peaks", 3072, static_cast<double>(report.peak_bytes));
  index.add("two equal peaks", 1, static_cast<double>(report.peak_event_index));
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(index);
  const workbook::NameSetDiff names = workbook::compare_names({"a", "b"}, report.live_at_peak);
  if (!names.same())
    ADD_FAILURE() << "live_at_peak at the first peak: "
                  << workbook::describe(names, report.live_at_peak);
}

TEST(PeakFromTrace, ATraceOfOnlyEmptyTensorsHasNoPeak) {
  // 0-byte tensors hold nothing: the allocated bytes never rise above 0, so there is no peak
  // moment (index -1), whatever the number of events.
  Comparison peak("peak bytes", Unit::kBytes), index("first event at the peak");
  const std::vector<std::vector<TraceEvent>> traces = {
      {alloc("a", 0)},
      {alloc("a", 0), alloc("b", 0), release("a")},
      {alloc("a", 0), release("a"), alloc("a", 0), alloc("c", 0)}};
  for (size_t i = 0; i < traces.size(); ++i) {
    const PeakReport report = find_peak(traces[i]);
    const std::string where = numbered("only empty tensors, trace ", static_cast<int64_t>(i));
    peak.add(where, 0, static_cast<double>(report.peak_bytes));
    index.add(where, -1, static_cast<double>(report.peak_event_index));
    if (!report.live_at_peak.empty())
      ADD_FAILURE() << where << ": nothing is live at a peak of 0 B, but live_at_peak lists "
                    << workbook::describe(workbook::compare_names({}, report.live_at_peak),
                                          report.live_at_peak);
  }
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(index);
}

TEST(PeakFromTrace, TracesOfRealModelSizesAboveTwoGiB) {
  // A 7B model's step in bf16: 13.5 GB of weights in per-layer chunks, activations of several
  // hundred MiB each, and random traces of tensors up to 6 GiB. Totals far above 2^31 bytes: a
  // 32-bit running total wraps around.
  std::vector<TraceEvent> step;
  for (int layer = 0; layer < 32; ++layer)
    step.push_back(alloc(numbered("w", layer), 404'750'336 + layer, MemoryCategory::parameter));
  for (int layer = 0; layer < 32; ++layer)
    step.push_back(alloc(numbered("act", layer), 335'544'320 + 3 * layer));
  for (int layer = 31; layer >= 0; --layer) step.push_back(release(numbered("act", layer)));
  std::mt19937_64 rng(0x0103'0003);
  std::vector<std::vector<TraceEvent>> traces = {step};
  for (int t = 0; t < 30; ++t) traces.push_back(random_trace(rng, 40, int64_t{6} << 30));
  Comparison peak("peak bytes", Unit::kBytes), index("first event at the peak");
  for (size_t t = 0; t < traces.size(); ++t) {
    Moment best;
    int64_t best_index = -1;
    for (size_t k = 0; k < traces[t].size(); ++k) {
      Moment m = state_after(traces[t], k);
      if (m.bytes > best.bytes) best = std::move(m), best_index = static_cast<int64_t>(k);
    }
    const PeakReport report = find_peak(traces[t]);
    const std::string where =
        t == 0 ? std::string("7B bf16 step") : numbered("large trace ", static_cast<int64_t>(t));
    peak.add(where, static_cast<double>(best.bytes), static_cast<double>(report.peak_bytes));
    index.add(where, static_cast<double>(best_index), static_cast<double>(report.peak_event_index));
  }
  VRAMLAB_EXPECT_PASSES(peak);
  VRAMLAB_EXPECT_PASSES(index);
}

TEST(PeakFromTrace, RoundsEveryRequestUpTo512Bytes) {
  Comparison peak("peak bytes of one tensor", Unit::kBytes);
  for (int64_t bytes :
       {int64_t{1}, int64_t{511}, int64_t{512}, int64_t{513}, int64_t{1'000'001}, int64_t{0}}) {
    const int64_t rounded = bytes == 0 ? 0 : (bytes + 511) / 512 * 512;
    peak.add("one tensor of " + std::to_string(bytes) + " B", static_cast<double>(rounded),
             static_cast<double>(find_peak({alloc("x", bytes)}).peak_bytes));
  }
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(PeakFromTrace, AFreeCountsAtItsOwnEvent) {
  // Free 4 KiB, then allocate 1 KiB: the peak is the 4 KiB, never 5 KiB.
  const PeakReport report = find_peak({alloc("big", 4096), release("big"), alloc("small", 1024)});
  Comparison peak("peak bytes", Unit::kBytes);
  peak.add("free then alloc", 4096, static_cast<double>(report.peak_bytes));
  VRAMLAB_EXPECT_PASSES(peak);
}

// Small-pool requests (≤ 1 MiB) are always split off their segment, so the allocator's allocated
// bytes are exactly the rounded sizes. (A large-pool block whose remainder would be ≤ 1 MiB is
// handed out whole: there allocated_bytes can exceed the rounded sum, which lesson 01 shows.)
TEST(PeakFromTrace, AgreesWithTheCachingAllocatorsAllocatedBytesPeak) {
  std::mt19937_64 rng(0x0103'0002);
  Comparison peak("peak vs allocated_bytes.all.peak", Unit::kBytes);
  for (int t = 0; t < 40; ++t) {
    const auto trace = random_trace(rng, 80, int64_t{1} << 20);
    memory::CachingAllocator allocator(memory::make_meta_backing(uint64_t{64} << 30), "meta:test",
                                       0);
    std::map<std::string, memory::Block*> blocks;
    for (const TraceEvent& e : trace) {
      if (e.action == TraceAction::kAlloc)
        blocks[e.name] = allocator.malloc(static_cast<size_t>(e.size_bytes), 0, e.category, e.name);
      else
        allocator.free(blocks.at(e.name)), blocks.erase(e.name);
    }
    peak.add("trace " + std::to_string(t),
             static_cast<double>(allocator.stats().allocated_bytes[memory::kAggregate].peak),
             static_cast<double>(find_peak(trace).peak_bytes));
  }
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(PeakFromTrace, EmptyTraceHasNoPeak) {
  const PeakReport report = find_peak({});
  EXPECT_EQ(report.peak_bytes, 0);
  EXPECT_EQ(report.peak_event_index, -1);
  EXPECT_TRUE(report.live_at_peak.empty());
}

TEST(PeakFromTrace, RejectsBadEventsNamingThem) {
  const std::vector<std::vector<TraceEvent>> bad = {{alloc("neg", -1)},
                                                    {alloc("dup", 8), alloc("dup", 8)},
                                                    {release("ghost")},
                                                    {alloc("x", 8), release("x"), release("x")}};
  const std::string named[] = {"neg", "dup", "ghost", "x"};
  for (size_t i = 0; i < bad.size(); ++i) {
    try {
      find_peak(bad[i]);
      ADD_FAILURE() << "no vramlab::UsageError for bad trace " << i << " ('" << named[i] << "')";
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(named[i]) == std::string::npos)
        ADD_FAILURE() << "the message should name '" << named[i] << "': " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson01
