// Tests of common/report/svg_plot.h: valid XML (parsed by python3), escaping, proportional
// geometry, ticks, and errors for mismatched data.
// Run: build/tests/bin/test_report_svg_plot
#include "common/report/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/report/xml_check.h"

namespace vramlab::report {
namespace {

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

size_t count_of(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
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
  EXPECT_NE(svg.find("T4 16 GB (16.00 GiB)"), std::string::npos);
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
