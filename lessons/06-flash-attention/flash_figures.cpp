// Lesson 06's figures: attention memory against T (log-log), and the causal tiling of one
// (batch, head) (see flash_report.h). The tiling grid is drawn here, not in common/report: it is
// the one figure of the workbook that is a grid of cells.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/platform/errors.h"
#include "common/report/svg_plot.h"
#include "lessons/06-flash-attention/flash_report.h"

namespace vramlab::lesson06 {

namespace {

constexpr const char* kFullColour = "#1f77b4";
constexpr const char* kPartialColour = "#ff7f0e";
constexpr const char* kSkippedColour = "#e8e8e8";

report::LinePlot memory_plot(const Lesson& lesson) {
  report::LinePlot plot;
  const CoreShape& s = lesson.settings.shape;
  plot.title = "Attention memory against T, forward + backward (B=" + std::to_string(s.batch) +
               ", H=" + std::to_string(s.heads) + ", D=" + std::to_string(s.head_dim) + ", f32)";
  plot.x_label = "sequence length T (log scale)";
  plot.y_label = "bytes (log scale)";
  plot.log_x = true;
  plot.log_x_base = 2.0;
  plot.log_y = true;
  plot.y_is_bytes = true;
  report::LineSeries naive_peak{"naive: allocator peak of the op", {}, {}, "#d62728", false};
  report::LineSeries flash_peak{"flash: allocator peak of the op", {}, {}, "#1f77b4", false};
  report::LineSeries naive_saved{"naive: att saved (B,H,T,T)", {}, {}, "#d62728", true};
  report::LineSeries flash_saved{"flash: lse saved (B,H,T)", {}, {}, "#1f77b4", true};
  for (const SeqRow& r : lesson.rows) {
    const double t = static_cast<double>(r.seq);
    naive_peak.x.push_back(t);
    naive_peak.y.push_back(static_cast<double>(r.naive.peak_bytes));
    flash_peak.x.push_back(t);
    flash_peak.y.push_back(static_cast<double>(r.flash.peak_bytes));
    naive_saved.x.push_back(t);
    naive_saved.y.push_back(static_cast<double>(r.naive.saved_bytes));
    flash_saved.x.push_back(t);
    flash_saved.y.push_back(static_cast<double>(r.flash.saved_bytes));
  }
  plot.series = {naive_peak, flash_peak, naive_saved, flash_saved};
  return plot;
}

// The canvas of the tiling figure, recording each text's box for the layout check.
class Canvas {
 public:
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& tooltip) {
    char head[160];
    std::snprintf(head, sizeof head,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                  "stroke=\"#ffffff\" stroke-width=\"1\">",
                  x, y, w, h, fill.c_str());
    body_ += head;
    body_ += "<title>";
    body_ += report::xml_escape(tooltip);
    body_ += "</title></rect>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, bool dashed) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                  "stroke-width=\"1.5\"%s/>\n",
                  x1, y1, x2, y2, stroke.c_str(), dashed ? " stroke-dasharray=\"5,3\"" : "");
    body_ += text;
  }
  void text(double x, double y, const std::string& s, const char* anchor, double size,
            double rotate = 0.0, bool bold = false) {
    char head[200];
    std::snprintf(head, sizeof head,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%.0f\"%s", x, y,
                  anchor, size, bold ? " font-weight=\"bold\"" : "");
    body_ += head;
    if (rotate != 0.0) {
      char turn[80];
      std::snprintf(turn, sizeof turn, " transform=\"rotate(%.0f %.1f %.1f)\"", rotate, x, y);
      body_ += turn;
    }
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "literal" + string here.
    body_ += '>';
    body_ += report::xml_escape(s);
    body_ += "</text>\n";
    boxes_.push_back(report::text_box(s, x, y, anchor, size, bold, rotate));
  }
  report::SvgFigure finish(double width, double height, const std::string& title) const {
    char head[320];
    std::snprintf(head, sizeof head,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
                  width, height, width, height);
    std::string svg = head;
    svg += "<title>" + report::xml_escape(title) + "</title>\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    svg += body_ + "</svg>\n";
    return {svg, width, height, boxes_};
  }

 private:
  std::string body_;
  std::vector<report::TextBox> boxes_;
};

}  // namespace

report::SvgFigure tiling_figure(int64_t seq, const kernels::cpu::FlashTiles& tiles) {
  if (seq < 1) throw UsageError("--tiling-seq must be >= 1, got " + std::to_string(seq));
  const kernels::cpu::FlashTileCounts counts = kernels::cpu::flash_tile_counts(seq, tiles);
  const int64_t rows = (seq + tiles.query_rows - 1) / tiles.query_rows;
  const int64_t cols = (seq + tiles.key_rows - 1) / tiles.key_rows;
  constexpr double kWidth = 640.0, kLeft = 90.0, kTop = 56.0;
  // Cells as large as 480 pixels allow, one tile of the longer side per cell.
  const double cell = std::min(60.0, 480.0 / static_cast<double>(std::max(rows, cols)));
  const double grid_w = cell * static_cast<double>(seq) / static_cast<double>(tiles.key_rows);
  const double grid_h = cell * static_cast<double>(seq) / static_cast<double>(tiles.query_rows);
  Canvas c;
  const std::string title = "Causal flash attention, one (batch, head), T=" + std::to_string(seq) +
                            ": " + std::to_string(tiles.query_rows) + "x" +
                            std::to_string(tiles.key_rows) + " tiles";
  c.text(kWidth / 2, 24, title, "middle", 15, 0.0, true);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t q_first = i * tiles.query_rows;
    const int64_t q_last = std::min(seq, q_first + tiles.query_rows) - 1;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k_first = j * tiles.key_rows;
      const int64_t k_last = std::min(seq, k_first + tiles.key_rows) - 1;
      const bool skipped = k_first > q_last;
      const bool full = k_last <= q_first;
      const double x = kLeft + cell * static_cast<double>(k_first) / tiles.key_rows;
      const double y = kTop + cell * static_cast<double>(q_first) / tiles.query_rows;
      const double w = cell * static_cast<double>(k_last - k_first + 1) / tiles.key_rows;
      const double h = cell * static_cast<double>(q_last - q_first + 1) / tiles.query_rows;
      c.rect(x, y, w, h, skipped ? kSkippedColour : (full ? kFullColour : kPartialColour),
             "queries " + std::to_string(q_first) + "-" + std::to_string(q_last) + ", keys " +
                 std::to_string(k_first) + "-" + std::to_string(k_last) + ": " +
                 (skipped ? "skipped" : (full ? "computed in full" : "partial, masked")));
    }
  }
  // The causal boundary: key = query.
  c.line(kLeft, kTop, kLeft + grid_w, kTop + grid_h, "#333333", true);
  // Tile indices on the axes, thinned so that the labels never touch.
  const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(22.0 / cell)));
  for (int64_t j = 0; j < cols; j += every)
    c.text(kLeft + cell * (static_cast<double>(j) + 0.5), kTop - 6, std::to_string(j), "middle",
           11);
  for (int64_t i = 0; i < rows; i += every)
    c.text(kLeft - 6, kTop + cell * (static_cast<double>(i) + 0.5) + 4, std::to_string(i), "end",
           11);
  // The axis titles are centred on the grid, or as near as they fit when the grid is smaller
  // than they are (a short T): the layout is measured as the text check measures it.
  const std::string x_title = "key/value tile j (" + std::to_string(tiles.key_rows) + " keys each)";
  const std::string y_title = "query tile i (" + std::to_string(tiles.query_rows) + " rows)";
  const auto width_of = [](const std::string& text, double size) {
    const report::TextBox box = report::text_box(text, 0, 0, "start", size, false, 0.0);
    return box.corners[1].x - box.corners[0].x;
  };
  const double y_title_centre = std::max(kTop + grid_h / 2, kTop + width_of(y_title, 13) / 2 + 4);
  const double grid_bottom = std::max(kTop + grid_h, y_title_centre + width_of(y_title, 13) / 2);
  c.text(std::max(kLeft + grid_w / 2, kLeft + width_of(x_title, 13) / 2), grid_bottom + 22, x_title,
         "middle", 13);
  c.text(30, y_title_centre, y_title, "middle", 13, -90.0);
  double legend_y = grid_bottom + 50;
  const auto legend = [&](const char* colour, const std::string& label) {
    c.rect(kLeft, legend_y - 11, 14, 14, colour, label);
    c.text(kLeft + 22, legend_y, label, "start", 13);
    legend_y += 22;
  };
  legend(kFullColour, "computed in full (below the diagonal): " + std::to_string(counts.full));
  legend(kPartialColour,
         "partial (on the diagonal, masked per score): " + std::to_string(counts.partial));
  legend(kSkippedColour,
         "skipped (above the diagonal, never computed): " + std::to_string(counts.skipped));
  c.text(kLeft, legend_y + 4, "of " + std::to_string(counts.total) + " tiles; dashed: key = query",
         "start", 12);
  return c.finish(kWidth, legend_y + 20, title);
}

Figures make_figures(const Lesson& lesson) {
  return {report::plot_line(memory_plot(lesson)),
          tiling_figure(lesson.settings.tiling_seq, lesson.settings.tiles)};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const Figures figures = make_figures(lesson);
  const std::filesystem::path dir(out_dir);
  const FigurePaths paths{(dir / "attention_memory.svg").string(),
                          (dir / "flash_tiling.svg").string()};
  report::write_text_file(paths.memory_svg, figures.memory.svg);
  report::write_text_file(paths.tiling_svg, figures.tiling.svg);
  return paths;
}

}  // namespace vramlab::lesson06
