// Lesson 01's figures can be read: at the lesson's default settings and at other model sizes and
// devices, no two texts of a figure overlap and none leaves the canvas (the report library's layout
// check), every figure renders to a PNG of its own size with librsvg, the timeline page runs in
// headless Chromium without a JavaScript error, and the stacked bars' totals are the totals of the
// lesson's text tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/01-memory-breakdown/breakdown_report.h"
#include "tests/report/browser_check.h"

namespace vramlab::lesson01 {
namespace {

struct Case {
  std::string name;  // file-name prefix of the rendered figures
  std::string model;
  std::string device;
  int64_t batch;
  std::string optimizer;
};

// The lesson's default run first (the committed figures), then a llama, a big GPT-2 on meta, a
// small model on a large device and a model without optimizer state.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"default", "gpt2-tiny", "sim:t4-16g", 8, "adamw"},
      {"llama_tiny_meta", "llama-tiny", "meta", 8, "adamw"},
      {"gpt2_1_5b_meta", "gpt2-1.5b", "meta", 8, "adamw"},
      {"gpt2_mini_a100", "gpt2-mini", "sim:a100-80g", 3, "sgd"},
      {"gpt2_124m_meta_sgd_momentum", "gpt2-124m", "meta", 1, "sgd-momentum"},
  };
  return all;
}

Breakdown breakdown_for(const Case& c) {
  StepSettings s;
  s.model = model_config_by_name(c.model);
  s.batch = c.batch;
  s.seq = std::min<int64_t>(128, s.model.max_seq);
  s.optimizer = c.optimizer;
  s.device = memory::parse_device(c.device);
  return analyse(s, measure_training_step(s));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "  " + line + "\n";
  return out;
}

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

class LessonFigures : public ::testing::TestWithParam<Case> {};

TEST_P(LessonFigures, NoTextOverlapsAnotherOrLeavesTheCanvas) {
  const Figures figures = make_figures(breakdown_for(GetParam()));
  for (const auto& [name, figure] :
       {std::pair{"breakdown.svg", &figures.breakdown},
        std::pair{"measured_vs_estimated.svg", &figures.measured_vs_estimated}}) {
    EXPECT_GT(figure->text_boxes.size(), 10u) << name;
    const std::vector<std::string> problems = report::text_layout_problems(*figure);
    EXPECT_TRUE(problems.empty()) << GetParam().name << " " << name << ":\n" << joined(problems);
  }
}

// The figure is read beside the tables: a total it shows must be one the tables show.
TEST_P(LessonFigures, EveryBarTotalIsATotalOfTheTextTables) {
  const Breakdown b = breakdown_for(GetParam());
  const std::string text = render_text(b, false);
  const Figures figures = make_figures(b);
  size_t totals = 0;
  for (const report::StackedBar& bar : breakdown_chart(b).bars) {
    uint64_t total = 0;
    for (const uint64_t v : bar.values_bytes) total += v;
    const std::string label = report::format_bytes(total);
    ++totals;
    EXPECT_NE(text.find(label), std::string::npos)
        << "bar '" << bar.label << "' totals " << label << ", which no table shows";
    EXPECT_NE(figures.breakdown.svg.find(">" + label + "<"), std::string::npos) << bar.label;
  }
  EXPECT_GE(totals, 2u);
}

INSTANTIATE_TEST_SUITE_P(Settings, LessonFigures, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// librsvg draws what a documentation page or a browser would: a figure that does not render, or
// renders at another size than its canvas, fails here.
TEST(LessonFiguresRender, EveryFigureRendersToAPngOfItsCanvasSize) {
  namespace fs = std::filesystem;
  if (std::system("rsvg-convert --version > /dev/null 2>&1") != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && *ci != '\0') {
      FAIL() << "rsvg-convert (Debian package librsvg2-bin) is missing, and CI is set: install it";
    }
    GTEST_SKIP()
        << "rsvg-convert (Debian package librsvg2-bin) is not installed and CI is not set; "
           "in CI this test fails instead of skipping";
  }
  const fs::path dir = LESSON01_FIGURES_TEST_DIR;
  fs::create_directories(dir);
  for (const Case& c : cases()) {
    const Figures figures = make_figures(breakdown_for(c));
    for (const auto& [name, figure] :
         {std::pair{"breakdown", &figures.breakdown},
          std::pair{"measured_vs_estimated", &figures.measured_vs_estimated}}) {
      const fs::path svg = dir / (c.name + "_" + name + ".svg");
      const fs::path png = dir / (c.name + "_" + name + ".png");
      fs::remove(png);
      report::write_text_file(svg.string(), figure->svg);
      const std::string command =
          "rsvg-convert -o '" + png.string() + "' '" + svg.string() + "' 2>&1";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      // A PNG starts with its 8-byte signature, then the IHDR chunk: length, "IHDR", width and
      // height as big-endian 32-bit integers.
      std::ifstream in(png, std::ios::binary);
      std::string head(24, '\0');
      in.read(head.data(), 24);
      ASSERT_TRUE(in) << png << " is not a PNG";
      ASSERT_EQ(head.substr(1, 3), "PNG") << png;
      ASSERT_EQ(head.substr(12, 4), "IHDR") << png;
      auto be32 = [&](size_t at) {
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) v = v << 8 | static_cast<unsigned char>(head[at + k]);
        return v;
      };
      EXPECT_EQ(be32(16), static_cast<uint32_t>(std::lround(figure->width))) << png;
      EXPECT_EQ(be32(20), static_cast<uint32_t>(std::lround(figure->height))) << png;
    }
  }
}

// The timeline page a learner opens, for each setting, runs in Chromium without a JavaScript error.
TEST(LessonFiguresRender, TimelineRunsInChromiumWithoutErrors) {
  using report::testing::ChromiumAvailability;
  switch (report::testing::find_chromium()) {
    case ChromiumAvailability::kFound:
      break;
    case ChromiumAvailability::kMissingInCi:
      FAIL() << "chromium (Debian package chromium) is missing, and CI is set: install it";
    case ChromiumAvailability::kMissing:
      GTEST_SKIP() << "chromium (Debian package chromium) is not installed and CI is not set; in "
                      "CI this test fails instead of skipping";
  }
  for (const Case& c : cases()) {
    const report::testing::BrowserRun run = report::testing::run_in_chromium(
        make_figures(breakdown_for(c)).timeline_html,
        std::string(LESSON01_FIGURES_TEST_DIR) + "/" + c.name + "_timeline");
    ASSERT_TRUE(run.ran) << run.command;
    EXPECT_EQ(run.error, "") << c.name << ": the timeline threw in Chromium";
    EXPECT_GE(run.cards, 3u) << c.name << ": the timeline's script did not fill in its summary";
  }
}

}  // namespace
}  // namespace vramlab::lesson01
