// The profile layer on a real recording (one training step of a small GPT-2 on sim, under the
// Profiler): the per-op table against a brute-force attribution written here (every alloc entry to
// the deepest module or kernel span of thread 0 containing its time), the peak column against
// analyse_peak, calls against the spans, and the Chrome trace's spans and counters against the
// recording. check_trace_events.py validates the same trace's format (profile.chrome_trace_*).
// Run: build/tests/bin/test_profile --gtest_filter='RealRecording.*'
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/profile/chrome_trace.h"
#include "common/profile/op_table.h"
#include "common/snapshot/snapshot_analysis.h"
#include "tests/profile/real_recording.h"

namespace vramlab::profile {

using snapshot::Allocation;
using snapshot::analyse_peak;
using snapshot::live_allocations;
namespace {

using nlohmann::json;

const Recording& recording() {
  static const Recording recorded = testing::record_training(2, 2);
  return recorded;
}

// The index of the device trace the recording's allocator wrote (the only non-empty one).
std::size_t own_device(const Recording& r) {
  const json& traces = r.snapshot["device_traces"];
  for (std::size_t d = 0; d < traces.size(); ++d) {
    if (!traces[d].empty()) return d;
  }
  return 0;
}

const json& own_trace(const Recording& r) {
  return r.snapshot["device_traces"][own_device(r)];
}

TEST(RealRecording, HasSpansOfEveryKindAndTimedEntries) {
  const Recording& r = recording();
  std::map<SpanKind, int> kinds;
  for (const Span& span : r.spans) {
    ++kinds[span.kind];
    EXPECT_LE(span.start_ns, span.end_ns) << span.name;
  }
  EXPECT_GT(kinds[SpanKind::phase], 0);
  EXPECT_GT(kinds[SpanKind::module], 0);
  EXPECT_GT(kinds[SpanKind::kernel], 0);
  ASSERT_FALSE(own_trace(r).empty());
  for (const json& entry : own_trace(r)) ASSERT_TRUE(entry.contains("time_ns")) << entry.dump();
}

// Row name of a span when grouping by module, as op_table.h defines it.
std::string module_row(const Span& span) {
  return span.name + " (" + std::string(memory::training_phase_name(span.phase)) + ")";
}

TEST(RealRecording, ModuleTableMatchesABruteForceAttribution) {
  const Recording& r = recording();
  // Every alloc entry: the deepest module span of thread 0 whose [start, end] holds its time
  // (kernels are folded into their module when grouping by module).
  std::map<std::string, std::int64_t> self_bytes;
  std::map<std::string, std::int64_t> calls;
  for (const Span& span : r.spans) {
    if (span.kind == SpanKind::module) ++calls[module_row(span)];
  }
  for (const json& entry : own_trace(r)) {
    if (entry["action"] != "alloc") continue;
    const std::int64_t t = entry["time_ns"].get<std::int64_t>() - r.origin_ns;
    const Span* innermost = nullptr;
    for (const Span& span : r.spans) {
      if (span.thread != 0 || span.kind != SpanKind::module) continue;
      if (span.start_ns <= t && t <= span.end_ns &&
          (innermost == nullptr || span.depth > innermost->depth ||
           (span.depth == innermost->depth && span.start_ns > innermost->start_ns))) {
        innermost = &span;
      }
    }
    if (innermost != nullptr)
      self_bytes[module_row(*innermost)] += entry["size"].get<std::int64_t>();
  }
  const std::vector<OpRow> rows = op_table(r, OpGrouping::module);
  ASSERT_EQ(rows.size(), calls.size());
  std::int64_t peak_sum = 0;
  for (const OpRow& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.kind, SpanKind::module);
    EXPECT_EQ(row.calls, calls[row.name]);
    EXPECT_EQ(row.self_bytes, self_bytes[row.name]);
    EXPECT_GE(row.total_bytes, row.self_bytes);
    EXPECT_LE(row.peak_bytes, row.self_bytes);
    EXPECT_GE(row.self_ms, 0.0);
    EXPECT_GE(row.total_ms, row.self_ms);
    peak_sum += row.peak_bytes;
  }
  EXPECT_LE(peak_sum, analyse_peak(r.snapshot, own_device(r)).peak_bytes);
  EXPECT_GT(peak_sum, 0) << "some of the peak is owned by modules";
}

TEST(RealRecording, OpTableCountsEveryKernelCall) {
  const Recording& r = recording();
  std::map<std::string, std::int64_t> kernel_calls;
  for (const Span& span : r.spans) {
    if (span.kind == SpanKind::kernel) ++kernel_calls[span.name];
  }
  std::int64_t kernel_rows = 0;
  for (const OpRow& row : op_table(r, OpGrouping::op)) {
    if (row.kind != SpanKind::kernel) continue;
    ++kernel_rows;
    EXPECT_EQ(row.calls, kernel_calls[row.name]) << row.name;
  }
  EXPECT_EQ(kernel_rows, static_cast<std::int64_t>(kernel_calls.size()));
}

TEST(RealRecording, ChromeTraceHasEverySpanAndEndsAtTheFinalMemory) {
  const Recording& r = recording();
  const json trace = chrome_trace(r);
  std::size_t spans = 0, stream_spans = 0;
  const json* last_allocated = nullptr;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") ++(event["pid"] == 1 ? stream_spans : spans);
    if (event["ph"] == "C" && event["name"] == "allocated") last_allocated = &event;
  }
  EXPECT_EQ(spans, r.spans.size());
  // The stream clock's lanes: one span per kernel and copy the recording saw.
  EXPECT_EQ(stream_spans, r.stream_spans.size());
  EXPECT_GT(stream_spans, 0u);
  ASSERT_NE(last_allocated, nullptr);
  std::int64_t counted = 0;
  for (const auto& [category, bytes] : (*last_allocated)["args"].items())
    counted += bytes.get<std::int64_t>();
  std::int64_t live = 0;
  for (const Allocation& allocation : live_allocations(r.snapshot)) live += allocation.bytes;
  EXPECT_EQ(counted, live);
}

}  // namespace
}  // namespace vramlab::profile
