// Lesson 09's figures: the model states per optimizer, stacked by what they are, in fp32 and
// mixed-bf16; every optimizer's loss curve (see optimizer_report.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/report/category_colours.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;

report::StackedBar bar(const OptimizerRun& r) {
  const StateBytes& b = r.bytes;
  return {std::string(estimate::optimizer_name(r.optimizer)) + ", " +
              std::string(amp::precision_name(r.precision)) + ": " +
              report::format_per_param(b.model_state_bytes_per_param()) + " B/param",
          {static_cast<uint64_t>(b.parameter_bytes), static_cast<uint64_t>(b.gradient_bytes),
           static_cast<uint64_t>(b.master_bytes), static_cast<uint64_t>(b.moment_bytes),
           static_cast<uint64_t>(b.absmax_bytes)}};
}

report::StackedBarChart bytes_chart(const Lesson& lesson) {
  report::StackedBarChart chart;
  chart.categories = {"weights", "gradients", "fp32 master", "optimizer states", "8-bit absmax"};
  chart.colours = {"#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#d62728"};
  const std::vector<amp::Precision> precisions = {amp::Precision::fp32, amp::Precision::mixed_bf16};
  if (!lesson.scale.empty()) {
    const std::string model = lesson.scale.front().model;
    chart.title = model + ": model states per optimizer after one step on meta";
    for (const amp::Precision p : precisions)
      for (const Optimizer o : lesson.settings.optimizers)
        if (const OptimizerRun* r = find_scale(lesson, model, p, o)) chart.bars.push_back(bar(*r));
    return chart;
  }
  chart.title = lesson.settings.train.model.name + ": model states per optimizer";
  for (const std::vector<OptimizerRun>* runs : {&lesson.training, &lesson.compared})
    for (const OptimizerRun& r : *runs) chart.bars.push_back(bar(r));
  return chart;
}

// A moving mean over `window` steps (shorter at the start): the per-step loss of a small batch is
// noisy enough to hide which curve is which.
std::vector<double> moving_mean(const std::vector<double>& x, size_t window) {
  std::vector<double> out(x.size());  // (steps)
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sum += x[i];
    if (i >= window) sum -= x[i - window];
    out[i] = sum / static_cast<double>(std::min(i + 1, window));
  }
  return out;
}

report::LinePlot loss_plot(const Lesson& lesson) {
  const RunSettings& s = lesson.settings.train;
  const size_t window = static_cast<size_t>(std::max<int64_t>(1, s.steps / 30));
  report::LinePlot plot;
  plot.title = "Training loss, " + s.model.name + ", B=" + std::to_string(s.batch) +
               ", T=" + std::to_string(s.seq) + ", " +
               std::string(amp::precision_name(s.precision)) + " (mean of " +
               std::to_string(window) + " steps)";
  plot.x_label = "step";
  plot.y_label = "cross-entropy (nats)";
  // AdamW is the reference the others are judged against: drawn last, on top, in black.
  std::vector<const OptimizerRun*> order;
  for (const OptimizerRun& r : lesson.training)
    if (r.optimizer != Optimizer::adamw) order.push_back(&r);
  for (const OptimizerRun& r : lesson.training)
    if (r.optimizer == Optimizer::adamw) order.push_back(&r);
  for (size_t i = 0; i < order.size(); ++i) {
    const OptimizerRun& r = *order[i];
    report::LineSeries line;
    line.name = std::string(estimate::optimizer_name(r.optimizer));
    line.colour = r.optimizer == Optimizer::adamw ? "#000000" : report::series_colour(i);
    line.y = moving_mean(r.losses, window);
    for (size_t k = 0; k < r.losses.size(); ++k) line.x.push_back(static_cast<double>(k + 1));
    plot.series.push_back(std::move(line));
  }
  report::LineSeries floor{"entropy rate (the floor)",
                           {1.0, static_cast<double>(s.steps)},
                           {lesson.entropy_rate_nats, lesson.entropy_rate_nats},
                           "#555555",
                           true};
  plot.series.push_back(std::move(floor));
  return plot;
}

}  // namespace

Figures make_figures(const Lesson& lesson) {
  return {report::plot_stacked_bar(bytes_chart(lesson)), report::plot_line(loss_plot(lesson))};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const Figures figures = make_figures(lesson);
  const std::filesystem::path dir(out_dir);
  const FigurePaths paths{(dir / "optimizer_bytes_per_param.svg").string(),
                          (dir / "optimizer_loss_curves.svg").string()};
  report::write_text_file(paths.bytes_svg, figures.bytes.svg);
  report::write_text_file(paths.losses_svg, figures.losses.svg);
  return paths;
}

}  // namespace vramlab::lesson09
