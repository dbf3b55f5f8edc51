// Lesson 03's figures: the loss per mode, the loss scale over time, the gradients' exponents
// against the 16-bit formats (see precision_report.h).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/report/svg_plot.h"
#include "lessons/03-mixed-precision/precision_report.h"

namespace vramlab::lesson03 {

namespace {

report::LinePlot loss_curves(const Lesson& lesson) {
  report::LinePlot plot;
  plot.title = "Training loss per step, every precision (same model, seed and tokens)";
  plot.x_label = "step";
  plot.y_label = "cross-entropy (nats)";
  for (const ModeRun& run : lesson.runs) {
    report::LineSeries series;
    series.name = run.spec.label;
    for (size_t i = 0; i < run.losses.size(); ++i) {
      series.x.push_back(static_cast<double>(i + 1));
      series.y.push_back(run.losses[i]);
    }
    plot.series.push_back(std::move(series));
  }
  if (!lesson.runs.empty() && !lesson.runs[0].losses.empty()) {
    report::LineSeries floor;
    floor.name = "entropy rate (least loss possible)";
    floor.colour = "#555555";
    floor.dashed = true;
    floor.x = {1.0, static_cast<double>(lesson.runs[0].losses.size())};
    floor.y = {lesson.entropy_rate_nats, lesson.entropy_rate_nats};
    plot.series.push_back(std::move(floor));
  }
  return plot;
}

// log2 of the scale: the scale spans many binades and moves by factors of two.
report::LinePlot loss_scale(const Lesson& lesson) {
  report::LinePlot plot;
  plot.title = "Loss scale per step (log2) and the skipped steps, fp16 runs with a scaler";
  plot.x_label = "step";
  plot.y_label = "log2 of the loss scale";
  for (const ModeRun& run : lesson.runs) {
    if (run.spec.precision != amp::Precision::mixed_fp16 || run.loss_scale_name == "none") continue;
    report::LineSeries scale;
    scale.name = run.spec.label + " (" + run.loss_scale_name + ")";
    report::LineSeries skipped;
    skipped.name = run.spec.label + ": skipped steps (" +
                   std::to_string(std::count(run.skipped.begin(), run.skipped.end(), true)) + ")";
    skipped.colour = "#d62728";
    for (size_t i = 0; i < run.loss_scale.size(); ++i) {
      const double x = static_cast<double>(i + 1);
      const double y = std::log2(run.loss_scale[i]);
      scale.x.push_back(x);
      scale.y.push_back(y);
      if (run.skipped[i]) {
        // A short vertical tick per skipped step; NaN breaks the line between ticks.
        skipped.x.insert(skipped.x.end(), {x, x, NAN});
        skipped.y.insert(skipped.y.end(), {y - 0.5, y + 0.5, NAN});
      }
    }
    plot.series.push_back(std::move(scale));
    if (!skipped.x.empty()) plot.series.push_back(std::move(skipped));
  }
  return plot;
}

// The histograms as step lines (one binade per step) with the formats' limits as vertical
// dashed lines: the plot library draws lines, not shaded bands.
report::LinePlot exponents(const Lesson& lesson) {
  report::LinePlot plot;
  plot.title = "log2 |gradient| at the last step, against fp16's limits";
  plot.x_label = "log2 |g| (binade)";
  plot.y_label = "share of gradient values (%)";
  double top = 0.0;
  int lo = 0, hi = 0;
  bool any = false;
  for (const UnderflowView& v : lesson.underflow) {
    report::LineSeries series;
    series.name = v.run + (v.run == "mixed-fp16" ? " as stored" : "") + ", scale 2^" +
                  std::to_string(static_cast<int>(std::log2(v.scale)));
    const double total = static_cast<double>(std::max<int64_t>(1, v.histogram.total));
    for (size_t i = 0; i < v.histogram.counts.size(); ++i) {
      const int e = v.histogram.min_exponent + static_cast<int>(i);
      const double share = 100.0 * static_cast<double>(v.histogram.counts[i]) / total;
      series.x.insert(series.x.end(), {static_cast<double>(e), static_cast<double>(e + 1)});
      series.y.insert(series.y.end(), {share, share});
      top = std::max(top, share);
      if (v.histogram.counts[i] > 0) {
        if (!any) lo = e;
        lo = std::min(lo, e);
        hi = std::max(hi, e + 1);
        any = true;
      }
    }
    plot.series.push_back(std::move(series));
  }
  // Only the binades that hold values, and the formats' limits, are drawn.
  lo = std::min(lo, -26) - 1;
  hi = std::max(hi, 16) + 1;
  for (report::LineSeries& s : plot.series) {
    for (size_t i = 0; i < s.x.size(); ++i)
      if (s.x[i] < lo || s.x[i] > hi) s.x[i] = NAN;
  }
  const auto limit = [&](const std::string& name, double x, const std::string& colour) {
    report::LineSeries line;
    line.name = name;
    line.colour = colour;
    line.dashed = true;
    line.x = {x, x};
    line.y = {0.0, top};
    plot.series.push_back(std::move(line));
  };
  limit("fp16 smallest subnormal 2^-24", -24.0, "#d62728");
  limit("fp16 smallest normal 2^-14", -14.0, "#ff7f0e");
  limit("fp16 max 65504 (2^16)", std::log2(65504.0), "#7f7f7f");
  // bf16's normal range starts at 2^-126, far left of any gradient here: named, not drawn.
  plot.title += " (bf16 reaches 2^-133, off the left edge)";
  return plot;
}

}  // namespace

Figures make_figures(const Lesson& lesson) {
  return {report::plot_line(loss_curves(lesson)), report::plot_line(loss_scale(lesson)),
          report::plot_line(exponents(lesson))};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const Figures figures = make_figures(lesson);
  const std::filesystem::path dir(out_dir);
  const FigurePaths paths{(dir / "loss_curves.svg").string(), (dir / "loss_scale.svg").string(),
                          (dir / "gradient_exponents.svg").string()};
  report::write_text_file(paths.loss_curves_svg, figures.loss_curves.svg);
  report::write_text_file(paths.loss_scale_svg, figures.loss_scale.svg);
  report::write_text_file(paths.exponents_svg, figures.exponents.svg);
  return paths;
}

}  // namespace vramlab::lesson03
