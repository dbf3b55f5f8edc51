// The memory timeline page in a real browser: headless Chromium loads generated pages (a realistic
// snapshot ending in an out-of-memory error, an empty trace, lesson-sized and 100k-event traces)
// and the test fails on any JavaScript error. An error listener added before the page's script
// writes the error into an attribute of <html>, which --dump-dom prints; the page's own summary
// cards prove that its script ran to the end. A page with a deliberately broken script must be
// caught, so the detection itself is tested.
// Run: build/tests/bin/test_report_timeline_chromium (needs `chromium`, Debian package chromium)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/report/memory_timeline_html.h"
#include "tests/report/example_snapshot.h"

namespace vramlab::report {
namespace {

constexpr std::string_view kErrorAttribute = "data-vramlab-js-error";

// Records the first uncaught error or unhandled promise rejection on <html> (as kErrorAttribute).
constexpr std::string_view kErrorListener = R"(
<script>
window.addEventListener('error', function (e) {
  document.documentElement.setAttribute('data-vramlab-js-error',
                                        String(e.message) + ' (line ' + e.lineno + ')');
});
window.addEventListener('unhandledrejection', function (e) {
  document.documentElement.setAttribute('data-vramlab-js-error',
                                        'unhandled rejection: ' + String(e.reason));
});
</script>
)";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BrowserRun {
  bool ran = false;   // chromium exited 0
  std::string error;  // the recorded JavaScript error, empty if none
  size_t cards = 0;   // summary cards the page's script made
  std::string command;
};

// Loads `page` (with the error listener put first in <head>) in headless Chromium and returns what
// the final DOM says. --virtual-time-budget lets timers and animation frames run.
BrowserRun run_in_chromium(const std::string& page, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("vramlab_chromium_" + name);
  fs::create_directories(dir);
  std::string instrumented = page;
  const size_t head = instrumented.find("<head>");
  EXPECT_NE(head, std::string::npos) << "the page has no <head>";
  instrumented.insert(head + 6, kErrorListener);
  const fs::path html = dir / "page.html";
  std::ofstream(html, std::ios::binary) << instrumented;
  BrowserRun run;
  run.command =
      "chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--user-data-dir='" +
      (dir / "profile").string() + "' --virtual-time-budget=5000 --dump-dom 'file://" +
      html.string() + "' > '" + (dir / "dom.html").string() + "' 2> '" +
      (dir / "chromium.log").string() + "'";
  run.ran = std::system(run.command.c_str()) == 0;
  const std::string dom = read_file(dir / "dom.html");
  const std::string marker = std::string(kErrorAttribute) + "=\"";
  const size_t at = dom.find(marker);
  if (at != std::string::npos) {
    const size_t start = at + marker.size();
    run.error = dom.substr(start, dom.find('"', start) - start);
  }
  for (size_t p = dom.find("class=\"card\""); p != std::string::npos;
       p = dom.find("class=\"card\"", p + 1))
    ++run.cards;
  return run;
}

bool chromium_available() {
  if (std::system("chromium --version > /dev/null 2>&1") == 0) return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && *ci != '\0') {
    ADD_FAILURE() << "chromium (Debian package chromium) is missing, and CI is set: install it";
  }
  return false;
}

#define REQUIRE_CHROMIUM()                                                                  \
  if (!chromium_available())                                                                \
  GTEST_SKIP() << "chromium (Debian package chromium) is not installed and CI is not set; " \
                  "in CI this test fails instead of skipping"

void expect_clean_run(const nlohmann::json& snapshot, const std::string& name) {
  const BrowserRun run = run_in_chromium(render_memory_timeline_html(snapshot, name), name);
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_EQ(run.error, "") << name << ": the page threw in Chromium";
  EXPECT_GE(run.cards, 3u) << name << ": the page's script did not fill in its summary";
}

TEST(TimelineInChromium, RealisticSnapshotWithOutOfMemoryRunsWithoutErrors) {
  REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 6;
  workload.step_count = 3;
  workload.end_with_oom = true;
  expect_clean_run(testing::make_example_snapshot(workload), "realistic_oom");
}

TEST(TimelineInChromium, EmptySnapshotRunsWithoutErrors) {
  REQUIRE_CHROMIUM();
  expect_clean_run(nlohmann::json::object(), "empty");
}

TEST(TimelineInChromium, HundredThousandEventsRunWithoutErrors) {
  REQUIRE_CHROMIUM();
  testing::ExampleWorkload workload;
  workload.layer_count = 48;
  workload.step_count = 45;
  workload.hidden_bytes = 256 * 1024;
  expect_clean_run(testing::make_example_snapshot(workload), "hundred_thousand");
}

// The detection works: a script error in the page, thrown while it builds its summary, is seen.
TEST(TimelineInChromium, ABrokenScriptIsCaught) {
  REQUIRE_CHROMIUM();
  std::string page = render_memory_timeline_html(nlohmann::json::object(), "broken");
  const size_t main_at = page.find("function main() {");
  ASSERT_NE(main_at, std::string::npos);
  page.insert(main_at + 17, "\n  notDefinedAnywhere();");
  const BrowserRun run = run_in_chromium(page, "broken");
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_NE(run.error.find("notDefinedAnywhere is not defined"), std::string::npos)
      << "the error was not detected: '" << run.error << "'";
  EXPECT_EQ(run.cards, 0u);
}

}  // namespace
}  // namespace vramlab::report
