// SVG figures: a small element writer, "nice" axis ticks, and the three chart kinds.
#include "common/report/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <numbers>
#include <stdexcept>
#include <utility>

#include "common/report/category_colours.h"
#include "common/report/table.h"
#include "common/report/terminal.h"

namespace vramlab::report {
namespace {

constexpr double kFontSize = 12.0;
constexpr double kTitleFontSize = 15.0;
// Average glyph width and the ascent/descent of a sans-serif font, in font sizes (em): DejaVu
// Sans, what librsvg and most Linux browsers pick for "sans-serif", averages about 0.6 em for
// mixed lower-case text and digits, 0.65 em in bold. Layout and the overlap check use the same
// estimates, so a label that is estimated to fit is also checked with that estimate.
constexpr double kGlyphWidth = 0.6;
constexpr double kBoldGlyphWidth = 0.66;
constexpr double kAscent = 0.78;
constexpr double kDescent = 0.24;
// A budget up to this multiple of the largest bar is drawn to scale; beyond, it is written at the
// edge of the plot.
constexpr double kBudgetOnScaleFactor = 1.5;
constexpr std::string_view kBudgetColour = "#b00000";
// Group labels that do not fit their slot even wrapped are turned by this angle (radians).
constexpr double kGroupLabelTurn = 35.0 * std::numbers::pi / 180.0;
// Half a pixel of slack: boxes that merely touch, or sit on the canvas edge, are fine.
constexpr double kTolerance = 0.5;

// Appends every piece to `out` (avoids temporaries from chains of operator+).
template <typename... Pieces>
void append(std::string& out, const Pieces&... pieces) {
  (out.append(std::string_view(pieces)), ...);
}

std::string number(double value) {
  std::array<char, 32> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.2f", value);
  return std::string(buffer.data());
}

// A short label for a plain axis value: up to four significant digits.
std::string tick_label(double value) {
  if (std::abs(value) < 1e-12) return "0";
  std::array<char, 32> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.4g", value);
  return std::string(buffer.data());
}

// A byte value that may be negative or beyond 2^64 (clamped) as "-1.50 MiB".
std::string signed_bytes_label(double bytes) {
  std::string label = bytes < 0 ? "-" : "";
  label += format_bytes(static_cast<uint64_t>(std::min(std::abs(bytes), 1.8e19)));
  return label;
}

double text_width(std::string_view text, double font_size = kFontSize, bool bold = false) {
  return font_size * (bold ? kBoldGlyphWidth : kGlyphWidth) *
         static_cast<double>(display_width(text));
}

// "[x0..x1, y0..y1]": the box's extent, for a layout message.
std::string describe(const TextBox& box) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const CanvasPoint& p : box.corners) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  return "[x " + number(x0) + ".." + number(x1) + ", y " + number(y0) + ".." + number(y1) + "]";
}

// Separating-axis test of two rectangles (each possibly rotated): they overlap unless their
// projections onto one of the four edge directions are disjoint. Touching edges do not count.
bool boxes_overlap(const TextBox& a, const TextBox& b) {
  for (const TextBox* box : {&a, &b}) {
    for (size_t e = 0; e < 2; ++e) {
      const CanvasPoint& p = box->corners[e];
      const CanvasPoint& q = box->corners[e + 1];
      const double ax = -(q.y - p.y);
      const double ay = q.x - p.x;
      const double length = std::hypot(ax, ay);
      if (length == 0.0) return false;  // an empty text covers nothing
      auto project = [&](const TextBox& t) {
        double lo = INFINITY, hi = -INFINITY;
        for (const CanvasPoint& c : t.corners) {
          const double d = (c.x * ax + c.y * ay) / length;
          lo = std::min(lo, d);
          hi = std::max(hi, d);
        }
        return std::pair{lo, hi};
      };
      const auto [a_lo, a_hi] = project(a);
      const auto [b_lo, b_hi] = project(b);
      if (a_hi <= b_lo + kTolerance || b_hi <= a_lo + kTolerance) return false;
    }
  }
  return true;
}

struct TextStyle {
  std::string_view anchor = "start";  // SVG text-anchor: "start", "middle" or "end"
  double size = kFontSize;
  bool bold = false;
  std::string_view fill = {};  // empty = black
  double rotate = 0.0;         // degrees about the anchor point, clockwise on screen
};

// Accumulates SVG elements; every attribute value and text passes through xml_escape.
class SvgDocument {
 public:
  explicit SvgDocument(double width) : width_(width) {}

  [[nodiscard]] double width() const { return width_; }

  void rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view tooltip = {}) {
    std::string attributes;
    append(attributes, "x=\"", number(x), "\" y=\"", number(y), "\" width=\"",
           number(std::max(0.0, w)), "\" height=\"", number(std::max(0.0, h)), "\" fill=\"",
           xml_escape(fill), "\"");
    element("rect", attributes, tooltip);
  }

  void line(double x1, double y1, double x2, double y2, std::string_view stroke,
            double stroke_width = 1.0, bool dashed = false) {
    std::string attributes;
    append(attributes, "x1=\"", number(x1), "\" y1=\"", number(y1), "\" x2=\"", number(x2),
           "\" y2=\"", number(y2), "\" stroke=\"", xml_escape(stroke), "\" stroke-width=\"",
           number(stroke_width), "\"");
    if (dashed) attributes += " stroke-dasharray=\"6 4\"";
    element("line", attributes, {});
  }

  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                bool dashed, std::string_view tooltip) {
    if (points.empty()) return;
    std::string attributes;
    append(attributes, "fill=\"none\" stroke=\"", xml_escape(stroke), "\" stroke-width=\"2\"");
    if (dashed) attributes += " stroke-dasharray=\"6 4\"";
    attributes += " points=\"";
    for (const auto& [x, y] : points) append(attributes, number(x), ",", number(y), " ");
    attributes += "\"";
    element("polyline", attributes, tooltip);
  }

  void circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip) {
    std::string attributes;
    append(attributes, "cx=\"", number(cx), "\" cy=\"", number(cy), "\" r=\"", number(r),
           "\" fill=\"", xml_escape(fill), "\"");
    element("circle", attributes, tooltip);
  }

  void text(double x, double y, std::string_view content, const TextStyle& style = {}) {
    append(body_, "<text x=\"", number(x), "\" y=\"", number(y), "\" font-size=\"",
           number(style.size), "\" text-anchor=\"", style.anchor, "\"");
    if (style.bold) body_ += " font-weight=\"bold\"";
    if (!style.fill.empty()) append(body_, " fill=\"", xml_escape(style.fill), "\"");
    if (style.rotate != 0.0) {
      append(body_, " transform=\"rotate(", number(style.rotate), " ", number(x), " ", number(y),
             ")\"");
    }
    append(body_, ">", xml_escape(content), "</text>\n");
    boxes_.push_back(text_box(content, x, y, style.anchor, style.size, style.bold, style.rotate));
  }

  [[nodiscard]] SvgFigure finish(std::string_view title, double height) const {
    SvgFigure figure{{}, width_, height, boxes_};
    std::string& out = figure.svg;
    out.reserve(body_.size() + 400);
    append(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", number(width_), "\" height=\"",
           number(height), "\" viewBox=\"0 0 ", number(width_), " ", number(height),
           "\" font-family=\"sans-serif\">\n", "<title>", xml_escape(title), "</title>\n",
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", body_, "</svg>\n");
    return figure;
  }

 private:
  void element(std::string_view name, std::string_view attributes, std::string_view tooltip) {
    append(body_, "<", name, " ", attributes);
    if (tooltip.empty()) {
      body_ += "/>\n";
    } else {
      append(body_, "><title>", xml_escape(tooltip), "</title></", name, ">\n");
    }
  }

  double width_;
  std::string body_;
  std::vector<TextBox> boxes_;
};

// Ticks for a byte axis: the binary unit in which the maximum is at least 1, nice steps in it.
struct ByteTicks {
  std::vector<double> values_bytes;
  std::vector<std::string> labels;
};

ByteTicks byte_ticks(uint64_t max_bytes, size_t target_count) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  size_t unit_index = 0;
  double unit_bytes = 1.0;
  while (unit_index + 1 < kUnits.size() && static_cast<double>(max_bytes) >= unit_bytes * 1024.0) {
    unit_bytes *= 1024.0;
    ++unit_index;
  }
  ByteTicks ticks;
  for (const double tick : nice_ticks(static_cast<double>(max_bytes) / unit_bytes, target_count)) {
    ticks.values_bytes.push_back(tick * unit_bytes);
    std::string label = tick_label(tick);
    append(label, " ", kUnits[unit_index]);
    ticks.labels.push_back(std::move(label));
  }
  return ticks;
}

double nice_step(double span, size_t target_count) {
  const double raw = span / static_cast<double>(std::max<size_t>(target_count, 1));
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  const double nice =
      fraction <= 1.0 ? 1.0 : (fraction <= 2.0 ? 2.0 : (fraction <= 5.0 ? 5.0 : 10.0));
  return nice * magnitude;
}

// Nice ticks covering [lo, hi] (lo < hi, both finite): the first <= lo, the last >= hi.
std::vector<double> range_ticks(double lo, double hi, size_t target_count) {
  const double step = nice_step(hi - lo, target_count);
  const double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (size_t i = 0; ticks.empty() || ticks.back() < hi - step * 1e-9; ++i) {
    const double tick = first + static_cast<double>(i) * step;
    ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
  }
  return ticks;
}

// Legend layout: items flow left to right and wrap at `width`. Returns the height used.
double draw_legend(SvgDocument* svg, double x0, double y0, double width,
                   const std::vector<std::string>& names, const std::vector<std::string>& colours,
                   const std::vector<bool>& dashed) {
  if (names.empty()) return 0.0;
  double x = x0;
  double y = y0 + 12.0;
  for (size_t i = 0; i < names.size(); ++i) {
    const double item_width = 34.0 + text_width(names[i]);
    if (x > x0 && x + item_width > x0 + width) {
      x = x0;
      y += 20.0;
    }
    if (svg != nullptr) {
      if (!dashed.empty() && dashed[i]) {
        svg->line(x, y - 4, x + 16, y - 4, colours[i], 2.0, true);
      } else {
        svg->rect(x, y - 10, 14, 12, colours[i]);
      }
      svg->text(x + 20, y, names[i]);
    }
    x += item_width;
  }
  return y - y0 + 8.0;
}

// Greedy wrap at spaces so that each line fits max_width; a word wider than a line stays whole
// on its own line (the caller sees that from text_width).
std::vector<std::string> wrap_words(std::string_view text, double max_width, double font_size,
                                    bool bold) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!word.empty()) {
      std::string candidate = line.empty() ? std::string(word) : line + " " + std::string(word);
      if (!line.empty() && text_width(candidate, font_size, bold) > max_width) {
        lines.push_back(line);
        line = std::string(word);
      } else {
        line = std::move(candidate);
      }
    }
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

// The title, bold and centred, wrapped to the canvas. Returns the y of its lowest glyphs.
double draw_title(SvgDocument& svg, std::string_view title) {
  constexpr double kFirstBaseline = 24.0;
  constexpr double kLineHeight = 19.0;
  const std::vector<std::string> lines =
      wrap_words(title, svg.width() - 16.0, kTitleFontSize, true);
  double baseline = kFirstBaseline;
  for (size_t i = 0; i < lines.size(); ++i) {
    baseline = kFirstBaseline + kLineHeight * static_cast<double>(i);
    svg.text(svg.width() / 2, baseline, lines[i],
             {.anchor = "middle", .size = kTitleFontSize, .bold = true});
  }
  return baseline + kDescent * kTitleFontSize;
}

std::vector<std::string> resolve_colours(const std::vector<std::string>& given,
                                         const std::vector<std::string>& names, bool by_category,
                                         const char* what) {
  if (!given.empty()) {
    if (given.size() != names.size()) {
      throw std::invalid_argument(std::string(what) + ": " + std::to_string(given.size()) +
                                  " colours for " + std::to_string(names.size()) + " entries");
    }
    return given;
  }
  std::vector<std::string> colours;
  for (size_t i = 0; i < names.size(); ++i) {
    colours.push_back(by_category ? category_colour(names[i]) : series_colour(i));
  }
  return colours;
}

std::string bytes_tooltip(std::string_view name, std::string_view what, uint64_t bytes) {
  std::string tooltip(name);
  if (!what.empty()) append(tooltip, " / ", what);
  append(tooltip, ": ", format_bytes(bytes), " (",
         format_count(static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX))), " bytes)");
  return tooltip;
}

}  // namespace

std::vector<double> nice_ticks(double max_value, size_t target_count) {
  if (!(max_value > 0.0) || !std::isfinite(max_value)) return {0.0, 1.0};
  return range_ticks(0.0, max_value, target_count);
}

SvgFigure plot_stacked_bar(const StackedBarChart& chart) {
  const std::vector<std::string> colours =
      resolve_colours(chart.colours, chart.categories, true, "StackedBarChart");
  uint64_t max_total_bytes = 0;
  for (const StackedBar& bar : chart.bars) {
    if (bar.values_bytes.size() != chart.categories.size()) {
      throw std::invalid_argument("StackedBarChart bar '" + bar.label + "' has " +
                                  std::to_string(bar.values_bytes.size()) + " values for " +
                                  std::to_string(chart.categories.size()) + " categories");
    }
    uint64_t total_bytes = 0;
    for (const uint64_t value : bar.values_bytes) total_bytes += value;
    max_total_bytes = std::max(max_total_bytes, total_bytes);
  }
  // The axis follows the data. A budget far beyond it (a 16 GiB GPU under a 200 MiB step) would
  // shrink every bar to a sliver, so it is then written at the edge instead of drawn to scale.
  const bool budget_on_scale =
      chart.budget_bytes > 0 &&
      (max_total_bytes == 0 || static_cast<double>(chart.budget_bytes) <=
                                   kBudgetOnScaleFactor * static_cast<double>(max_total_bytes));
  const uint64_t axis_bytes =
      budget_on_scale ? std::max(max_total_bytes, chart.budget_bytes) : max_total_bytes;

  double label_width = 60.0;
  for (const StackedBar& bar : chart.bars)
    label_width = std::max(label_width, text_width(bar.label) + 16.0);
  constexpr double kRightMargin = 100.0;
  constexpr double kMinPlotWidth = 420.0;
  constexpr double kBarHeight = 26.0;
  constexpr double kBarGap = 12.0;
  const double width = std::max(860.0, label_width + kMinPlotWidth + kRightMargin);
  const double plot_left = label_width;
  const double plot_width = width - plot_left - kRightMargin;

  SvgDocument svg(width);
  // Room above the plot for the budget's label.
  const double plot_top = draw_title(svg, chart.title) + 26.0;
  const double plot_height =
      std::max(kBarHeight, static_cast<double>(chart.bars.size()) * (kBarHeight + kBarGap));

  const ByteTicks ticks = byte_ticks(axis_bytes, 6);
  const double axis_max = ticks.values_bytes.back();
  auto x_of = [&](double bytes) { return plot_left + plot_width * bytes / axis_max; };
  for (size_t i = 0; i < ticks.values_bytes.size(); ++i) {
    const double x = x_of(ticks.values_bytes[i]);
    svg.line(x, plot_top, x, plot_top + plot_height, "#dddddd");
    svg.text(x, plot_top + plot_height + 16, ticks.labels[i], {.anchor = "middle", .size = 11.0});
  }
  svg.line(plot_left, plot_top + plot_height, plot_left + plot_width, plot_top + plot_height,
           "#333333");

  for (size_t b = 0; b < chart.bars.size(); ++b) {
    const StackedBar& bar = chart.bars[b];
    const double y = plot_top + kBarGap / 2 + static_cast<double>(b) * (kBarHeight + kBarGap);
    const double baseline = y + kBarHeight / 2 + 4;
    svg.text(plot_left - 8, baseline, bar.label, {.anchor = "end"});
    double cumulative_bytes = 0;
    for (size_t c = 0; c < chart.categories.size(); ++c) {
      const uint64_t value = bar.values_bytes[c];
      if (value == 0) continue;
      const double x0 = x_of(cumulative_bytes);
      cumulative_bytes += static_cast<double>(value);
      const double x1 = x_of(cumulative_bytes);
      svg.rect(x0, y, x1 - x0, kBarHeight, colours[c],
               bytes_tooltip(bar.label, chart.categories[c], value));
      const std::string label = format_bytes(value);
      if (x1 - x0 > text_width(label, 11.0) + 8) {
        svg.text((x0 + x1) / 2, baseline, label,
                 {.anchor = "middle", .size = 11.0, .fill = "white"});
      }
    }
    svg.text(x_of(cumulative_bytes) + 6, baseline,
             format_bytes(static_cast<uint64_t>(cumulative_bytes)), {.size = 11.0});
  }
  if (chart.budget_bytes > 0) {
    std::string label = chart.budget_label.empty() ? std::string("budget") : chart.budget_label;
    append(label, " ", format_bytes(chart.budget_bytes));
    const double label_y = plot_top - 8;
    const TextStyle style{.size = 11.0, .fill = kBudgetColour};
    if (budget_on_scale) {
      const double x = x_of(static_cast<double>(chart.budget_bytes));
      svg.line(x, plot_top - 4, x, plot_top + plot_height, kBudgetColour, 1.5, true);
      // Centred on its line unless that would leave the canvas.
      const double half = text_width(label, style.size) / 2;
      TextStyle placed = style;
      placed.anchor = x + half > width - 4 ? "end" : (x - half < 4 ? "start" : "middle");
      svg.text(x, label_y, label, placed);
    } else {
      label += " \u2192";  // off the scale, to the right
      TextStyle placed = style;
      placed.anchor = "end";
      svg.text(width - 8, label_y, label, placed);
    }
  }
  // The legend names the categories that some bar has.
  std::vector<std::string> shown_categories;
  std::vector<std::string> shown_colours;
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const bool drawn = std::any_of(chart.bars.begin(), chart.bars.end(),
                                   [&](const StackedBar& bar) { return bar.values_bytes[c] > 0; });
    if (drawn || chart.bars.empty()) {
      shown_categories.push_back(chart.categories[c]);
      shown_colours.push_back(colours[c]);
    }
  }
  const double legend_top = plot_top + plot_height + 28;
  const double legend_height =
      draw_legend(&svg, plot_left, legend_top, plot_width, shown_categories, shown_colours, {});
  return svg.finish(chart.title, legend_top + legend_height + 8);
}

SvgFigure plot_grouped_bar(const GroupedBarChart& chart) {
  const std::vector<std::string> colours =
      resolve_colours(chart.colours, chart.series, false, "GroupedBarChart");
  if (chart.values_bytes.size() != chart.series.size()) {
    throw std::invalid_argument("GroupedBarChart has " + std::to_string(chart.values_bytes.size()) +
                                " value rows for " + std::to_string(chart.series.size()) +
                                " series");
  }
  if (!chart.missing.empty() && chart.missing.size() != chart.series.size()) {
    throw std::invalid_argument("GroupedBarChart has " + std::to_string(chart.missing.size()) +
                                " missing-value rows for " + std::to_string(chart.series.size()) +
                                " series");
  }
  uint64_t max_bytes = 0;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    if (chart.values_bytes[s].size() != chart.groups.size() ||
        (!chart.missing.empty() && chart.missing[s].size() != chart.groups.size())) {
      throw std::invalid_argument("GroupedBarChart series '" + chart.series[s] + "' has " +
                                  std::to_string(chart.values_bytes[s].size()) + " values for " +
                                  std::to_string(chart.groups.size()) + " groups");
    }
    for (const uint64_t value : chart.values_bytes[s]) max_bytes = std::max(max_bytes, value);
  }
  auto is_missing = [&](size_t s, size_t g) {
    return !chart.missing.empty() && chart.missing[s][g];
  };

  constexpr double kMinLeft = 90.0;
  constexpr double kPlotHeight = 300.0;
  constexpr double kValueSize = 10.0;
  constexpr double kGroupLabelLineHeight = 15.0;
  const double bar_width = 26.0;
  const double group_width = std::max(
      static_cast<double>(std::max<size_t>(chart.series.size(), 1)) * bar_width + 24.0, 90.0);
  const double plot_width = std::max(400.0, group_width * static_cast<double>(chart.groups.size()));
  const double slot_width =
      plot_width / static_cast<double>(std::max<size_t>(chart.groups.size(), 1));

  // Group labels: wrapped at spaces to their slot; if a single word is still wider than the slot,
  // every label is turned instead, so that neighbours cannot run into each other.
  std::vector<std::vector<std::string>> group_lines;
  bool turn_group_labels = false;
  for (const std::string& group : chart.groups) {
    group_lines.push_back(wrap_words(group, slot_width - 6, kFontSize, false));
    for (const std::string& line : group_lines.back())
      turn_group_labels = turn_group_labels || text_width(line) > slot_width - 6;
  }
  // A turned label hangs down to the left of its group: the first ones may need a wider margin.
  double left = kMinLeft;
  double group_labels_height = 0;
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    group_labels_height = std::max(
        group_labels_height,
        turn_group_labels ? text_width(chart.groups[g]) * std::sin(kGroupLabelTurn) + kFontSize
                          : static_cast<double>(group_lines[g].size()) * kGroupLabelLineHeight);
    if (turn_group_labels) {
      const double reach = text_width(chart.groups[g]) * std::cos(kGroupLabelTurn) +
                           kFontSize * std::sin(kGroupLabelTurn);
      left = std::max(left, reach - slot_width * (static_cast<double>(g) + 0.5) + 4.0);
    }
  }
  const double width = left + plot_width + 30.0;

  SvgDocument svg(width);
  const double title_bottom = draw_title(svg, chart.title);
  const ByteTicks ticks = byte_ticks(max_bytes, 5);
  const double axis_max = ticks.values_bytes.back();

  // Value labels stand upright above their bar; a bar too close to the top of the plot gets its
  // label inside instead, and only a short bar near the top pushes the plot down.
  auto value_label = [&](size_t s, size_t g) {
    return is_missing(s, g) ? std::string("n/a") : format_bytes(chart.values_bytes[s][g]);
  };
  auto bar_height = [&](size_t s, size_t g) {
    return is_missing(s, g)
               ? 0.0
               : kPlotHeight * static_cast<double>(chart.values_bytes[s][g]) / axis_max;
  };
  const double min_plot_top = title_bottom + 14.0;
  double plot_top = min_plot_top;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    for (size_t g = 0; g < chart.groups.size(); ++g) {
      const double length = text_width(value_label(s, g), kValueSize) + 4.0;
      const double height = bar_height(s, g);
      const double room_above = kPlotHeight - height + (min_plot_top - title_bottom) - 6.0;
      if (length <= room_above || height >= length + 6.0) continue;
      plot_top = std::max(plot_top, min_plot_top + length - room_above);
    }
  }
  const double plot_bottom = plot_top + kPlotHeight;
  auto y_of = [&](double bytes) { return plot_bottom - kPlotHeight * bytes / axis_max; };
  for (size_t i = 0; i < ticks.values_bytes.size(); ++i) {
    const double y = y_of(ticks.values_bytes[i]);
    svg.line(left, y, left + plot_width, y, "#dddddd");
    svg.text(left - 6, y + 4, ticks.labels[i], {.anchor = "end", .size = 11.0});
  }
  svg.line(left, plot_bottom, left + plot_width, plot_bottom, "#333333");
  svg.line(left, plot_top, left, plot_bottom, "#333333");

  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const double group_center = left + slot_width * (static_cast<double>(g) + 0.5);
    const double bars_width = bar_width * static_cast<double>(chart.series.size());
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const double x = group_center - bars_width / 2 + bar_width * static_cast<double>(s);
      const double height = bar_height(s, g);
      const double y = plot_bottom - height;
      if (!is_missing(s, g)) {
        const uint64_t value = chart.values_bytes[s][g];
        svg.rect(x + 1, y, bar_width - 2, height, colours[s],
                 bytes_tooltip(chart.groups[g], chart.series[s], value));
      }
      // Upright text: its glyphs lie left of the baseline, so the baseline sits right of centre.
      const std::string label = value_label(s, g);
      const double baseline_x = x + bar_width / 2 + kValueSize * (kAscent - kDescent) / 2;
      const double room_above = y - title_bottom - 6.0;
      if (text_width(label, kValueSize) + 4.0 <= room_above ||
          height < text_width(label, kValueSize) + 10.0) {
        svg.text(baseline_x, y - 4, label, {.size = kValueSize, .rotate = -90.0});
      } else {
        svg.text(baseline_x, y + 5, label,
                 {.anchor = "end", .size = kValueSize, .fill = "white", .rotate = -90.0});
      }
    }
    if (turn_group_labels) {
      svg.text(group_center + 4, plot_bottom + 14, chart.groups[g],
               {.anchor = "end", .rotate = -kGroupLabelTurn * 180.0 / std::numbers::pi});
    } else {
      for (size_t l = 0; l < group_lines[g].size(); ++l) {
        svg.text(group_center, plot_bottom + 16 + kGroupLabelLineHeight * static_cast<double>(l),
                 group_lines[g][l], {.anchor = "middle"});
      }
    }
  }
  const double legend_top = plot_bottom + group_labels_height + 20;
  const double legend_height =
      draw_legend(&svg, left, legend_top, plot_width, chart.series, colours, {});
  return svg.finish(chart.title, legend_top + legend_height + 8);
}

SvgFigure plot_line(const LinePlot& plot) {
  double x_lo = INFINITY;
  double x_hi = -INFINITY;
  double y_lo = INFINITY;
  double y_hi = -INFINITY;
  for (const LineSeries& series : plot.series) {
    if (series.x.size() != series.y.size()) {
      throw std::invalid_argument("LinePlot series '" + series.name + "' has " +
                                  std::to_string(series.x.size()) + " x values but " +
                                  std::to_string(series.y.size()) + " y values");
    }
    for (size_t i = 0; i < series.x.size(); ++i) {
      const double x = series.x[i];
      const double y = series.y[i];
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log_x && x <= 0.0) ||
          (plot.log_y && y <= 0.0))
        continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  const bool has_points = std::isfinite(x_lo);
  if (!has_points) {
    x_lo = plot.log_x ? 1.0 : 0.0;
    x_hi = plot.log_x ? 10.0 : 1.0;
    y_lo = plot.log_y ? 1.0 : 0.0;
    y_hi = plot.log_y ? 10.0 : 1.0;
  }
  if (plot.y_is_bytes && !plot.log_y) y_lo = std::min(0.0, y_lo);
  // A flat series still needs a non-empty range.
  if (!(y_hi > y_lo)) {
    const double pad = y_hi == 0.0 ? 1.0 : std::abs(y_hi) * 0.1;
    y_lo -= plot.y_is_bytes && y_lo >= 0.0 ? 0.0 : pad;
    y_hi += pad;
  }

  std::vector<double> x_ticks;
  std::vector<std::string> x_labels;
  const double x_base = plot.log_x_base > 1.0 ? plot.log_x_base : 10.0;
  const auto x_axis_value = [&](double x) {
    return plot.log_x ? std::log(x) / std::log(x_base) : x;
  };
  if (plot.log_x) {
    const double first = std::floor(x_axis_value(x_lo) + 1e-9);
    const double last = std::max(first + 1.0, std::ceil(x_axis_value(x_hi) - 1e-9));
    for (double e = first; e <= last + 1e-9; e += 1.0) {
      x_ticks.push_back(e);
      x_labels.push_back(tick_label(std::pow(x_base, e)));
    }
  } else {
    if (!(x_hi > x_lo)) {
      x_lo -= 1.0;
      x_hi += 1.0;
    }
    x_ticks = range_ticks(x_lo, x_hi, 6);
    for (const double tick : x_ticks) x_labels.push_back(tick_label(tick));
  }
  std::vector<double> y_ticks;
  std::vector<std::string> y_labels;
  // A log axis is drawn in exponents: its ticks are exponents of its base, y_of takes the log.
  const double log_base = plot.y_is_bytes ? 2.0 : 10.0;
  const auto y_axis_value = [&](double y) {
    return plot.log_y ? std::log(y) / std::log(log_base) : y;
  };
  if (plot.log_y) {
    const double first = std::floor(y_axis_value(y_lo) + 1e-9);
    const double last = std::max(first + 1.0, std::ceil(y_axis_value(y_hi) - 1e-9));
    // At most about 7 ticks: steps of whole exponents.
    const double step = std::max(1.0, std::ceil((last - first) / 6.0));
    for (double e = first; e < last + step - 1e-9; e += step) {
      y_ticks.push_back(e);
      const double value = std::pow(log_base, e);
      y_labels.push_back(plot.y_is_bytes ? signed_bytes_label(value) : tick_label(value));
    }
  } else if (plot.y_is_bytes && y_lo >= 0.0) {
    // 1.8e19 is just below 2^64: larger byte counts cannot be labelled.
    const ByteTicks ticks = byte_ticks(static_cast<uint64_t>(std::min(y_hi, 1.8e19)), 5);
    y_ticks = ticks.values_bytes;
    y_labels = ticks.labels;
  } else {
    y_ticks = range_ticks(y_lo, y_hi, 5);
    for (const double tick : y_ticks) {
      y_labels.push_back(plot.y_is_bytes ? signed_bytes_label(tick) : tick_label(tick));
    }
  }

  constexpr double kWidth = 760.0;
  constexpr double kLeft = 90.0;
  constexpr double kRight = 30.0;
  constexpr double kPlotHeight = 320.0;
  const double plot_width = kWidth - kLeft - kRight;
  SvgDocument svg(kWidth);
  const double plot_top = draw_title(svg, plot.title) + 22.0;
  const double plot_bottom = plot_top + kPlotHeight;
  const double x_axis_lo = x_ticks.front();
  const double x_axis_hi = x_ticks.back();
  const double y_axis_lo = y_ticks.front();
  const double y_axis_hi = y_ticks.back();
  auto x_of = [&](double x) {
    const double v = x_axis_value(x);
    return kLeft + plot_width * (v - x_axis_lo) / (x_axis_hi - x_axis_lo);
  };
  auto x_of_tick = [&](double tick) {
    return kLeft + plot_width * (tick - x_axis_lo) / (x_axis_hi - x_axis_lo);
  };
  auto y_of = [&](double y) {
    return plot_bottom - kPlotHeight * (y_axis_value(y) - y_axis_lo) / (y_axis_hi - y_axis_lo);
  };
  auto y_of_tick = [&](double tick) {
    return plot_bottom - kPlotHeight * (tick - y_axis_lo) / (y_axis_hi - y_axis_lo);
  };

  for (size_t i = 0; i < y_ticks.size(); ++i) {
    const double y = y_of_tick(y_ticks[i]);
    svg.line(kLeft, y, kLeft + plot_width, y, "#dddddd");
    svg.text(kLeft - 6, y + 4, y_labels[i], {.anchor = "end", .size = 11.0});
  }
  for (size_t i = 0; i < x_ticks.size(); ++i) {
    const double x = x_of_tick(x_ticks[i]);
    svg.line(x, plot_top, x, plot_bottom, "#eeeeee");
    svg.text(x, plot_bottom + 16, x_labels[i], {.anchor = "middle", .size = 11.0});
  }
  svg.line(kLeft, plot_bottom, kLeft + plot_width, plot_bottom, "#333333");
  svg.line(kLeft, plot_top, kLeft, plot_bottom, "#333333");
  svg.text(kLeft + plot_width / 2, plot_bottom + 36, plot.x_label, {.anchor = "middle"});
  svg.text(18, plot_top + kPlotHeight / 2, plot.y_label, {.anchor = "middle", .rotate = -90.0});

  std::vector<std::string> names;
  std::vector<std::string> colours;
  std::vector<bool> dashed;
  for (size_t s = 0; s < plot.series.size(); ++s) {
    const LineSeries& series = plot.series[s];
    const std::string colour = series.colour.empty() ? series_colour(s) : series.colour;
    names.push_back(series.name);
    colours.push_back(colour);
    dashed.push_back(series.dashed);
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      svg.polyline(run, colour, series.dashed, series.name);
      run.clear();
    };
    for (size_t i = 0; i < series.x.size(); ++i) {
      const double x = series.x[i];
      const double y = series.y[i];
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log_x && x <= 0.0) ||
          (plot.log_y && y <= 0.0)) {
        flush();
        continue;
      }
      run.emplace_back(x_of(x), y_of(y));
      if (series.x.size() <= 200) {
        std::string tooltip = series.name;
        append(tooltip, ": (", tick_label(x), ", ",
               plot.y_is_bytes ? signed_bytes_label(y) : tick_label(y), ")");
        svg.circle(x_of(x), y_of(y), 2.5, colour, tooltip);
      }
    }
    flush();
  }
  const double legend_top = plot_bottom + 46;
  const double legend_height =
      draw_legend(&svg, kLeft, legend_top, plot_width, names, colours, dashed);
  return svg.finish(plot.title, legend_top + legend_height + 8);
}

std::string render_stacked_bar_svg(const StackedBarChart& chart) {
  return plot_stacked_bar(chart).svg;
}

std::string render_grouped_bar_svg(const GroupedBarChart& chart) {
  return plot_grouped_bar(chart).svg;
}

std::string render_line_plot_svg(const LinePlot& plot) {
  return plot_line(plot).svg;
}

TextBox text_box(std::string_view text, double x, double y, std::string_view anchor,
                 double font_size, bool bold, double rotate_degrees) {
  const double width = text_width(text, font_size, bold);
  const double left = anchor == "middle" ? x - width / 2 : (anchor == "end" ? x - width : x);
  const double top = y - kAscent * font_size;
  const double bottom = y + kDescent * font_size;
  const double radians = rotate_degrees * std::numbers::pi / 180.0;
  const double c = std::cos(radians);
  const double s = std::sin(radians);
  // SVG's rotate(a x y): clockwise on screen because y grows downwards.
  auto turned = [&](double px, double py) {
    return CanvasPoint{x + (px - x) * c - (py - y) * s, y + (px - x) * s + (py - y) * c};
  };
  return {std::string(text),
          {turned(left, top), turned(left + width, top), turned(left + width, bottom),
           turned(left, bottom)}};
}

std::vector<std::string> text_layout_problems(const SvgFigure& figure) {
  std::vector<std::string> problems;
  const std::vector<TextBox>& boxes = figure.text_boxes;
  for (const TextBox& box : boxes) {
    if (box.text.empty()) continue;
    for (const CanvasPoint& p : box.corners) {
      if (p.x < -kTolerance || p.y < -kTolerance || p.x > figure.width + kTolerance ||
          p.y > figure.height + kTolerance) {
        problems.push_back("\"" + box.text + "\" " + describe(box) + " leaves the canvas (" +
                           number(figure.width) + " x " + number(figure.height) + ")");
        break;
      }
    }
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      if (boxes[i].text.empty() || boxes[j].text.empty()) continue;
      if (boxes_overlap(boxes[i], boxes[j])) {
        problems.push_back("\"" + boxes[i].text + "\" " + describe(boxes[i]) + " overlaps \"" +
                           boxes[j].text + "\" " + describe(boxes[j]));
      }
    }
  }
  return problems;
}

void write_text_file(const std::string& path, std::string_view text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot open '" + path + "' for writing");
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.close();
  if (!file) throw std::runtime_error("cannot write '" + path + "'");
}

}  // namespace vramlab::report
