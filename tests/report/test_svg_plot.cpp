// Tests of common/report/svg_plot.h: valid XML (parsed by python3), escaping, proportional
// geometry, ticks, and errors for mismatched data.
// Run: build/tests/bin/test_report --gtest_filter='XmlEscape.*' (one of its suites)
#include "common/report/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/report/report_test_util.h"
#include "tests/report/xml_check.h"

namespace vramlab::report {
namespace {

using testing::count_of;

using testing::check_xml_with_python;
using testing::XmlCheck;

void expect_valid_xml(const std::string& svg, const std::string& name) {
  const XmlCheck result = check_xml_with_python(svg, name);
  if (result == XmlCheck::kNoPython) GTEST_SKIP() << "python3 not on PATH: XML not parsed";
  EXPECT_EQ(result, XmlCheck::kValid) << svg;
}

// Width of the <rect> whose tooltip starts with `tooltip_prefix`.
double rect_width_with_tooltip(const std::string& svg, const std::string& tooltip_prefix) {
  const std::regex pattern("<rect [^>]*width=\"([0-9.]+)\"[^>]*><title>([^<]*)</title>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[2].str().rfind(tooltip_prefix, 0) == 0) return std::stod((*it)[1].str());
  }
  return -1.0;
}

TEST(XmlEscape, EscapesMarkupAndControlCharacters) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(xml_escape("µ→"), "µ→");
  EXPECT_EQ(xml_escape(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(xml_escape("tab\tok"), "tab\tok");
}

TEST(NiceTicks, CoverTheRangeWithRoundSteps) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> exponent(-6.0, 12.0);
  for (int trial = 0; trial < 500; ++trial) {
    const double max_value = std::pow(10.0, exponent(rng));
    const std::vector<double> ticks = nice_ticks(max_value, 5);
    ASSERT_GE(ticks.size(), 2u);
    EXPECT_EQ(ticks.front(), 0.0);
    EXPECT_GE(ticks.back(), max_value * (1 - 1e-12)) << "max " << max_value;
    EXPECT_LE(ticks.size(), 12u) << "max " << max_value;
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << "step " << step << " for max " << max_value;
    // The last tick is the first one past the maximum: no empty interval at the end.
    EXPECT_LT(ticks[ticks.size() - 2], max_value) << "max " << max_value;
  }
  EXPECT_EQ(nice_ticks(0.0, 5), (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(nice_ticks(std::numeric_limits<double>::quiet_NaN(), 5),
            (std::vector<double>{0.0, 1.0}));
}

StackedBarChart example_stacked_chart() {
  StackedBarChart chart;
  chart.title = "GPT-2 124M <fp32> & AdamW";
  chart.categories = {"parameter", "gradient", "optimizer_state", "activation"};
  chart.bars = {{"batch 8", {497'759'232, 497'759'232, 995'518'464, 3'000'000'000}},
                {"batch \"16\"", {497'759'232, 497'759'232, 995'518'464, 6'000'000'000}},
                {"empty", {0, 0, 0, 0}}};
  chart.budget_bytes = 16ull << 30;
  chart.budget_label = "T4 16 GB";
  return chart;
}

TEST(StackedBarSvg, IsValidXmlWithEscapedText) {
  const std::string svg = render_stacked_bar_svg(example_stacked_chart());
  EXPECT_NE(svg.find("GPT-2 124M &lt;fp32&gt; &amp; AdamW"), std::string::npos);
  EXPECT_NE(svg.find("batch &quot;16&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  expect_valid_xml(svg, "stacked");
}

TEST(StackedBarSvg, SegmentWidthsAreProportionalToBytes) {
  const StackedBarChart chart = example_stacked_chart();
  const std::string svg = render_stacked_bar_svg(chart);
  const double parameter = rect_width_with_tooltip(svg, "batch 8 / parameter");
  const double optimizer = rect_width_with_tooltip(svg, "batch 8 / optimizer_state");
  const double activation8 = rect_width_with_tooltip(svg, "batch 8 / activation");
  const double activation16 = rect_width_with_tooltip(svg, "batch &quot;16&quot; / activation");
  ASSERT_GT(parameter, 0.0) << svg;
  ASSERT_GT(activation16, 0.0) << svg;
  // Coordinates are printed with 2 decimals: allow 0.02 px of rounding on each width.
  EXPECT_NEAR(optimizer / parameter, 2.0, 0.02 * 3 / parameter);
  EXPECT_NEAR(activation16 / activation8, 2.0, 0.02 * 3 / activation8);
  // Empty categories draw nothing; the all-zero bar has no segments at all.
  EXPECT_LT(rect_width_with_tooltip(svg, "empty / "), 0.0);
  // Category colours follow PyTorch's profiler.
  EXPECT_NE(svg.find("fill=\"darkgreen\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"goldenrod\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"mediumblue\""), std::string::npos);
  // 16 GiB is twice the longest bar: written at the edge, not drawn to scale.
  EXPECT_NE(svg.find("T4 16 GB 16.00 GiB \u2192"), std::string::npos) << svg;
}

// Sum of the widths of the segments whose tooltip starts with `bar`.
double bar_width(const std::string& svg, const std::string& bar) {
  const std::regex pattern("<rect [^>]*width=\"([0-9.]+)\"[^>]*><title>([^<]*)</title>");
  double width = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[2].str().rfind(bar + " / ", 0) == 0) width += std::stod((*it)[1].str());
  }
  return width;
}

TEST(StackedBarSvg, AxisFollowsTheBarsAndAFarBudgetIsWrittenAtTheEdge) {
  StackedBarChart chart;
  chart.title = "one step";
  chart.categories = {"parameter", "activation", "input"};
  chart.bars = {{"measured", {16u << 20, 150u << 20, 0}},
                {"estimated", {16u << 20, 160u << 20, 0}}};
  chart.budget_bytes = 16ull << 30;
  chart.budget_label = "sim:t4-16g capacity";
  const SvgFigure far = plot_stacked_bar(chart);
  // 176 MiB on a 200 MiB axis: the longest bar spans most of the plot, whatever the budget.
  EXPECT_GT(bar_width(far.svg, "estimated"), 0.5 * far.width) << far.svg;
  EXPECT_EQ(far.svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(far.svg.find(">sim:t4-16g capacity 16.00 GiB \u2192</text>"), std::string::npos);
  // A category no bar has is left out of the legend.
  EXPECT_EQ(far.svg.find(">input</text>"), std::string::npos) << far.svg;
  EXPECT_NE(far.svg.find(">activation</text>"), std::string::npos);
  EXPECT_TRUE(text_layout_problems(far).empty());

  // A budget near the data is drawn to scale, as a dashed line, and the bars shrink to fit it.
  chart.budget_bytes = 250u << 20;
  const SvgFigure near = plot_stacked_bar(chart);
  EXPECT_NE(near.svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(near.svg.find("\u2192"), std::string::npos);
  EXPECT_LT(bar_width(near.svg, "estimated"), bar_width(far.svg, "estimated"));
  EXPECT_TRUE(text_layout_problems(near).empty());
}

TEST(StackedBarSvg, RejectsMismatchedValuesAndColours) {
  StackedBarChart chart = example_stacked_chart();
  chart.bars[1].values_bytes.pop_back();
  EXPECT_THROW(render_stacked_bar_svg(chart), std::invalid_argument);
  chart = example_stacked_chart();
  chart.colours = {"red"};
  EXPECT_THROW(render_stacked_bar_svg(chart), std::invalid_argument);
}

TEST(StackedBarSvg, NoBarsIsStillValid) {
  StackedBarChart chart;
  chart.title = "nothing";
  expect_valid_xml(render_stacked_bar_svg(chart), "stacked_empty");
}

TEST(GroupedBarSvg, BarsHaveOneRectPerSeriesAndGroupWithHeightsProportional) {
  GroupedBarChart chart;
  chart.title = "measured vs estimated";
  chart.groups = {"parameter", "gradient", "optimizer_state", "activation"};
  chart.series = {"measured", "estimated"};
  chart.values_bytes = {{100 << 20, 100 << 20, 200 << 20, 0},
                        {100 << 20, 100 << 20, 200 << 20, 50 << 20}};
  const std::string svg = render_grouped_bar_svg(chart);
  expect_valid_xml(svg, "grouped");
  EXPECT_EQ(count_of(svg, "<title>"), 1u + 8u);  // document title + one tooltip per bar
  const std::regex pattern(
      "height=\"([0-9.]+)\" fill=\"[^\"]*\"><title>optimizer_state / measured");
  const std::regex pattern_small(
      "height=\"([0-9.]+)\" fill=\"[^\"]*\"><title>gradient / estimated");
  std::smatch big;
  std::smatch small;
  ASSERT_TRUE(std::regex_search(svg, big, pattern)) << svg;
  ASSERT_TRUE(std::regex_search(svg, small, pattern_small)) << svg;
  EXPECT_NEAR(std::stod(big[1].str()) / std::stod(small[1].str()), 2.0, 0.01);
}

TEST(GroupedBarSvg, RejectsWrongShape) {
  GroupedBarChart chart;
  chart.groups = {"a", "b"};
  chart.series = {"measured"};
  chart.values_bytes = {{1, 2, 3}};
  EXPECT_THROW(render_grouped_bar_svg(chart), std::invalid_argument);
  chart.values_bytes = {};
  EXPECT_THROW(render_grouped_bar_svg(chart), std::invalid_argument);
}

TEST(GroupedBarSvg, MissingValuesDrawNoBarAndSayNotAvailable) {
  GroupedBarChart chart;
  chart.groups = {"temporaries", "inputs"};
  chart.series = {"measured", "estimated"};
  chart.values_bytes = {{11u << 20, 8192}, {0, 8192}};
  chart.missing = {{false, false}, {true, false}};
  const std::string svg = render_grouped_bar_svg(chart);
  EXPECT_EQ(count_of(svg, "<title>"), 1u + 3u) << svg;
  EXPECT_EQ(svg.find("temporaries / estimated"), std::string::npos);
  EXPECT_EQ(count_of(svg, ">n/a</text>"), 1u);
  chart.missing = {{false, false}};
  EXPECT_THROW(render_grouped_bar_svg(chart), std::invalid_argument);
}

// Random grouped and stacked charts: labels of random length (some one long word), values over
// many magnitudes, 1 to 9 groups. Whatever the data, no text overlaps another or leaves the canvas.
TEST(ChartLayout, RandomChartsHaveNoOverlappingOrClippedText) {
  std::mt19937_64 rng(20261123);
  auto word = [&](size_t length) {
    std::string w;
    for (size_t i = 0; i < length; ++i) w += static_cast<char>('a' + rng() % 26);
    return w;
  };
  auto label = [&] {
    std::string text = word(1 + rng() % 12);
    for (size_t words = rng() % 4; words > 0; --words) text += " " + word(1 + rng() % 9);
    if (rng() % 5 == 0) text = word(14 + rng() % 16);  // one word wider than a group
    return text;
  };
  auto bytes = [&] {
    const uint64_t magnitude = uint64_t{1} << (rng() % 40);
    return rng() % 7 == 0 ? 0 : magnitude + rng() % magnitude;
  };
  for (int trial = 0; trial < 200; ++trial) {
    GroupedBarChart grouped;
    grouped.title = label() + " " + label() + " (" + label() + ", " + label() + ")";
    grouped.series = {"measured", "estimated"};
    grouped.values_bytes.resize(2);
    grouped.missing.resize(2);
    const size_t groups = 1 + rng() % 9;
    for (size_t g = 0; g < groups; ++g) {
      grouped.groups.push_back(label());
      for (size_t s = 0; s < 2; ++s) {
        grouped.values_bytes[s].push_back(bytes());
        grouped.missing[s].push_back(rng() % 9 == 0);
      }
    }
    const SvgFigure g = plot_grouped_bar(grouped);
    const std::vector<std::string> problems = text_layout_problems(g);
    ASSERT_TRUE(problems.empty()) << "trial " << trial << ": " << problems.front() << "\n" << g.svg;

    StackedBarChart stacked;
    stacked.title = grouped.title;
    stacked.categories = {"parameter", "gradient", "optimizer_state", "activation", "temporary"};
    for (size_t b = 0, n = 1 + rng() % 4; b < n; ++b) {
      StackedBar bar{label(), {}};
      for (size_t c = 0; c < stacked.categories.size(); ++c) bar.values_bytes.push_back(bytes());
      stacked.bars.push_back(bar);
    }
    stacked.budget_bytes = rng() % 2 == 0 ? 0 : bytes();
    stacked.budget_label = label();
    const SvgFigure s = plot_stacked_bar(stacked);
    const std::vector<std::string> stacked_problems = text_layout_problems(s);
    ASSERT_TRUE(stacked_problems.empty())
        << "trial " << trial << ": " << stacked_problems.front() << "\n"
        << s.svg;
  }
}

TEST(TextBox, WidthFollowsCharactersAndFontSizeAndAnchor) {
  const TextBox start = text_box("abcd", 100, 50, "start", 10, false, 0);
  const TextBox longer = text_box("abcdefgh", 100, 50, "start", 10, false, 0);
  const TextBox bigger = text_box("abcd", 100, 50, "start", 20, false, 0);
  const TextBox middle = text_box("abcd", 100, 50, "middle", 10, false, 0);
  const TextBox end = text_box("abcd", 100, 50, "end", 10, false, 0);
  auto width = [](const TextBox& b) { return b.corners[1].x - b.corners[0].x; };
  EXPECT_DOUBLE_EQ(start.corners[0].x, 100);
  EXPECT_NEAR(width(longer), 2 * width(start), 1e-9);
  EXPECT_NEAR(width(bigger), 2 * width(start), 1e-9);
  EXPECT_NEAR(middle.corners[0].x, 100 - width(start) / 2, 1e-9);
  EXPECT_NEAR(end.corners[1].x, 100, 1e-9);
  EXPECT_GT(text_box("abcd", 0, 0, "start", 10, true, 0).corners[1].x, width(start));
  // The box spans the baseline: glyphs above it, descenders below.
  EXPECT_LT(start.corners[0].y, 50);
  EXPECT_GT(start.corners[3].y, 50);
  // Turned by -90 degrees (upright text reading upwards), the box is tall and thin, above y.
  const TextBox upright = text_box("abcdefgh", 100, 50, "start", 10, false, -90);
  double y_min = 1e9, y_max = -1e9, x_min = 1e9, x_max = -1e9;
  for (const CanvasPoint& p : upright.corners) {
    y_min = std::min(y_min, p.y);
    y_max = std::max(y_max, p.y);
    x_min = std::min(x_min, p.x);
    x_max = std::max(x_max, p.x);
  }
  EXPECT_NEAR(y_max, 50, 1e-9);
  EXPECT_NEAR(50 - y_min, width(longer), 1e-9);
  EXPECT_NEAR(x_max - x_min, start.corners[3].y - start.corners[0].y, 1e-9);
}

TEST(TextLayoutProblems, FindsOverlapsAndTextOffTheCanvasButNotNeighbours) {
  SvgFigure figure;
  figure.width = 200;
  figure.height = 100;
  figure.text_boxes = {text_box("left", 10, 20, "start", 12, false, 0),
                       text_box("touching", 10 + 4 * 12 * 0.6, 20, "start", 12, false, 0),
                       text_box("below", 10, 40, "start", 12, false, 0)};
  EXPECT_TRUE(text_layout_problems(figure).empty());
  figure.text_boxes.push_back(text_box("crossing", 20, 22, "start", 12, false, 0));
  std::vector<std::string> problems = text_layout_problems(figure);
  ASSERT_EQ(problems.size(), 2u);  // over "left" and "touching"
  EXPECT_NE(problems[0].find("\"left\""), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("overlaps \"crossing\""), std::string::npos) << problems[0];
  figure.text_boxes = {text_box("off the right edge", 190, 50, "start", 12, false, 0),
                       text_box("above", 100, 5, "middle", 12, false, 0)};
  problems = text_layout_problems(figure);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("leaves the canvas (200.00 x 100.00)"), std::string::npos);
  // Two labels turned by 45 degrees side by side: their bounding rectangles overlap, the texts do
  // not (the check uses the turned boxes themselves).
  figure.text_boxes = {text_box("parallel one", 60, 90, "start", 10, false, -45),
                       text_box("parallel two", 80, 90, "start", 10, false, -45)};
  EXPECT_TRUE(text_layout_problems(figure).empty());
  figure.text_boxes.push_back(text_box("across", 60, 60, "start", 10, false, 45));
  EXPECT_FALSE(text_layout_problems(figure).empty());
}

TEST(LinePlotSvg, SkipsNonFinitePointsAndBreaksTheLine) {
  LinePlot plot;
  plot.title = "peak memory vs sequence length";
  plot.x_label = "T";
  plot.y_label = "peak";
  plot.y_is_bytes = true;
  plot.log_x = true;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  plot.series = {{"naive", {128, 256, 512, 1024, 2048}, {1e6, 4e6, nan, 6.4e7, 2.56e8}, "", false},
                 {"flash", {128, 256, 512, 1024, 0.0}, {1e6, 2e6, 4e6, 8e6, 1.0}, "", true}};
  const std::string svg = render_line_plot_svg(plot);
  expect_valid_xml(svg, "line");
  // naive breaks at the NaN: two polylines; flash loses its x=0 point on a log axis: one.
  EXPECT_EQ(count_of(svg, "<polyline"), 3u) << svg;
  EXPECT_EQ(count_of(svg, "<circle"), 8u) << svg;
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("MiB</text>"), std::string::npos);
}

TEST(LinePlotSvg, LogLogAxesSpaceEqualRatiosEquallyWithPowerOfTwoTicks) {
  LinePlot plot;
  plot.title = "attention memory";
  plot.log_x = true;
  plot.log_x_base = 2.0;
  plot.log_y = true;
  plot.y_is_bytes = true;
  // y quadruples while x doubles; the 0 byte point cannot be drawn on a log axis.
  plot.series = {{"naive", {512, 1024, 2048, 4096}, {0.0, 4194304, 16777216, 67108864}, "", false}};
  const std::string svg = render_line_plot_svg(plot);
  expect_valid_xml(svg, "line_log_log");
  std::vector<double> cx, cy;
  const std::regex circle("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator();
       ++it) {
    cx.push_back(std::stod((*it)[1]));
    cy.push_back(std::stod((*it)[2]));
  }
  ASSERT_EQ(cx.size(), 3u) << svg;
  EXPECT_NEAR(cx[1] - cx[0], cx[2] - cx[1], 0.02) << svg;
  EXPECT_NEAR(cy[0] - cy[1], cy[1] - cy[2], 0.02) << svg;
  EXPECT_GT(cy[0] - cy[1], 0.0) << "larger bytes must be drawn higher";
  // Ticks are powers of two from the data's smallest to its largest value, in binary prefixes.
  EXPECT_NE(svg.find(">4.00 MiB</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">64.00 MiB</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">1024</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">100</text>"), std::string::npos) << "base-2 x ticks, not decades: " << svg;
}

TEST(LinePlotSvg, EmptyFlatAndNegativeSeriesRender) {
  LinePlot plot;
  plot.title = "empty";
  expect_valid_xml(render_line_plot_svg(plot), "line_empty");
  plot.series = {{"flat", {0, 1, 2}, {5, 5, 5}, "", false}};
  expect_valid_xml(render_line_plot_svg(plot), "line_flat");
  plot.series = {{"loss delta", {0, 1, 2}, {-3.5, 0.25, 1e-9}, "", false}};
  const std::string svg = render_line_plot_svg(plot);
  EXPECT_NE(svg.find(">-4</text>"), std::string::npos) << svg;
  expect_valid_xml(svg, "line_negative");
}

TEST(LinePlotSvg, RejectsDifferentLengths) {
  LinePlot plot;
  plot.series = {{"bad", {1, 2, 3}, {1, 2}, "", false}};
  try {
    render_line_plot_svg(plot);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'bad' has 3 x values but 2 y values"),
              std::string::npos)
        << error.what();
  }
}

TEST(WriteTextFile, WritesAndNamesAnUnwritablePath) {
  const std::string path = ::testing::TempDir() + "vramlab_write_text.svg";
  write_text_file(path, "<svg/>");
  std::FILE* file = std::fopen(path.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  char buffer[16] = {};
  EXPECT_EQ(std::fread(buffer, 1, sizeof buffer, file), 6u);
  std::fclose(file);
  try {
    write_text_file("/nonexistent-dir/x.svg", "x");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/x.svg"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace vramlab::report
