// Tests of common/profile/chrome_trace.h on hand-built recordings: one X event per span with its
// times in microseconds, metadata naming the process and every thread, allocated bytes per category
// and reserved bytes as counters replayed from the snapshot (values worked out by hand), counter
// times that never go back, and a refused recording without times. The format itself is checked
// by the independent check_trace_events.py (ctest profile.chrome_trace_*).
// Run: build/tests/bin/test_profile --gtest_filter='ChromeTrace.*'
#include "common/profile/chrome_trace.h"

#include <gtest/gtest.h>

#include "common/platform/errors.h"
#include "tests/profile/recording_fixture.h"

namespace vramlab::profile {
namespace {

using nlohmann::json;
using testing::hand_built_recording;
using testing::kFiveGiB;
using testing::kOriginNs;

std::vector<json> events_with(const json& trace, const std::string& ph,
                              const std::string& name = "") {
  std::vector<json> out;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == ph && (name.empty() || event["name"] == name)) out.push_back(event);
  }
  return out;
}

Recording two_thread_recording() {
  Recording recording = hand_built_recording();
  recording.spans.push_back(testing::make_span(SpanKind::kernel, "all_reduce", "",
                                               memory::TrainingPhase::optimizer, 2100, 2600, 0, 1));
  return recording;
}

TEST(ChromeTrace, OneCompleteEventPerSpanInMicroseconds) {
  const Recording recording = two_thread_recording();
  const json trace = chrome_trace(recording);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  EXPECT_EQ(trace["otherData"]["device"], "sim:test");
  const std::vector<json> spans = events_with(trace, "X");
  ASSERT_EQ(spans.size(), recording.spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& span = recording.spans[i];
    SCOPED_TRACE(span.name);
    EXPECT_EQ(spans[i]["name"], span.name);
    EXPECT_EQ(spans[i]["cat"], span_kind_name(span.kind));
    EXPECT_TRUE(spans[i]["ts"].is_number_float());
    EXPECT_DOUBLE_EQ(spans[i]["ts"].get<double>(), static_cast<double>(span.start_ns) * 1e-3);
    EXPECT_DOUBLE_EQ(spans[i]["dur"].get<double>(),
                     static_cast<double>(span.end_ns - span.start_ns) * 1e-3);
    EXPECT_EQ(spans[i]["tid"], span.thread);
    EXPECT_EQ(spans[i]["args"]["module"], span.module);
    EXPECT_EQ(spans[i]["args"]["phase"], memory::training_phase_name(span.phase));
  }
  EXPECT_EQ(spans[2]["name"], "matmul");
  EXPECT_DOUBLE_EQ(spans[2]["ts"].get<double>(), 0.15);
  EXPECT_DOUBLE_EQ(spans[2]["dur"].get<double>(), 0.1);
}

TEST(ChromeTrace, MetadataNamesTheProcessAndEveryThread) {
  const json trace = chrome_trace(two_thread_recording());
  const std::vector<json> process = events_with(trace, "M", "process_name");
  ASSERT_EQ(process.size(), 1u);
  EXPECT_EQ(process[0]["args"]["name"], "vramlab sim:test");
  const std::vector<json> threads = events_with(trace, "M", "thread_name");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0]["tid"], 0);
  EXPECT_EQ(threads[0]["args"]["name"], "training");
  EXPECT_EQ(threads[1]["tid"], 1);
}

TEST(ChromeTrace, AllocatedCountersFollowTheReplay) {
  const json trace = chrome_trace(hand_built_recording());
  const std::vector<json> allocated = events_with(trace, "C", "allocated");
  // The start, 9 allocs and 2 frees.
  ASSERT_EQ(allocated.size(), 12u);
  for (const json& sample : allocated) {
    EXPECT_EQ(sample["args"].size(), memory::kMemoryCategoryCount);
  }
  EXPECT_EQ(allocated[0]["ts"], 0.0);
  EXPECT_EQ(allocated[0]["args"]["activation"], 0);
  EXPECT_DOUBLE_EQ(allocated[3]["ts"].get<double>(), 0.35);  // the 4 KiB temporary
  EXPECT_EQ(allocated[3]["args"]["temporary"], 4096);
  EXPECT_DOUBLE_EQ(allocated[4]["ts"].get<double>(), 0.36);  // and its free
  EXPECT_EQ(allocated[4]["args"]["temporary"], 0);
  const json& last = allocated.back();
  EXPECT_DOUBLE_EQ(last["ts"].get<double>(), 3.05);
  EXPECT_EQ(last["args"]["gradient"], kFiveGiB);
  EXPECT_EQ(last["args"]["activation"], 1000 + 64 + 64 + 7 + 64 + 10);
  EXPECT_EQ(last["args"]["parameter"], 0);
  double previous = 0.0;
  for (const json& sample : allocated) {
    EXPECT_GE(sample["ts"].get<double>(), previous);
    previous = sample["ts"].get<double>();
  }
  // No segment events: reserved is one sample, the final segments.
  const std::vector<json> reserved = events_with(trace, "C", "reserved");
  ASSERT_EQ(reserved.size(), 1u);
  EXPECT_EQ(reserved[0]["args"]["reserved"], kFiveGiB + 1000 + 64 + 64 + 7 + 64 + 10);
}

json timed(json entry, std::int64_t ns) {
  entry["time_ns"] = kOriginNs + ns;
  return entry;
}

TEST(ChromeTrace, ReservedCountersFollowSegmentEventsAndTimesNeverGoBack) {
  // A 2 MiB segment reserved at 10 ns, a block in it, both released; one entry is stamped before
  // the origin and one earlier than its predecessor: both are drawn at the latest time so far.
  const std::uint64_t segment = 2 << 20;
  json entries = json::array(
      {timed({{"action", "segment_alloc"}, {"addr", 0x200000}, {"size", segment}}, -50),
       timed({{"action", "alloc"}, {"addr", 0x200000}, {"size", 512}, {"category", "input"}}, 20),
       timed({{"action", "free_completed"}, {"addr", 0x200000}, {"size", 512}}, 15),
       timed({{"action", "segment_free"}, {"addr", 0x200000}, {"size", segment}}, 40)});
  Recording recording;
  recording.origin_ns = kOriginNs;
  recording.snapshot = {{"segments", json::array()}, {"device_traces", {entries}}};
  const json trace = chrome_trace(recording);
  const std::vector<json> reserved = events_with(trace, "C", "reserved");
  ASSERT_EQ(reserved.size(), 3u);
  EXPECT_EQ(reserved[0]["args"]["reserved"], 0);
  EXPECT_EQ(reserved[1]["args"]["reserved"], segment);
  EXPECT_EQ(reserved[1]["ts"], 0.0);  // before the origin: clamped
  EXPECT_EQ(reserved[2]["args"]["reserved"], 0);
  EXPECT_DOUBLE_EQ(reserved[2]["ts"].get<double>(), 0.04);
  const std::vector<json> allocated = events_with(trace, "C", "allocated");
  ASSERT_EQ(allocated.size(), 3u);
  EXPECT_EQ(allocated[1]["args"]["input"], 512);
  EXPECT_DOUBLE_EQ(allocated[2]["ts"].get<double>(), 0.02);  // 15 ns after 20 ns: kept at 20
  EXPECT_EQ(allocated[2]["args"]["input"], 0);
}

TEST(ChromeTrace, EntriesWithoutTimesAreRefused) {
  Recording recording = hand_built_recording();
  recording.snapshot["device_traces"][0][4].erase("time_ns");
  try {
    chrome_trace(recording);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("device_traces[0][4].time_ns"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace vramlab::profile
