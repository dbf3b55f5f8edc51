// SVG figures: a small element writer, "nice" axis ticks, and the three chart kinds.
#include "common/report/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "common/report/category_colours.h"
#include "common/report/table.h"
#include "common/report/terminal.h"

namespace vramlab::report {
namespace {

constexpr double kFontSize = 12.0;
constexpr double kTitleFontSize = 15.0;
constexpr double kCharWidth = 7.0;  // average glyph width at kFontSize, for layout only

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

double text_width(std::string_view text) {
  return kCharWidth * static_cast<double>(display_width(text));
}

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

  // anchor: "start", "middle" or "end"; extra: further raw attributes (e.g. a transform).
  void text(double x, double y, std::string_view content, std::string_view anchor = "start",
            double size = kFontSize, std::string_view extra = {}) {
    append(body_, "<text x=\"", number(x), "\" y=\"", number(y), "\" font-size=\"", number(size),
           "\" text-anchor=\"", anchor, "\"");
    if (!extra.empty()) append(body_, " ", extra);
    append(body_, ">", xml_escape(content), "</text>\n");
  }

  [[nodiscard]] std::string finish(std::string_view title, double height) const {
    std::string out;
    out.reserve(body_.size() + 400);
    append(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", number(width_), "\" height=\"",
           number(height), "\" viewBox=\"0 0 ", number(width_), " ", number(height),
           "\" font-family=\"sans-serif\">\n", "<title>", xml_escape(title), "</title>\n",
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", body_, "</svg>\n");
    return out;
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

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "\xEF\xBF\xBD";  // U+FFFD: XML 1.0 forbids other control characters
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::vector<double> nice_ticks(double max_value, size_t target_count) {
  if (!(max_value > 0.0) || !std::isfinite(max_value)) return {0.0, 1.0};
  return range_ticks(0.0, max_value, target_count);
}

std::string render_stacked_bar_svg(const StackedBarChart& chart) {
  const std::vector<std::string> colours =
      resolve_colours(chart.colours, chart.categories, true, "StackedBarChart");
  uint64_t max_total_bytes = chart.budget_bytes;
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

  double label_width = 60.0;
  for (const StackedBar& bar : chart.bars)
    label_width = std::max(label_width, text_width(bar.label) + 16.0);
  label_width = std::min(label_width, 260.0);
  constexpr double kWidth = 860.0;
  constexpr double kRightMargin = 100.0;
  constexpr double kBarHeight = 26.0;
  constexpr double kBarGap = 12.0;
  const double plot_left = label_width;
  const double plot_width = kWidth - plot_left - kRightMargin;

  SvgDocument svg(kWidth);
  svg.text(kWidth / 2, 24, chart.title, "middle", kTitleFontSize, "font-weight=\"bold\"");
  const double plot_top = 44.0;
  const double plot_height =
      std::max(kBarHeight, static_cast<double>(chart.bars.size()) * (kBarHeight + kBarGap));

  const ByteTicks ticks = byte_ticks(max_total_bytes, 6);
  const double axis_max = ticks.values_bytes.back();
  auto x_of = [&](double bytes) { return plot_left + plot_width * bytes / axis_max; };
  for (size_t i = 0; i < ticks.values_bytes.size(); ++i) {
    const double x = x_of(ticks.values_bytes[i]);
    svg.line(x, plot_top, x, plot_top + plot_height, "#dddddd");
    svg.text(x, plot_top + plot_height + 16, ticks.labels[i], "middle", 11.0);
  }
  svg.line(plot_left, plot_top + plot_height, plot_left + plot_width, plot_top + plot_height,
           "#333333");

  for (size_t b = 0; b < chart.bars.size(); ++b) {
    const StackedBar& bar = chart.bars[b];
    const double y = plot_top + kBarGap / 2 + static_cast<double>(b) * (kBarHeight + kBarGap);
    svg.text(plot_left - 8, y + kBarHeight / 2 + 4, bar.label, "end");
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
      if (x1 - x0 > text_width(label) + 8) {
        svg.text((x0 + x1) / 2, y + kBarHeight / 2 + 4, label, "middle", 11.0, "fill=\"white\"");
      }
    }
    svg.text(x_of(cumulative_bytes) + 6, y + kBarHeight / 2 + 4,
             format_bytes(static_cast<uint64_t>(cumulative_bytes)), "start", 11.0);
  }
  if (chart.budget_bytes > 0) {
    const double x = x_of(static_cast<double>(chart.budget_bytes));
    svg.line(x, plot_top - 6, x, plot_top + plot_height, "#b00000", 1.5, true);
    std::string label = chart.budget_label.empty() ? std::string("budget") : chart.budget_label;
    append(label, " (", format_bytes(chart.budget_bytes), ")");
    svg.text(x, plot_top - 8, label, "middle", 11.0, "fill=\"#b00000\"");
  }
  const double legend_top = plot_top + plot_height + 28;
  const double legend_height =
      draw_legend(&svg, plot_left, legend_top, plot_width, chart.categories, colours, {});
  return svg.finish(chart.title, legend_top + legend_height + 8);
}

std::string render_grouped_bar_svg(const GroupedBarChart& chart) {
  const std::vector<std::string> colours =
      resolve_colours(chart.colours, chart.series, false, "GroupedBarChart");
  if (chart.values_bytes.size() != chart.series.size()) {
    throw std::invalid_argument("GroupedBarChart has " + std::to_string(chart.values_bytes.size()) +
                                " value rows for " + std::to_string(chart.series.size()) +
                                " series");
  }
  uint64_t max_bytes = 0;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    if (chart.values_bytes[s].size() != chart.groups.size()) {
      throw std::invalid_argument("GroupedBarChart series '" + chart.series[s] + "' has " +
                                  std::to_string(chart.values_bytes[s].size()) + " values for " +
                                  std::to_string(chart.groups.size()) + " groups");
    }
    for (const uint64_t value : chart.values_bytes[s]) max_bytes = std::max(max_bytes, value);
  }

  constexpr double kLeft = 90.0;
  constexpr double kPlotHeight = 300.0;
  constexpr double kPlotTop = 50.0;
  const double bar_width = 26.0;
  const double group_width = std::max(
      static_cast<double>(std::max<size_t>(chart.series.size(), 1)) * bar_width + 24.0, 90.0);
  const double plot_width = std::max(400.0, group_width * static_cast<double>(chart.groups.size()));
  const double width = kLeft + plot_width + 30.0;

  SvgDocument svg(width);
  svg.text(width / 2, 24, chart.title, "middle", kTitleFontSize, "font-weight=\"bold\"");
  const ByteTicks ticks = byte_ticks(max_bytes, 5);
  const double axis_max = ticks.values_bytes.back();
  const double plot_bottom = kPlotTop + kPlotHeight;
  auto y_of = [&](double bytes) { return plot_bottom - kPlotHeight * bytes / axis_max; };
  for (size_t i = 0; i < ticks.values_bytes.size(); ++i) {
    const double y = y_of(ticks.values_bytes[i]);
    svg.line(kLeft, y, kLeft + plot_width, y, "#dddddd");
    svg.text(kLeft - 6, y + 4, ticks.labels[i], "end", 11.0);
  }
  svg.line(kLeft, plot_bottom, kLeft + plot_width, plot_bottom, "#333333");
  svg.line(kLeft, kPlotTop, kLeft, plot_bottom, "#333333");

  const double slot_width =
      plot_width / static_cast<double>(std::max<size_t>(chart.groups.size(), 1));
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const double group_center = kLeft + slot_width * (static_cast<double>(g) + 0.5);
    const double bars_width = bar_width * static_cast<double>(chart.series.size());
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const uint64_t value = chart.values_bytes[s][g];
      const double x = group_center - bars_width / 2 + bar_width * static_cast<double>(s);
      const double y = y_of(static_cast<double>(value));
      svg.rect(x + 1, y, bar_width - 2, plot_bottom - y, colours[s],
               bytes_tooltip(chart.groups[g], chart.series[s], value));
      svg.text(x + bar_width / 2, y - 4, format_bytes(value), "start", 9.0,
               "transform=\"rotate(-60 " + number(x + bar_width / 2) + " " + number(y - 4) + ")\"");
    }
    svg.text(group_center, plot_bottom + 16, chart.groups[g], "middle");
  }
  const double legend_top = plot_bottom + 28;
  const double legend_height =
      draw_legend(&svg, kLeft, legend_top, plot_width, chart.series, colours, {});
  return svg.finish(chart.title, legend_top + legend_height + 8);
}

std::string render_line_plot_svg(const LinePlot& plot) {
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
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log_x && x <= 0.0)) continue;
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
    y_lo = 0.0;
    y_hi = 1.0;
  }
  if (plot.y_is_bytes) y_lo = std::min(0.0, y_lo);
  // A flat series still needs a non-empty range.
  if (!(y_hi > y_lo)) {
    const double pad = y_hi == 0.0 ? 1.0 : std::abs(y_hi) * 0.1;
    y_lo -= plot.y_is_bytes && y_lo >= 0.0 ? 0.0 : pad;
    y_hi += pad;
  }

  std::vector<double> x_ticks;
  std::vector<std::string> x_labels;
  if (plot.log_x) {
    const double first = std::floor(std::log10(x_lo));
    const double last = std::max(first + 1.0, std::ceil(std::log10(x_hi)));
    for (double e = first; e <= last + 1e-9; e += 1.0) {
      x_ticks.push_back(e);
      x_labels.push_back(tick_label(std::pow(10.0, e)));
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
  if (plot.y_is_bytes && y_lo >= 0.0) {
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
  constexpr double kPlotTop = 50.0;
  constexpr double kPlotHeight = 320.0;
  const double plot_width = kWidth - kLeft - kRight;
  const double plot_bottom = kPlotTop + kPlotHeight;
  const double x_axis_lo = x_ticks.front();
  const double x_axis_hi = x_ticks.back();
  const double y_axis_lo = y_ticks.front();
  const double y_axis_hi = y_ticks.back();
  auto x_of = [&](double x) {
    const double v = plot.log_x ? std::log10(x) : x;
    return kLeft + plot_width * (v - x_axis_lo) / (x_axis_hi - x_axis_lo);
  };
  auto x_of_tick = [&](double tick) {
    return kLeft + plot_width * (tick - x_axis_lo) / (x_axis_hi - x_axis_lo);
  };
  auto y_of = [&](double y) {
    return plot_bottom - kPlotHeight * (y - y_axis_lo) / (y_axis_hi - y_axis_lo);
  };

  SvgDocument svg(kWidth);
  svg.text(kWidth / 2, 24, plot.title, "middle", kTitleFontSize, "font-weight=\"bold\"");
  for (size_t i = 0; i < y_ticks.size(); ++i) {
    const double y = y_of(y_ticks[i]);
    svg.line(kLeft, y, kLeft + plot_width, y, "#dddddd");
    svg.text(kLeft - 6, y + 4, y_labels[i], "end", 11.0);
  }
  for (size_t i = 0; i < x_ticks.size(); ++i) {
    const double x = x_of_tick(x_ticks[i]);
    svg.line(x, kPlotTop, x, plot_bottom, "#eeeeee");
    svg.text(x, plot_bottom + 16, x_labels[i], "middle", 11.0);
  }
  svg.line(kLeft, plot_bottom, kLeft + plot_width, plot_bottom, "#333333");
  svg.line(kLeft, kPlotTop, kLeft, plot_bottom, "#333333");
  svg.text(kLeft + plot_width / 2, plot_bottom + 36, plot.x_label, "middle");
  svg.text(18, kPlotTop + kPlotHeight / 2, plot.y_label, "middle", kFontSize,
           "transform=\"rotate(-90 18 " + number(kPlotTop + kPlotHeight / 2) + ")\"");

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
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log_x && x <= 0.0)) {
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

void write_text_file(const std::string& path, std::string_view text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot open '" + path + "' for writing");
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.close();
  if (!file) throw std::runtime_error("cannot write '" + path + "'");
}

}  // namespace vramlab::report
