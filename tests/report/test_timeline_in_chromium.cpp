// The memory timeline page in a real browser: headless Chromium loads generated pages (a realistic
// snapshot ending in an out-of-memory error, an empty trace, lesson-sized and 100k-event traces)
// and the test fails on any JavaScript error. An error listener added before the page's script
// writes the error into an attribute of <html>, which --dump-dom prints; the page's own summary
// cards prove that its script ran to the end. A page with a deliberately broken script must be
// caught, so the detection itself is tested.
// Run: build/tests/bin/test_report_timeline_chromium (needs `chromium`, Debian package chromium)
#include <gtest/gtest.h>

#include <string>

#include "common/report/memory_timeline_html.h"
#include "tests/report/browser_check.h"
#include "tests/report/example_snapshot.h"

namespace vramlab::report {
namespace {

using testing::BrowserRun;
using testing::ChromiumAvailability;

#define REQUIRE_CHROMIUM()                                                                      \
  switch (testing::find_chromium()) {                                                           \
    case ChromiumAvailability::kFound:                                                          \
      break;                                                                                    \
    case ChromiumAvailability::kMissingInCi:                                                    \
      FAIL() << "chromium (Debian package chromium) is missing, and CI is set: install it";     \
    case ChromiumAvailability::kMissing:                                                        \
      GTEST_SKIP() << "chromium (Debian package chromium) is not installed and CI is not set; " \
                      "in CI this test fails instead of skipping";                              \
  }

std::string run_directory(const std::string& name) {
  return ::testing::TempDir() + "vramlab_chromium_" + name;
}

void expect_clean_run(const nlohmann::json& snapshot, const std::string& name) {
  const BrowserRun run =
      testing::run_in_chromium(render_memory_timeline_html(snapshot, name), run_directory(name));
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
  const BrowserRun run = testing::run_in_chromium(page, run_directory("broken"));
  ASSERT_TRUE(run.ran) << run.command;
  EXPECT_NE(run.error.find("notDefinedAnywhere is not defined"), std::string::npos)
      << "the error was not detected: '" << run.error << "'";
  EXPECT_EQ(run.cards, 0u);
}

}  // namespace
}  // namespace vramlab::report
