// Tests of common/report/memory_timeline_html.h: summary numbers of hand-built snapshots (worked
// out by hand), reconstruction of the state before the trace, error messages, and the page: self-
// contained, data embedded and script-safe, JavaScript that parses (node --check) and whose data
// functions replay to the snapshot's final segments (check_timeline_script.js), 0 and 100k events.
// Run: build/tests/bin/test_report --gtest_filter='SummarizeMemoryTimeline.*' (one of its suites)
#include "common/report/memory_timeline_html.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

#include "tests/report/example_snapshot.h"
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
constexpr uint64_t kMiB = 1 << 20;

json frames(const std::string& label, const std::string& name) {
  return json::array({{{"filename", label}, {"line", 0}, {"name", name}}});
}

json event(const char* action, uint64_t address, uint64_t size, const char* category = nullptr) {
  json entry = {
      {"action", action}, {"addr", address}, {"size", size}, {"stream", 0}, {"time_us", 0}};
  if (category != nullptr) {
    entry["category"] = category;
    entry["frames"] = frames(std::string("forward/") + category, "t");
  }
  return entry;
}

json segment(uint64_t address, uint64_t total_size, json blocks) {
  return {{"device", 0},
          {"address", address},
          {"total_size", total_size},
          {"stream", 0},
          {"segment_type", "large"},
          {"segment_pool_id", {0, 0}},
          {"blocks", std::move(blocks)}};
}

json block(uint64_t address, uint64_t size, const char* state, const char* category = nullptr) {
  json entry = {{"address", address}, {"size", size}, {"requested_size", size}, {"state", state}};
  if (category != nullptr) entry["category"] = category;
  return entry;
}

// One parameter live before recording (1000 B in a 2 MiB segment); the trace reserves a 20 MiB
// segment, allocates a 3 MiB activation and a 1 MiB temporary, and frees the temporary.
json hand_built_snapshot() {
  const uint64_t small = 0x100000;
  const uint64_t large = 0x4000000;
  return {
      {"segments",
       {segment(small, 2 * kMiB,
                {block(small, 1000, "active_allocated", "parameter"),
                 block(small + 1000, 2 * kMiB - 1000, "inactive")}),
        segment(large, 20 * kMiB,
                {block(large, 3 * kMiB, "active_allocated", "activation"),
                 block(large + 3 * kMiB, 17 * kMiB, "inactive")})}},
      {"device_traces",
       {{event("segment_alloc", large, 20 * kMiB), event("alloc", large, 3 * kMiB, "activation"),
         event("alloc", large + 3 * kMiB, kMiB, "temporary"),
         event("free_requested", large + 3 * kMiB, kMiB, "temporary"),
         event("free_completed", large + 3 * kMiB, kMiB, "temporary")}}},
      {"allocator_settings", {{"expandable_segments", false}}}};
}

TEST(SummarizeMemoryTimeline, HandBuiltSnapshotNumbers) {
  const MemoryTimelineSummary summary = summarize_memory_timeline(hand_built_snapshot());
  EXPECT_EQ(summary.event_count, 5u);
  EXPECT_EQ(summary.initial_allocated_bytes, 1000u);
  EXPECT_EQ(summary.initial_reserved_bytes, 2 * kMiB);
  EXPECT_EQ(summary.peak_allocated_bytes, 1000 + 4 * kMiB);
  EXPECT_EQ(summary.peak_allocated_event, 2);
  EXPECT_EQ(summary.peak_reserved_bytes, 22 * kMiB);
  EXPECT_EQ(summary.peak_reserved_event, 0);
  EXPECT_EQ(summary.final_allocated_bytes, 1000 + 3 * kMiB);
  EXPECT_EQ(summary.final_reserved_bytes, 22 * kMiB);
  EXPECT_EQ(summary.alloc_count, 2u);
  EXPECT_EQ(summary.free_count, 1u);
  EXPECT_EQ(summary.segment_alloc_count, 1u);
  EXPECT_EQ(summary.inconsistent_event_count, 0u);
  const std::map<std::string, uint64_t> expected = {
      {"parameter", 1000}, {"activation", 3 * kMiB}, {"temporary", kMiB}};
  EXPECT_EQ(summary.peak_allocated_bytes_by_category, expected);
}

TEST(SummarizeMemoryTimeline, BlocksFreedInTheTraceWereLiveBeforeIt) {
  // Recording began while a 5 MiB gradient was live; the trace frees it and releases its segment.
  const json snapshot = {{"segments", json::array()},
                         {"device_traces",
                          {{event("free_requested", 0x2000000, 5 * kMiB, "gradient"),
                            event("free_completed", 0x2000000, 5 * kMiB, "gradient"),
                            event("segment_free", 0x2000000, 6 * kMiB)}}}};
  const MemoryTimelineSummary summary = summarize_memory_timeline(snapshot);
  EXPECT_EQ(summary.initial_allocated_bytes, 5 * kMiB);
  EXPECT_EQ(summary.initial_reserved_bytes, 6 * kMiB);
  EXPECT_EQ(summary.peak_allocated_bytes, 5 * kMiB);
  EXPECT_EQ(summary.peak_allocated_event, -1);
  EXPECT_EQ(summary.final_allocated_bytes, 0u);
  EXPECT_EQ(summary.final_reserved_bytes, 0u);
  EXPECT_EQ(summary.peak_allocated_bytes_by_category.at("gradient"), 5 * kMiB);
}

TEST(SummarizeMemoryTimeline, CountsEventsThatContradictTheFinalState) {
  // An alloc never freed but absent from the final segments: the ring buffer lost something.
  const json snapshot = {{"segments", json::array()},
                         {"device_traces",
                          {{event("alloc", 0x1000, 512, "other"),
                            {{"action", "oom"}, {"size", 7}, {"device_free", 3}}}}}};
  const MemoryTimelineSummary summary = summarize_memory_timeline(snapshot);
  EXPECT_EQ(summary.inconsistent_event_count, 1u);
  EXPECT_EQ(summary.oom_count, 1u);
}

TEST(SummarizeMemoryTimeline, ExpandableSegmentsMapAndUnmap) {
  // One expandable segment grown by two 2 MiB maps, then shrunk by unmapping its last page.
  const json snapshot = {
      {"segments", {segment(0x10000000, 2 * kMiB, json::array())}},
      {"device_traces",
       {{event("segment_map", 0x10000000, 2 * kMiB), event("segment_map", 0x10200000, 2 * kMiB),
         event("segment_unmap", 0x10200000, 2 * kMiB)}}}};
  const MemoryTimelineSummary summary = summarize_memory_timeline(snapshot);
  EXPECT_EQ(summary.initial_reserved_bytes, 0u);
  EXPECT_EQ(summary.peak_reserved_bytes, 4 * kMiB);
  EXPECT_EQ(summary.peak_reserved_event, 1);
  EXPECT_EQ(summary.final_reserved_bytes, 2 * kMiB);
}

TEST(SummarizeMemoryTimeline, ExampleWorkloadIsConsistent) {
  testing::ExampleWorkload workload;
  workload.layer_count = 5;
  workload.step_count = 3;
  const MemoryTimelineSummary summary =
      summarize_memory_timeline(testing::make_example_snapshot(workload));
  EXPECT_EQ(summary.inconsistent_event_count, 0u);
  EXPECT_GT(summary.initial_allocated_bytes, 0u);  // parameters predate recording
  EXPECT_GT(summary.peak_allocated_bytes, summary.initial_allocated_bytes);
  EXPECT_GE(summary.peak_reserved_bytes, summary.peak_allocated_bytes);
  EXPECT_GT(summary.segment_free_count, 0u);
  // Each step frees what it allocates, except the optimizer state (2 per parameter, 5 parameters
  // per layer), allocated in the first step and kept.
  EXPECT_EQ(summary.alloc_count - summary.free_count, 2u * 5u * workload.layer_count);
}

void expect_invalid(const json& snapshot, const std::string& needle) {
  try {
    summarize_memory_timeline(snapshot);
    FAIL() << "expected std::invalid_argument mentioning " << needle;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(SummarizeMemoryTimeline, BadFieldsAreNamed) {
  expect_invalid(json::array(), "JSON object");
  expect_invalid({{"segments", json::object()}}, "'segments'");
  expect_invalid({{"segments", {{{"address", 1}}}}}, "segments[0].total_size");
  expect_invalid({{"segments", {segment(0, 10, {{{"state", "active_allocated"}, {"size", 4}}})}}},
                 "segments[0].blocks[0].address");
  expect_invalid({{"device_traces", {{event("alloc", 0, 1), {{"action", "alloc"}, {"size", 3}}}}}},
                 "device_traces[0][1].addr");
  expect_invalid({{"device_traces", {{{{"size", 3}}}}}}, "device_traces[0][0].action");
  // A consistent snapshot is accepted.
  EXPECT_NO_THROW(summarize_memory_timeline(
      {{"device_traces", {{event("alloc", 0, 1)}}},
       {"segments", {segment(0, 10, json::array({block(0, 1, "active_allocated")}))}}}));
}

TEST(SummarizeMemoryTimeline, MissingTracesMeanNoEvents) {
  const MemoryTimelineSummary summary = summarize_memory_timeline(json::object());
  EXPECT_EQ(summary.event_count, 0u);
  EXPECT_EQ(summary.peak_allocated_bytes, 0u);
}

// ---- The page ----

void expect_self_contained(const std::string& page) {
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  const std::regex external("(src|href)\\s*=", std::regex::icase);
  EXPECT_FALSE(std::regex_search(page, external)) << "the page references an external resource";
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
}

TEST(RenderMemoryTimelineHtml, SelfContainedWithTheDataEmbedded) {
  const json snapshot = hand_built_snapshot();
  const std::string page = render_memory_timeline_html(snapshot, "step <1> & \"more\"");
  expect_self_contained(page);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<title>step &lt;1&gt; &amp; &quot;more&quot;</title>"), std::string::npos);
  const json model = json::parse(embedded_data(page));
  EXPECT_EQ(model["title"], "step <1> & \"more\"");
  EXPECT_EQ(model["summary"]["peak_allocated_bytes"], 1000 + 4 * kMiB);
  EXPECT_EQ(model["events"]["action"].size(), 5u);
  EXPECT_EQ(model["initial_blocks"].size(), 1u);
  EXPECT_EQ(model["initial_blocks"][0][1], 1000u);
  EXPECT_EQ(model["initial_segments"].size(), 1u);
  EXPECT_EQ(model["allocator_settings"]["expandable_segments"], false);
  // The PyTorch profiler colours are the ones handed to the page.
  EXPECT_EQ(model["colours"][0], "darkgreen");
}

TEST(RenderMemoryTimelineHtml, SnapshotStringsCannotCloseTheScript) {
  json snapshot = hand_built_snapshot();
  snapshot["device_traces"][0][1]["frames"] =
      frames("</script><script>alert(1)</script>", "@@DATA@@ <!--");
  const std::string page = render_memory_timeline_html(snapshot, "@@TITLE@@ </script>");
  EXPECT_EQ(count_of(page, "</script>"), 2u);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  const json model = json::parse(embedded_data(page));
  bool found = false;
  for (const auto& text : model["strings"])
    found = found || text == "</script><script>alert(1)</script>";
  EXPECT_TRUE(found) << "the label must survive the escaping unchanged";

  // The same for a function name in a C++ stack.
  json& entry = snapshot["device_traces"][0][2];
  entry["module"] = "blocks.0";
  entry["frames"] = {{{"filename", "blocks.0"}, {"line", 0}, {"name", "t"}},
                     {{"filename", "a.cpp"}, {"line", 3}, {"name", "f<x>()</script>&"}}};
  const std::string stacked = render_memory_timeline_html(snapshot, "stacked");
  EXPECT_EQ(count_of(stacked, "</script>"), 2u);
  const json stacked_model = json::parse(embedded_data(stacked));
  const json& owner = stacked_model["owners"][stacked_model["events"]["owner"][2].get<size_t>()];
  const json& stack = stacked_model["stacks"][owner[3].get<size_t>()];
  ASSERT_EQ(stack.size(), 1u);
  const json& frame = stacked_model["frames"][stack[0].get<size_t>()];
  EXPECT_EQ(stacked_model["strings"][frame[2].get<size_t>()], "f<x>()</script>&");
  EXPECT_EQ(frame[1], 3);
  EXPECT_EQ(model["title"], "@@TITLE@@ </script>");
}

bool node_available() {
  return std::system("node --version > /dev/null 2>&1") == 0;
}

std::string string_or_empty(const json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// [event, tensor, module, phase, [[file, line, function]...]] for every alloc entry, read straight
// from the snapshot by recording.h's rules: with the owner keys (or an older vramlab "category")
// frames[0] is the label frame and the stack starts at frames[1]; PyTorch's frames are all real.
json expected_owners(const json& snapshot) {
  json owners = json::array();
  if (!snapshot.contains("device_traces")) return owners;
  const json& trace = snapshot["device_traces"][0];
  for (size_t i = 0; i < trace.size(); ++i) {
    const json& entry = trace[i];
    if (entry["action"] != "alloc") continue;
    const bool keys =
        entry.contains("module") || entry.contains("phase") || entry.contains("tensor");
    const json frames = entry.value("frames", json::array());
    const bool label_frame = (keys || entry.contains("category")) && !frames.empty();
    std::string tensor = string_or_empty(entry, "tensor");
    std::string module = string_or_empty(entry, "module");
    if (label_frame && tensor.empty()) tensor = string_or_empty(frames[0], "name");
    if (label_frame && module.empty()) module = string_or_empty(frames[0], "filename");
    json stack = json::array();
    for (size_t f = label_frame ? 1 : 0; f < frames.size(); ++f) {
      stack.push_back({string_or_empty(frames[f], "filename"), frames[f].value("line", 0),
                       string_or_empty(frames[f], "name")});
    }
    owners.push_back({i, tensor, module, string_or_empty(entry, "phase"), stack});
  }
  return owners;
}

// Writes the page's script, its data, and the snapshot's final state, and runs node on them.
void check_script_with_node(const json& snapshot, const std::string& name) {
  if (!node_available())
    GTEST_SKIP() << "node is not on PATH: the page's JavaScript was not checked";
  const std::string page = render_memory_timeline_html(snapshot, name);
  const std::string directory = ::testing::TempDir();
  const std::string script_path = directory + "vramlab_timeline_" + name + ".js";
  const std::string model_path = directory + "vramlab_timeline_" + name + ".model.json";
  const std::string expected_path = directory + "vramlab_timeline_" + name + ".expected.json";
  write_file(script_path, main_script(page));
  write_file(model_path, embedded_data(page));
  json segments = json::array();
  json blocks = json::array();
  for (const json& segment_entry : snapshot["segments"]) {
    segments.push_back({segment_entry["address"], segment_entry["total_size"]});
    for (const json& block_entry : segment_entry.value("blocks", json::array())) {
      if (block_entry["state"] == "inactive") continue;
      const uint64_t requested = block_entry.value("requested_size", uint64_t{0});
      blocks.push_back({block_entry["address"],
                        requested > 0 ? requested : block_entry["size"].get<uint64_t>()});
    }
  }
  write_file(expected_path,
             json{{"segments", segments}, {"blocks", blocks}, {"owners", expected_owners(snapshot)}}
                 .dump());
  ASSERT_EQ(std::system(("node --check '" + script_path + "'").c_str()), 0)
      << "the page's script does not parse";
  const std::string command = "node '" + std::string(VRAMLAB_REPORT_TEST_DIR) +
                              "/check_timeline_script.js' '" + script_path + "' '" + model_path +
                              "' '" + expected_path + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(RenderMemoryTimelineHtml, ScriptParsesAndReplaysTheHandBuiltSnapshot) {
  check_script_with_node(hand_built_snapshot(), "hand_built");
}

TEST(RenderMemoryTimelineHtml, ScriptReplaysARealisticSnapshot) {
  testing::ExampleWorkload workload;
  workload.layer_count = 6;
  workload.step_count = 3;
  workload.end_with_oom = true;
  check_script_with_node(testing::make_example_snapshot(workload), "realistic");
}

TEST(RenderMemoryTimelineHtml, ScriptShowsTheStacksOfOwnerKeySnapshots) {
  testing::ExampleWorkload workload;
  workload.layer_count = 3;
  workload.step_count = 2;
  workload.seed = 7;
  workload.owner_style = testing::OwnerStyle::owner_keys_with_stacks;
  check_script_with_node(testing::make_example_snapshot(workload), "owner_keys");
}

TEST(RenderMemoryTimelineHtml, ScriptReadsOlderLabelFrameSnapshots) {
  testing::ExampleWorkload workload;
  workload.layer_count = 2;
  workload.step_count = 2;
  workload.seed = 3;
  workload.owner_style = testing::OwnerStyle::label_frame;
  check_script_with_node(testing::make_example_snapshot(workload), "label_frame");
}

TEST(RenderMemoryTimelineHtml, ScriptShowsPyTorchFramesAsTheStack) {
  testing::ExampleWorkload workload;
  workload.layer_count = 2;
  workload.step_count = 3;
  workload.seed = 11;
  workload.owner_style = testing::OwnerStyle::pytorch;
  const json snapshot = testing::make_example_snapshot(workload);
  const json model = json::parse(embedded_data(render_memory_timeline_html(snapshot, "pytorch")));
  // No label frame to strip: the first alloc's stack is all of its frames, and its tensor and
  // module are unknown.
  size_t first_alloc = 0;
  while (snapshot["device_traces"][0][first_alloc]["action"] != "alloc") ++first_alloc;
  const json& owner = model["owners"][model["events"]["owner"][first_alloc].get<size_t>()];
  EXPECT_EQ(model["strings"][owner[0].get<size_t>()], "");
  EXPECT_EQ(model["strings"][owner[1].get<size_t>()], "");
  EXPECT_EQ(model["stacks"][owner[3].get<size_t>()].size(),
            snapshot["device_traces"][0][first_alloc]["frames"].size());
  check_script_with_node(snapshot, "pytorch");
}

// Stacks are interned: a 10,000-allocation snapshot whose every entry carries 6 to 9 C++ frames
// makes a page barely larger than the same snapshot without stacks, and far smaller than the
// frames' own text.
TEST(RenderMemoryTimelineHtml, TenThousandAllocationsWithStacksStaySmall) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's smaller snapshots with stacks");
  testing::ExampleWorkload workload;
  workload.layer_count = 24;
  workload.step_count = 26;
  workload.hidden_bytes = 256 * 1024;
  workload.owner_style = testing::OwnerStyle::owner_keys_with_stacks;
  const json with_stacks = testing::make_example_snapshot(workload);
  workload.owner_style = testing::OwnerStyle::owner_keys;
  const json without_stacks = testing::make_example_snapshot(workload);
  size_t alloc_count = 0;
  size_t frame_text_bytes = 0;
  for (const json& entry : with_stacks["device_traces"][0]) {
    alloc_count += entry["action"] == "alloc" ? 1 : 0;
    frame_text_bytes += entry["frames"].dump().size();
  }
  ASSERT_GE(alloc_count, 10'000u);
  const std::string page = render_memory_timeline_html(with_stacks, "10k with stacks");
  const std::string plain = render_memory_timeline_html(without_stacks, "10k without stacks");
  RecordProperty("alloc_count", std::to_string(alloc_count));
  RecordProperty("page_bytes", std::to_string(page.size()));
  RecordProperty("page_without_stacks_bytes", std::to_string(plain.size()));
  RecordProperty("frame_text_bytes", std::to_string(frame_text_bytes));
  std::printf("%zu allocations: page %zu bytes with stacks, %zu without; the frames' text is %zu\n",
              alloc_count, page.size(), plain.size(), frame_text_bytes);
  EXPECT_LT(page.size(), plain.size() + plain.size() / 5)
      << "stacks should cost under 20 % of the page: " << page.size() << " vs " << plain.size();
  EXPECT_LT(page.size() * 10, frame_text_bytes)
      << "the page should be a tenth of the frames' text: " << page.size() << " vs "
      << frame_text_bytes;
  const json model = json::parse(embedded_data(page));
  EXPECT_LE(model["stacks"].size(), 16u) << "the example has a handful of distinct stacks";
  check_script_with_node(with_stacks, "ten_thousand_stacks");
}

TEST(RenderMemoryTimelineHtml, ZeroEvents) {
  json snapshot = hand_built_snapshot();
  snapshot["device_traces"] = json::array({json::array()});
  snapshot["segments"][1]["blocks"] = json::array({block(0x4000000, 20 * kMiB, "inactive")});
  const std::string page = render_memory_timeline_html(snapshot, "empty trace");
  expect_self_contained(page);
  const json model = json::parse(embedded_data(page));
  EXPECT_EQ(model["summary"]["event_count"], 0u);
  EXPECT_EQ(model["summary"]["peak_allocated_bytes"], 1000u);
  check_script_with_node(snapshot, "zero_events");
  const std::string bare = render_memory_timeline_html(json::object(), "nothing at all");
  EXPECT_EQ(json::parse(embedded_data(bare))["summary"]["event_count"], 0u);
}

TEST(RenderMemoryTimelineHtml, HundredThousandEvents) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's smaller snapshots");
  testing::ExampleWorkload workload;
  workload.layer_count = 48;
  workload.step_count = 45;
  workload.hidden_bytes = 256 * 1024;
  const json snapshot = testing::make_example_snapshot(workload);
  const size_t event_count = snapshot["device_traces"][0].size();
  ASSERT_GE(event_count, 100'000u);
  const auto start = std::chrono::steady_clock::now();
  const std::string page = render_memory_timeline_html(snapshot, "100k");
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("render_ms", std::to_string(elapsed_ms));
  RecordProperty("page_bytes", std::to_string(page.size()));
  // Columns keep the page small: well under 100 bytes per event.
  EXPECT_LT(page.size(), event_count * 100)
      << page.size() << " bytes for " << event_count << " events";
  const json model = json::parse(embedded_data(page));
  EXPECT_EQ(model["events"]["action"].size(), event_count);
  EXPECT_EQ(model["summary"]["inconsistent_event_count"], 0u);
  check_script_with_node(snapshot, "hundred_thousand");
}

}  // namespace
}  // namespace vramlab::report
