// Lesson 02's figures: the saved bytes over one step, and the memory/compute trade-off (see
// checkpoint_report.h).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/02-checkpointing/checkpoint_report.h"

namespace vramlab::lesson02 {

namespace {

// The schedules figure (1) compares: keep everything, recompute everything, recompute the
// attention probabilities only, and the planner's choice under the lesson's budget.
bool in_memory_figure(const std::string& name) {
  return name == "none" || name == "full" || name == "selective" || name.starts_with("budget:");
}

report::LinePlot memory_over_step(const Lesson& lesson) {
  report::LinePlot plot;
  plot.title = "Saved activations during step 1, phase by phase (measured)";
  plot.x_label =
      "phase: embedding, forward per layer, head, loss, backward per layer (with recomputes)";
  plot.y_label = "bytes of saved activations";
  plot.y_is_bytes = true;
  for (const PolicyRow& row : lesson.policies) {
    if (!in_memory_figure(row.run.name) || row.run.timeline.empty()) continue;
    report::LineSeries series;
    series.name = row.run.name + " (peak " +
                  report::format_bytes(static_cast<uint64_t>(row.run.activation_peak_bytes)) + ")";
    for (size_t i = 0; i < row.run.timeline.size(); ++i) {
      series.x.push_back(static_cast<double>(i + 1));
      series.y.push_back(static_cast<double>(row.run.timeline[i].max_bytes));
    }
    plot.series.push_back(std::move(series));
  }
  return plot;
}

report::LinePlot tradeoff(const Lesson& lesson) {
  report::LinePlot plot;
  plot.title = "Activation peak against recomputed forward, every schedule";
  plot.x_label = "share of the forward FLOPs recomputed in backward (%)";
  plot.y_label = "activation peak";
  plot.y_is_bytes = true;
  // The planner's cheapest schedules, one per budget, as loose points, and the frontier: for a
  // given recompute share, the least peak reachable (a staircase, as schedules are discrete).
  std::vector<TradeoffPoint> sweep = lesson.sweep;
  std::sort(sweep.begin(), sweep.end(), [](const TradeoffPoint& a, const TradeoffPoint& b) {
    return a.recomputed_forward_fraction < b.recomputed_forward_fraction;
  });
  report::LineSeries planner;
  planner.name = "cheapest schedule per budget (planner)";
  planner.colour = "#999999";
  report::LineSeries frontier;
  frontier.name = "optimal frontier";
  frontier.colour = "#555555";
  frontier.dashed = true;
  for (size_t i = 0; i < sweep.size(); ++i) {
    const double x = 100.0 * sweep[i].recomputed_forward_fraction;
    const double y = static_cast<double>(sweep[i].activation_peak_bytes);
    planner.x.insert(planner.x.end(), {x, NAN});
    planner.y.insert(planner.y.end(), {y, NAN});
    if (i > 0) {
      frontier.x.push_back(x);
      frontier.y.push_back(frontier.y.back());
    }
    frontier.x.push_back(x);
    frontier.y.push_back(y);
  }
  plot.series.push_back(std::move(planner));
  plot.series.push_back(std::move(frontier));
  // The measured schedules last, drawn over the planner's points they coincide with.
  for (const PolicyRow& row : lesson.policies) {
    report::LineSeries point;
    point.name = row.run.name.starts_with("budget:") ? "budget (measured)" : row.run.name;
    point.x = {100.0 * row.run.recomputed_forward_fraction};
    point.y = {static_cast<double>(row.run.activation_peak_bytes)};
    plot.series.push_back(std::move(point));
  }
  return plot;
}

}  // namespace

Figures make_figures(const Lesson& lesson) {
  return {report::plot_line(memory_over_step(lesson)), report::plot_line(tradeoff(lesson))};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const Figures figures = make_figures(lesson);
  const FigurePaths paths{(std::filesystem::path(out_dir) / "memory_over_step.svg").string(),
                          (std::filesystem::path(out_dir) / "tradeoff.svg").string()};
  report::write_text_file(paths.memory_over_step_svg, figures.memory_over_step.svg);
  report::write_text_file(paths.tradeoff_svg, figures.tradeoff.svg);
  return paths;
}

}  // namespace vramlab::lesson02
