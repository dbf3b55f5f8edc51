// The trace page in a real browser: headless Chromium loads pages of vramlab- and torch.profiler-
// style traces and the test fails on any JavaScript error. The page writes what it laid out and
// drew into attributes of its canvas; an injected script hovers the longest span with a real
// MouseEvent, zooms with the wheel and by dragging, and resets, and reports what the page showed.
// Every count is checked against a brute-force reading of the trace (tests/report/example_trace.h),
// for synthetic traces and for what profile::chrome_trace writes of a recording.
// Run: build/tests/bin/test_report_chromium --gtest_filter='TraceInChromium.*'
//   (needs `chromium`, Debian package chromium)
#include <gtest/gtest.h>

#include <string>

#include "common/profile/chrome_trace.h"
#include "common/report/trace_html.h"
#include "tests/report/browser_check.h"
#include "tests/report/example_snapshot.h"
#include "tests/report/example_trace.h"
#include "tests/sanitized_build.h"

namespace vramlab::report {
namespace {

using nlohmann::json;
using testing::BrowserRun;
using testing::dom_attribute;

// Hovers the longest span of the first lane, then wheel, drag and reset; reports through <html>.
constexpr const char* kProbe = R"(<script>
(function () {
  const root = document.documentElement;
  const hooks = window.vramlabTrace;
  const canvas = document.getElementById("trace");
  const tooltip = document.getElementById("tooltip");
  function report(name, value) { root.setAttribute("data-test-" + name, String(value)); }
  function mouse(type, x, y, extra) {
    const init = Object.assign({ clientX: x, clientY: y, bubbles: true, cancelable: true }, extra || {});
    canvas.dispatchEvent(type === "wheel" ? new WheelEvent(type, init) : new MouseEvent(type, init));
  }
  const lane = hooks.model.lanes[0];
  if (lane) {
    let longest = 0;
    lane.spans.forEach(function (span, k) { if (span.dur > lane.spans[longest].dur) longest = k; });
    const point = hooks.pointOfSpan(0, longest);
    mouse("mousemove", point.clientX, point.clientY);
    report("hover-name", lane.spans[longest].name);
    report("hover-text", tooltip.textContent.split("\n")[0]);
    report("hover-shown", tooltip.style.display);
  }
  const rect = canvas.getBoundingClientRect();
  const full = [canvas.getAttribute("data-view-start-ms"), canvas.getAttribute("data-view-end-ms")];
  mouse("wheel", rect.left + rect.width * 0.6, rect.top + 40, { deltaY: -500 });
  report("wheel-view", canvas.getAttribute("data-view-start-ms") + " " + canvas.getAttribute("data-view-end-ms"));
  report("wheel-drawn", canvas.getAttribute("data-drawn-spans"));
  mouse("mousedown", rect.left + rect.width * 0.3, rect.top + 40);
  mouse("mousemove", rect.left + rect.width * 0.5, rect.top + 40);
  mouse("mouseup", rect.left + rect.width * 0.5, rect.top + 40);
  report("drag-view", canvas.getAttribute("data-view-start-ms") + " " + canvas.getAttribute("data-view-end-ms"));
  document.getElementById("reset").click();
  report("reset-view", canvas.getAttribute("data-view-start-ms") + " " + canvas.getAttribute("data-view-end-ms"));
  report("full-view", full[0] + " " + full[1]);
  report("drawn-after-reset", canvas.getAttribute("data-drawn-spans"));
})();
</script>
)";

std::pair<double, double> view_of(const std::string& text) {
  const size_t space = text.find(' ');
  if (space == std::string::npos) return {0.0, 0.0};
  return {std::stod(text.substr(0, space)), std::stod(text.substr(space + 1))};
}

void expect_drawn_as_laid_out(const json& trace, const std::string& name) {
  std::string page = render_trace_html(trace, name);
  page.insert(page.rfind("</body>"), kProbe);
  const BrowserRun run =
      testing::run_in_chromium(page, std::string(VRAMLAB_CHROMIUM_RUN_DIR) + "/trace_" + name);
  ASSERT_TRUE(run.ran) << run.command;
  ASSERT_EQ(run.error, "") << name << ": the page threw in Chromium";
  EXPECT_GE(run.cards, 4u) << name << ": the page's script did not fill in its summary";
  const json expected = testing::expected_trace_layout(trace);
  EXPECT_EQ(dom_attribute(run.dom, "data-span-count"), expected["span_count"].dump());
  EXPECT_EQ(dom_attribute(run.dom, "data-lane-count"), expected["lane_count"].dump());
  EXPECT_EQ(dom_attribute(run.dom, "data-counter-count"), expected["counter_count"].dump());
  EXPECT_EQ(dom_attribute(run.dom, "data-sample-count"), expected["sample_count"].dump());
  EXPECT_EQ(dom_attribute(run.dom, "data-instant-count"), expected["instant_count"].dump());
  const size_t span_count = expected["span_count"].get<size_t>();
  if (span_count == 0) return;
  // Sub-pixel spans share a pixel, so at most every span is painted, and some always are.
  const size_t drawn = std::stoul(dom_attribute(run.dom, "data-test-drawn-after-reset"));
  EXPECT_GT(drawn, 0u);
  EXPECT_LE(drawn, span_count);
  EXPECT_EQ(dom_attribute(run.dom, "data-test-hover-shown"), "block");
  EXPECT_EQ(dom_attribute(run.dom, "data-test-hover-text"),
            dom_attribute(run.dom, "data-test-hover-name"))
      << "hovering the longest span must name it";
  const auto [full_start, full_end] = view_of(dom_attribute(run.dom, "data-test-full-view"));
  const auto [wheel_start, wheel_end] = view_of(dom_attribute(run.dom, "data-test-wheel-view"));
  const auto [drag_start, drag_end] = view_of(dom_attribute(run.dom, "data-test-drag-view"));
  EXPECT_LT(wheel_end - wheel_start, 0.6 * (full_end - full_start)) << "the wheel zooms in";
  EXPECT_GE(wheel_start, full_start);
  EXPECT_LE(wheel_end, full_end);
  // The drag covered a fifth of the canvas, a little less of the plot (labels take the left).
  EXPECT_LT(drag_end - drag_start, 0.3 * (wheel_end - wheel_start)) << "a drag zooms to its range";
  EXPECT_GT(drag_end - drag_start, 0.1 * (wheel_end - wheel_start));
  EXPECT_GE(drag_start, wheel_start);
  EXPECT_LE(drag_end, wheel_end);
  EXPECT_EQ(dom_attribute(run.dom, "data-test-reset-view"),
            dom_attribute(run.dom, "data-test-full-view"));
}

TEST(TraceInChromium, VramlabTraceIsDrawnAsLaidOut) {
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_drawn_as_laid_out(testing::make_vramlab_style_trace(21, 2, 6), "vramlab");
}

TEST(TraceInChromium, PyTorchTraceWithBeginEndAndInstantsIsDrawnAsLaidOut) {
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_drawn_as_laid_out(testing::make_pytorch_style_trace(22, 37), "pytorch");
}

TEST(TraceInChromium, ArrayFormatIsDrawnAsLaidOut) {
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_drawn_as_laid_out(testing::make_pytorch_style_trace(23, 9)["traceEvents"], "array");
}

TEST(TraceInChromium, TheProfilersChromeTraceIsDrawnAsLaidOut) {
  VRAMLAB_REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 4;
  workload.step_count = 2;
  workload.seed = 25;
  workload.owner_style = testing::OwnerStyle::owner_keys;
  expect_drawn_as_laid_out(profile::chrome_trace(testing::recording_from_snapshot(
                               testing::make_example_snapshot(workload))),
                           "profiler");
}

TEST(TraceInChromium, EmptyTraceRunsWithoutErrors) {
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_drawn_as_laid_out(json::array(), "empty");
}

TEST(TraceInChromium, LargeTraceRunsWithoutErrors) {
  VRAMLAB_SKIP_UNDER_SANITIZERS("this file's smaller traces");
  VRAMLAB_REQUIRE_CHROMIUM();
  expect_drawn_as_laid_out(testing::make_vramlab_style_trace(24, 40, 48), "large");
}

// The detection works: a script error in the page is seen.
TEST(TraceInChromium, ABrokenScriptIsCaught) {
  VRAMLAB_REQUIRE_CHROMIUM();
  std::string page = render_trace_html(json::array(), "broken");
  const size_t main_at = page.find("function main() {");
  ASSERT_NE(main_at, std::string::npos);
  page.insert(main_at + 17, "\n  notDefinedAnywhere();");
  const BrowserRun run =
      testing::run_in_chromium(page, std::string(VRAMLAB_CHROMIUM_RUN_DIR) + "/trace_broken");
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_NE(run.error.find("notDefinedAnywhere is not defined"), std::string::npos)
      << "the error was not detected: '" << run.error << "'";
  EXPECT_EQ(run.cards, 0u);
}

}  // namespace
}  // namespace vramlab::report
