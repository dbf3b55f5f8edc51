/// \file
/// \brief Self-contained SVG figures for lessons and docs: a horizontal stacked bar chart (memory
/// per category), a grouped bar chart (measured vs estimated per category) and a line plot.
///
/// Every function returns a complete standalone SVG document (no scripts, no external
/// references); all text is XML-escaped. Byte values are labelled with binary prefixes.
/// Hovering a bar or point shows its exact value (an SVG \<title\>).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/report/xml_escape.h"

namespace vramlab::report {

/// One horizontal bar of a StackedBarChart, e.g. one configuration or one rank.
struct StackedBar {
  std::string label;                   ///< drawn left of the bar.
  std::vector<uint64_t> values_bytes;  ///< one value per category of the chart, in bytes.
};

/// Horizontal bars, each split into coloured category segments, with a legend of the categories
/// that some bar has.
struct StackedBarChart {
  std::string title;                    ///< drawn on top.
  std::vector<std::string> categories;  ///< legend entries, in stacking order (left to right).
  /// One CSS colour per category; empty = category_colour() of each category name.
  std::vector<std::string> colours;
  std::vector<StackedBar> bars;  ///< top to bottom.
  /// If non-zero, e.g. the GPU's capacity: a dashed vertical line when it is within 1.5x the
  /// longest bar; beyond, the axis stays scaled to the bars and the budget is written at the
  /// plot's right edge with an arrow ("A100 40 GB 40.00 GiB →").
  uint64_t budget_bytes = 0;
  std::string budget_label;  ///< text before the budget's size, e.g. "A100 40 GB".
};

/// Vertical bars grouped per category: one bar per series in each group.
struct GroupedBarChart {
  std::string title;                 ///< drawn on top.
  std::vector<std::string> groups;   ///< x-axis groups, e.g. categories.
  std::vector<std::string> series;   ///< e.g. {"measured", "estimated"}.
  std::vector<std::string> colours;  ///< one CSS colour per series; empty = series_colour().
  std::vector<std::vector<uint64_t>> values_bytes;  ///< (series, groups) in bytes.
  /// (series, groups): true where a series has no value for a group (no bar; "n/a" is written
  /// instead of a size). Empty = every value is present.
  std::vector<std::vector<bool>> missing;
};

/// One line of a LinePlot.
struct LineSeries {
  std::string name;       ///< legend entry.
  std::vector<double> x;  ///< x values; non-finite points are skipped (the line breaks there).
  std::vector<double> y;  ///< y values, same length as x.
  std::string colour;     ///< CSS colour; empty = series_colour(index).
  bool dashed = false;    ///< dashed line (e.g. a model or estimate).
};

/// An x/y line plot with axes, ticks and a legend.
struct LinePlot {
  std::string title;               ///< drawn on top.
  std::string x_label;             ///< x-axis title.
  std::string y_label;             ///< y-axis title.
  std::vector<LineSeries> series;  ///< the lines.
  bool y_is_bytes = false;         ///< label y ticks with binary byte prefixes.
  bool log_x = false;              ///< logarithmic x axis (all finite x must be > 0 to be drawn).
  /// The log x axis's ticks are powers of this base: 10 (decades) or e.g. 2 (512, 1024, …), for
  /// data spanning a few doublings.
  double log_x_base = 10.0;
  /// Logarithmic y axis (all finite y must be > 0 to be drawn): ticks at powers of two with
  /// y_is_bytes (1 KiB, 1 MiB, …), else at powers of ten.
  bool log_y = false;
};

/// Renders a StackedBarChart as an SVG document.
/// \throws std::invalid_argument if colours or a bar's values do not have one entry per category.
std::string render_stacked_bar_svg(const StackedBarChart& chart);

/// Renders a GroupedBarChart as an SVG document. Long group labels are wrapped at spaces or, if a
/// word is wider than its group, turned; value labels stand upright above their bars (inside a bar
/// that reaches too close to the title).
/// \throws std::invalid_argument if values_bytes or a non-empty missing is not (series, groups),
/// or colours has the wrong length.
std::string render_grouped_bar_svg(const GroupedBarChart& chart);

/// Renders a LinePlot as an SVG document.
/// \throws std::invalid_argument if a series has x and y of different lengths.
std::string render_line_plot_svg(const LinePlot& plot);

/// Writes \p text to \p path (replacing it), e.g. an SVG or HTML figure.
/// \throws std::runtime_error naming the path if it cannot be written.
void write_text_file(const std::string& path, std::string_view text);

/// A point on an SVG canvas (pixels, y grows downwards).
struct CanvasPoint {
  double x = 0;  ///< from the left edge.
  double y = 0;  ///< from the top edge.
};

/// The box one placed text covers on the canvas, as the layout estimates it: font size × number
/// of characters × an average glyph width wide, from the ascent above the baseline to the descent
/// below it, turned with the text when the text is rotated.
struct TextBox {
  std::string text;                    ///< the text as drawn (unescaped).
  std::array<CanvasPoint, 4> corners;  ///< in order around the box (a rotated rectangle).
};

/// An SVG figure together with the boxes of every text it placed, so that a test can check the
/// layout (see text_layout_problems()).
struct SvgFigure {
  std::string svg;                  ///< the standalone SVG document.
  double width = 0;                 ///< canvas width in pixels.
  double height = 0;                ///< canvas height in pixels.
  std::vector<TextBox> text_boxes;  ///< every \<text\> of the document, in drawing order.
};

/// Lays out a StackedBarChart. \param chart the data. \return the figure and its text boxes.
/// \throws std::invalid_argument as render_stacked_bar_svg().
SvgFigure plot_stacked_bar(const StackedBarChart& chart);

/// Lays out a GroupedBarChart. \param chart the data. \return the figure and its text boxes.
/// \throws std::invalid_argument as render_grouped_bar_svg().
SvgFigure plot_grouped_bar(const GroupedBarChart& chart);

/// Lays out a LinePlot. \param plot the data. \return the figure and its text boxes.
/// \throws std::invalid_argument as render_line_plot_svg().
SvgFigure plot_line(const LinePlot& plot);

/// The layout faults of a figure that a reader would see: two texts whose boxes overlap, and a
/// text whose box leaves the canvas.
/// \param figure a figure from one of the plot_* functions.
/// \return one message per fault naming the texts and their boxes; empty when the layout is clean.
std::vector<std::string> text_layout_problems(const SvgFigure& figure);

/// The box a text covers, estimated as the plot layout does (see TextBox).
/// \param text the text. \param x,y its anchor point (on the baseline).
/// \param anchor "start", "middle" or "end" (SVG text-anchor). \param font_size in pixels.
/// \param bold a bold font (wider glyphs). \param rotate_degrees rotation about (x, y), clockwise
/// on screen as SVG's rotate().
/// \return the box.
TextBox text_box(std::string_view text, double x, double y, std::string_view anchor,
                 double font_size, bool bold, double rotate_degrees);

/// Evenly spaced "nice" tick values (steps of 1, 2 or 5 times a power of ten) covering [0,
/// max_value]. \param max_value the largest value to cover (values <= 0 give the ticks {0, 1}).
/// \param target_count roughly how many intervals are wanted (at least 1).
/// \return ascending tick values starting at 0, the last one >= max_value.
std::vector<double> nice_ticks(double max_value, size_t target_count);

}  // namespace vramlab::report
