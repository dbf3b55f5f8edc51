// The memory timeline page in a real browser: headless Chromium loads generated pages (a realistic
// snapshot ending in an out-of-memory error, an empty trace, lesson-sized and 100k-event traces)
// and the test fails on any JavaScript error. An error listener added before the page's script
// writes the error into an attribute of <html>, which --dump-dom prints; the page's own summary
// cards prove that its script ran to the end. A page with a deliberately broken script must be
// caught, so the detection itself is tested. An injected script hovers an allocation with a real
// MouseEvent and reports the call stack the page then shows.
// Run: build/tests/bin/test_report_chromium --gtest_filter='TimelineInChromium.*'
//   (needs `chromium`, Debian package chromium)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/report/memory_timeline_html.h"
#include "tests/report/browser_check.h"
#include "tests/report/example_snapshot.h"
#include "tests/sanitized_build.h"

namespace vramlab::report {
namespace {

using testing::BrowserRun;

std::string run_directory(const std::string& name) {
  return std::string(VRAMLAB_CHROMIUM_RUN_DIR) + "/timeline_" + name;
}

void expect_clean_run(const nlohmann::json& snapshot, const std::string& name) {
  const BrowserRun run =
      testing::run_in_chromium(render_memory_timeline_html(snapshot, name), run_directory(name));
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_EQ(run.error, "") << name << ": the page threw in Chromium";
  EXPECT_GE(run.cards, 3u) << name << ": the page's script did not fill in its summary";
}

TEST(TimelineInChromium, RealisticSnapshotWithOutOfMemoryRunsWithoutErrors) {
  VRAMLAB_REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 6;
  workload.step_count = 3;
  workload.end_with_oom = true;
  expect_clean_run(testing::make_example_snapshot(workload), "realistic_oom");
}

TEST(TimelineInChromium, EmptySnapshotRunsWithoutErrors) {
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_clean_run(nlohmann::json::object(), "empty");
}

TEST(TimelineInChromium, HundredThousandEventsRunWithoutErrors) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's smaller snapshots");
  VRAMLAB_REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 48;
  workload.step_count = 45;
  workload.hidden_bytes = 256 * 1024;
  expect_clean_run(testing::make_example_snapshot(workload), "hundred_thousand");
}

std::string frame_names(const nlohmann::json& frames, size_t first) {
  nlohmann::json names = nlohmann::json::array();
  for (size_t f = first; f < frames.size(); ++f) names.push_back(frames[f]["name"]);
  return names.dump();
}

// Allocations the page must draw, counted from the snapshot alone: every alloc entry, plus the
// blocks live before the trace began (active at the end and never allocated in the trace, or
// freed in the trace before any alloc of their address).
size_t expected_allocation_count(const nlohmann::json& snapshot) {
  const nlohmann::json& trace = snapshot["device_traces"][0];
  std::set<uint64_t> allocated;
  size_t count = 0;
  for (const nlohmann::json& entry : trace) {
    const uint64_t address = entry.value("addr", uint64_t{0});
    if (entry["action"] == "alloc") {
      allocated.insert(address);
      ++count;
    } else if (entry["action"] == "free_completed" && !allocated.contains(address)) {
      allocated.insert(address);
      ++count;
    }
  }
  for (const nlohmann::json& segment : snapshot["segments"]) {
    for (const nlohmann::json& block : segment["blocks"]) {
      if (block["state"] == "active_allocated" && !allocated.contains(block["address"])) ++count;
    }
  }
  return count;
}

// Hovering an allocation with a real mouse event shows its C++ frames, innermost first, with the
// short name on the line and the full one in its title, and outlines its band; a click pins it.
TEST(TimelineInChromium, HoveringAnAllocationShowsItsCallStack) {
  VRAMLAB_REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 4;
  workload.step_count = 2;
  workload.seed = 5;
  workload.owner_style = testing::OwnerStyle::owner_keys_with_stacks;
  const nlohmann::json snapshot = testing::make_example_snapshot(workload);
  // The largest alloc entry of the trace: its band is the thickest, so its centre is a safe hit.
  const nlohmann::json& trace = snapshot["device_traces"][0];
  size_t chosen = trace.size();
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace[i]["action"] != "alloc") continue;
    if (chosen == trace.size() || trace[i]["size"] > trace[chosen]["size"]) chosen = i;
  }
  ASSERT_LT(chosen, trace.size());
  const std::string probe = R"(<script>
(function () {
  const root = document.documentElement;
  const hooks = window.vramlabTimeline;
  const canvas = document.getElementById("timeline");
  const details = document.getElementById("details");
  const point = hooks.pointOf(hooks.findAllocation(@EVENT@));
  function mouse(type) {
    canvas.dispatchEvent(new MouseEvent(type, { clientX: point.clientX, clientY: point.clientY, bubbles: true }));
  }
  mouse("mousemove");
  const items = Array.from(details.querySelectorAll("ol.frames li"));
  root.setAttribute("data-test-hover-state", details.getAttribute("data-state"));
  root.setAttribute("data-test-frames", JSON.stringify(items.map(function (li) { return li.getAttribute("data-function"); })));
  root.setAttribute("data-test-first-short", items.length > 0 ? items[0].querySelector(".function").textContent : "");
  root.setAttribute("data-test-first-title", items.length > 0 ? items[0].title : "");
  root.setAttribute("data-test-details", details.textContent);
  const overlay = document.getElementById("timeline-highlight");
  const pixels = overlay.getContext("2d").getImageData(0, 0, overlay.width, overlay.height).data;
  let painted = 0;
  for (let i = 3; i < pixels.length; i += 4) painted += pixels[i] > 0 ? 1 : 0;
  root.setAttribute("data-test-highlight-pixels", String(painted));
  mouse("click");
  root.setAttribute("data-test-click-state", details.getAttribute("data-state"));
})();
</script>
)";
  std::string page = render_memory_timeline_html(snapshot, "stacks");
  std::string script = probe;
  script.replace(script.find("@EVENT@"), 7, std::to_string(chosen));
  page.insert(page.rfind("</body>"), script);
  const BrowserRun run = testing::run_in_chromium(page, run_directory("stacks"));
  ASSERT_TRUE(run.ran) << run.command;
  ASSERT_EQ(run.error, "");
  EXPECT_EQ(testing::dom_attribute(run.dom, "data-allocations"),
            std::to_string(expected_allocation_count(snapshot)));
  EXPECT_EQ(testing::dom_attribute(run.dom, "data-test-hover-state"), "hover");
  const nlohmann::json& frames = trace[chosen]["frames"];
  EXPECT_EQ(testing::dom_attribute(run.dom, "data-test-frames"), frame_names(frames, 1))
      << "the frames after the label frame, innermost first";
  EXPECT_EQ(testing::dom_attribute(run.dom, "data-test-first-short"), "CachingAllocator::malloc");
  const std::string title = testing::dom_attribute(run.dom, "data-test-first-title");
  EXPECT_NE(title.find(frames[1]["name"].get<std::string>()), std::string::npos) << title;
  EXPECT_NE(title.find("caching_allocator.cpp:212"), std::string::npos) << title;
  const std::string details = testing::dom_attribute(run.dom, "data-test-details");
  for (const char* key : {"tensor", "module", "phase"}) {
    EXPECT_NE(details.find(trace[chosen][key].get<std::string>()), std::string::npos)
        << key << " missing from the details: " << details;
  }
  EXPECT_EQ(testing::dom_attribute(run.dom, "data-test-click-state"), "pinned");
  EXPECT_GT(std::stoul(testing::dom_attribute(run.dom, "data-test-highlight-pixels")), 100u)
      << "the hovered band is outlined on the overlay";
}

// The detection works: a script error in the page, thrown while it builds its summary, is seen.
TEST(TimelineInChromium, ABrokenScriptIsCaught) {
  VRAMLAB_REQUIRE_CHROMIUM();
  std::string page = render_memory_timeline_html(nlohmann::json::object(), "broken");
  const size_t main_at = page.find("function main() {");
  ASSERT_NE(main_at, std::string::npos);
  page.insert(main_at + 17, "\n  notDefinedAnywhere();");
  const BrowserRun run = testing::run_in_chromium(page, run_directory("broken"));
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_NE(run.error.find("notDefinedAnywhere is not defined"), std::string::npos)
      << "the error was not detected: '" << run.error << "'";
  EXPECT_EQ(run.cards, 0u);
}

}  // namespace
}  // namespace vramlab::report
