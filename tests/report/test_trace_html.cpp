// Tests of common/report/trace_html.h: the page is self-contained, its data script-safe, bad input
// is named; its script parses (node --check) and lays out vramlab's and torch.profiler's traces,
// in both JSON formats, exactly as a brute-force reading of the trace-event format does
// (check_trace_script.js against tests/report/example_trace.h), then draws, hovers and zooms.
// Run: build/tests/bin/test_report --gtest_filter='RenderTraceHtml.*'
#include "common/report/trace_html.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "common/platform/errors.h"
#include "common/profile/chrome_trace.h"
#include "tests/report/example_snapshot.h"
#include "tests/report/example_trace.h"
#include "tests/report/report_test_util.h"
#include "tests/sanitized_build.h"

#ifndef VRAMLAB_REPORT_TEST_DIR
#error "VRAMLAB_REPORT_TEST_DIR must name tests/report (set by CMake)"
#endif

namespace vramlab::report {
namespace {

using testing::count_of;
using testing::embedded_data;
using testing::main_script;
using testing::write_file;

using nlohmann::json;

void check_trace_script_with_node(const json& trace, const std::string& name,
                                  const json& expected = json()) {
  if (std::system("node --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "node is not on PATH: the page's JavaScript was not checked";
  const std::string page = render_trace_html(trace, name);
  const std::string directory = ::testing::TempDir();
  const std::string script_path = directory + "vramlab_trace_" + name + ".js";
  const std::string data_path = directory + "vramlab_trace_" + name + ".data.json";
  const std::string expected_path = directory + "vramlab_trace_" + name + ".expected.json";
  write_file(script_path, main_script(page));
  write_file(data_path, embedded_data(page));
  write_file(expected_path,
             (expected.is_null() ? testing::expected_trace_layout(trace) : expected).dump());
  ASSERT_EQ(std::system(("node --check '" + script_path + "'").c_str()), 0)
      << "the page's script does not parse";
  const std::string command = "node '" + std::string(VRAMLAB_REPORT_TEST_DIR) +
                              "/check_trace_script.js' '" + script_path + "' '" + data_path +
                              "' '" + expected_path + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(RenderTraceHtml, SelfContainedWithTheEventsEmbedded) {
  const json trace = testing::make_vramlab_style_trace(3, 1, 2);
  const std::string page = render_trace_html(trace, "step <1> & \"more\"");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex("(src|href)\\s*=", std::regex::icase)))
      << "the page references an external resource";
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find("<title>step &lt;1&gt; &amp; &quot;more&quot;</title>"), std::string::npos);
  const json data = json::parse(embedded_data(page));
  EXPECT_EQ(data["title"], "step <1> & \"more\"");
  EXPECT_EQ(data["events"], trace["traceEvents"]) << "every event of a vramlab trace is drawn";
}

TEST(RenderTraceHtml, TraceStringsCannotCloseTheScript) {
  json trace = testing::make_vramlab_style_trace(4, 1, 1);
  trace["traceEvents"][3]["name"] = "</script><script>alert(1)</script> & <!--";
  trace["traceEvents"][3]["args"]["note"] = "@@DATA@@ @@TITLE@@";
  const std::string page = render_trace_html(trace, "@@DATA@@ </script>");
  EXPECT_EQ(count_of(page, "</script>"), 2u);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  const json data = json::parse(embedded_data(page));
  EXPECT_EQ(data["events"][3]["name"], "</script><script>alert(1)</script> & <!--");
  EXPECT_EQ(data["events"][3]["args"]["note"], "@@DATA@@ @@TITLE@@");
  EXPECT_EQ(data["title"], "@@DATA@@ </script>");
}

TEST(RenderTraceHtml, PhasesThePageDoesNotDrawAreCountedNotEmbedded) {
  const json trace = testing::make_pytorch_style_trace(5, 12);
  const json data = json::parse(embedded_data(render_trace_html(trace, "pytorch")));
  size_t flows = 0;
  for (const json& event : trace["traceEvents"]) flows += event["ph"] == "s" || event["ph"] == "f";
  ASSERT_EQ(flows, 24u);
  EXPECT_EQ(data["skipped"]["s"], 12u);
  EXPECT_EQ(data["skipped"]["f"], 12u);
  EXPECT_EQ(data["events"].size(), trace["traceEvents"].size() - flows);
}

TEST(RenderTraceHtml, BadInputIsNamed) {
  for (const auto& [input, needle] :
       {std::pair<json, std::string>{json(3), "number"},
        {json("trace"), "string"},
        {json::object({{"events", json::array()}}), "no such key"},
        {json::object({{"traceEvents", json::object()}}), "object"}}) {
    try {
      render_trace_html(input, "bad");
      ADD_FAILURE() << "no error for " << input.dump();
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos)
          << error.what() << " should name " << needle;
    }
  }
  // Empty traces in either format are valid.
  EXPECT_NO_THROW(render_trace_html(json::array(), "empty"));
  EXPECT_NO_THROW(render_trace_html(json::object({{"traceEvents", json::array()}}), "empty"));
}

TEST(RenderTraceHtml, ScriptLaysOutVramlabTraces) {
  for (const auto& [seed, steps, layers] :
       {std::tuple<uint64_t, size_t, size_t>{1, 1, 1}, {2, 2, 3}, {3, 3, 7}}) {
    check_trace_script_with_node(testing::make_vramlab_style_trace(seed, steps, layers),
                                 "vramlab_" + std::to_string(seed));
  }
}

TEST(RenderTraceHtml, ScriptLaysOutPyTorchTraces) {
  check_trace_script_with_node(testing::make_pytorch_style_trace(7, 1), "pytorch_1");
  check_trace_script_with_node(testing::make_pytorch_style_trace(8, 41), "pytorch_41");
}

TEST(RenderTraceHtml, ScriptReadsTheArrayFormat) {
  check_trace_script_with_node(testing::make_pytorch_style_trace(9, 10)["traceEvents"],
                               "array_format");
}

TEST(RenderTraceHtml, ScriptSurvivesAnEmptyTrace) {
  check_trace_script_with_node(json::array(), "empty");
}

// Valid but unusual traces: quoted numbers, missing fields, E without B, B without E, an unknown
// instant scope, non-numeric counter args, unknown phases and entries that are not events. The
// layout is worked out by hand: times relative to the earliest readable event (ts 10), the
// unclosed B running to the latest one (ts 50), depth by the spans still open at a span's start.
TEST(RenderTraceHtml, ScriptReadsOddButValidEvents) {
  const json trace = json::parse(R"([
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
    {"ph": "X", "name": "outer", "ts": "10", "dur": "30", "pid": 1, "tid": 2},
    {"ph": "X", "name": "inner", "ts": 15, "pid": 1, "tid": 2},
    {"ph": "B", "name": "open forever", "ts": 12, "pid": 1, "tid": 2},
    {"ph": "E", "ts": 50, "pid": 1, "tid": 3},
    {"ph": "i", "name": "mark", "ts": 20, "s": "q", "pid": 1, "tid": 2},
    {"ph": "C", "name": "mem", "ts": 25, "pid": 1, "args": {"a": 5, "b": "x", "c": null, "d": "2.5"}},
    {"ph": "Z", "name": "unknown phase", "ts": 1, "pid": 1, "tid": 2},
    42,
    {"ph": "X", "name": "no ts", "pid": 1, "tid": 2},
    {"name": "no ph", "ts": 3},
    {"ph": "X", "name": "negative dur", "ts": 40, "dur": -5, "pid": 1, "tid": 2},
    {"ph": "X", "name": 7, "ts": 30, "dur": 2, "pid": "1", "tid": 2}
  ])");
  const json expected = {{"span_count", 5},
                         {"lane_count", 2},
                         {"counter_count", 1},
                         {"sample_count", 1},
                         {"instant_count", 1},
                         {"not_drawn", 1},
                         {"invalid", 3},
                         {"unmatched_ends", 1},
                         {"unclosed_begins", 1},
                         {"lanes",
                          {{"[1,2]",
                            {{"outer", 0, 30, 0},
                             {"open forever", 2, 38, 1},
                             {"inner", 5, 0, 2},
                             {"negative dur", 30, 0, 2}}},
                           {"[\"1\",2]", {{"7", 20, 2, 0}}}}},
                         {"counters", {{"[1,\"mem\",null]", {7.5}}}}};
  check_trace_script_with_node(trace, "odd", expected);
}

// What vramlab's own exporter writes (profile::chrome_trace of a recording) lays out as a
// brute-force reading of it says: phase, module and kernel spans nested, counters stacked.
TEST(RenderTraceHtml, ScriptLaysOutTheProfilersChromeTrace) {
  testing::ExampleWorkload workload;
  workload.layer_count = 3;
  workload.step_count = 2;
  workload.seed = 13;
  workload.owner_style = testing::OwnerStyle::owner_keys;
  const json trace = profile::chrome_trace(
      testing::recording_from_snapshot(testing::make_example_snapshot(workload)));
  const json layout = testing::expected_trace_layout(trace);
  ASSERT_GT(layout["span_count"].get<size_t>(), 100u);
  ASSERT_EQ(layout["counter_count"], 2) << "allocated (stacked by category) and reserved";
  check_trace_script_with_node(trace, "profiler");
}

TEST(RenderTraceHtml, LargeTraceStaysProportionate) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's smaller traces");
  const json trace = testing::make_vramlab_style_trace(11, 40, 48);
  const size_t event_count = trace["traceEvents"].size();
  const auto start = std::chrono::steady_clock::now();
  const std::string page = render_trace_html(trace, "large");
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const size_t trace_bytes = trace.dump().size();
  RecordProperty("event_count", std::to_string(event_count));
  RecordProperty("page_bytes", std::to_string(page.size()));
  RecordProperty("render_ms", std::to_string(elapsed_ms));
  std::printf("%zu events: trace %zu bytes, page %zu bytes, rendered in %.1f ms\n", event_count,
              trace_bytes, page.size(), elapsed_ms);
  ASSERT_GE(event_count, 10'000u);
  // The page is the trace plus a fixed template (escaping adds at most a few bytes per event).
  EXPECT_LT(page.size(), trace_bytes + 100'000);
  check_trace_script_with_node(trace, "large");
}

}  // namespace
}  // namespace vramlab::report
