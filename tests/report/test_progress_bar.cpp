// Tests of common/report/progress_bar.h with a fake clock and a temporary file as the "terminal".
// Run: build/tests/bin/test_report --gtest_filter='ProgressBar.*'
#include "common/report/progress_bar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/report/report_test_util.h"

namespace vramlab::report {
namespace {

using testing::count_of;

// A temporary file that collects what the bar writes.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) {}
  ~Capture() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  FILE* file() const { return file_; }
  std::string text() const {
    std::fflush(file_);
    const long size = std::ftell(file_);
    std::string out(static_cast<size_t>(size), '\0');
    std::rewind(file_);
    const size_t read = std::fread(out.data(), 1, out.size(), file_);
    out.resize(read);
    std::fseek(file_, 0, SEEK_END);
    return out;
  }

 private:
  FILE* file_;
};

struct FakeClock {
  double now_ms = 0;
};

ProgressBarOptions options_for(const Capture& capture, const std::shared_ptr<FakeClock>& clock,
                               ProgressMode mode) {
  ProgressBarOptions options;
  options.stream = capture.file();
  options.mode = mode;
  options.now_ms = [clock] { return clock->now_ms; };
  return options;
}

TEST(ProgressBar, AutoModeIsSilentOnAFile) {
  Capture capture;
  auto clock = std::make_shared<FakeClock>();
  {
    ProgressBar bar(10, "check", options_for(capture, clock, ProgressMode::kAuto));
    EXPECT_EQ(bar.mode(), ProgressMode::kSilent);
    for (uint64_t i = 1; i <= 10; ++i) bar.update(i);
    bar.finish();
  }
  EXPECT_EQ(capture.text(), "");
}

TEST(ProgressBar, AutoModeWithLinePercentPrintsLinesOnAFile) {
  Capture capture;
  auto clock = std::make_shared<FakeClock>();
  ProgressBarOptions options = options_for(capture, clock, ProgressMode::kAuto);
  options.line_every_percent = 25;
  ProgressBar bar(200, "sweep", options);
  EXPECT_EQ(bar.mode(), ProgressMode::kLines);
  for (uint64_t i = 1; i <= 200; ++i) {
    clock->now_ms += 10;
    bar.update(i);
  }
  bar.finish();
  const std::string text = capture.text();
  EXPECT_EQ(count_of(text, "\n"), 4u) << text;  // 25, 50, 75, 100 %
  EXPECT_EQ(count_of(text, "\r"), 0u) << text;
  EXPECT_NE(text.find(" 25% 50/200"), std::string::npos) << text;
  EXPECT_NE(text.find(" 100% 200/200"), std::string::npos) << text;
}

TEST(ProgressBar, LinesModeFinishPrintsAnUnfinishedState) {
  Capture capture;
  auto clock = std::make_shared<FakeClock>();
  ProgressBarOptions options = options_for(capture, clock, ProgressMode::kLines);
  options.line_every_percent = 50;
  ProgressBar bar(10, "x", options);
  bar.update(3);
  bar.finish("stopped");
  const std::string text = capture.text();
  EXPECT_EQ(count_of(text, "\n"), 1u) << text;
  EXPECT_NE(text.find("30% 3/10"), std::string::npos) << text;
  EXPECT_NE(text.find("stopped"), std::string::npos) << text;
}

TEST(ProgressBar, TerminalModeThrottlesRedraws) {
  Capture capture;
  auto clock = std::make_shared<FakeClock>();
  ProgressBarOptions options = options_for(capture, clock, ProgressMode::kTerminal);
  options.min_redraw_interval_ms = 100;
  ProgressBar bar(1000, "replay", options);
  // 1000 updates 1 ms apart span 1 s: at most one redraw per 100 ms, plus the first and the last.
  for (uint64_t i = 1; i <= 1000; ++i) {
    clock->now_ms += 1;
    bar.update(i);
  }
  bar.finish();
  const std::string text = capture.text();
  const size_t redraws = count_of(text, "\r");
  EXPECT_GE(redraws, 10u) << text;
  EXPECT_LE(redraws, 13u) << text;
  EXPECT_EQ(count_of(text, "\n"), 1u);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressBar, RenderShowsPercentRateAndEta) {
  auto clock = std::make_shared<FakeClock>();
  ProgressBarOptions options;
  options.mode = ProgressMode::kSilent;
  options.bar_width = 10;
  options.unit = "ex";
  options.now_ms = [clock] { return clock->now_ms; };
  ProgressBar bar(40, "check", options);
  clock->now_ms = 5000;  // 10 of 40 in 5 s: 2 ex/s, 30 left -> 15 s
  bar.update(10, "ex03");
  EXPECT_EQ(bar.render_line(), "check [=>        ] 25% 10/40 2.00 ex/s ETA 15.00 s ex03");
  clock->now_ms = 20000;
  bar.update(40);
  bar.finish();
  EXPECT_EQ(bar.render_line(), "check [==========] 100% 40/40 2.00 ex/s in 20.00 s");
}

TEST(ProgressBar, ZeroTotalIsCompleteAndOverrunIsClamped) {
  auto clock = std::make_shared<FakeClock>();
  ProgressBarOptions options;
  options.mode = ProgressMode::kSilent;
  options.bar_width = 4;
  options.now_ms = [clock] { return clock->now_ms; };
  ProgressBar empty(0, "", options);
  EXPECT_EQ(empty.render_line(), "[====] 100% 0/0 ETA --");
  ProgressBar bar(5, "", options);
  bar.update(99);
  EXPECT_EQ(bar.done(), 5u);
}

TEST(ProgressBar, DestructorEndsAnOpenTerminalLine) {
  Capture capture;
  auto clock = std::make_shared<FakeClock>();
  {
    ProgressBar bar(3, "x", options_for(capture, clock, ProgressMode::kTerminal));
    bar.update(1);
  }
  const std::string text = capture.text();
  EXPECT_EQ(text.back(), '\n') << text;
  EXPECT_NE(text.find("33% 1/3"), std::string::npos) << text;
}

}  // namespace
}  // namespace vramlab::report
