// Lesson 04's figures: per-rank model states by category for each strategy, the bytes each
// strategy sends per rank per step beside the ZeRO paper's, and ZeRO-3's gather → compute →
// release on rank 0's allocator (see zero_report.h).
#include <algorithm>
#include <filesystem>

#include "common/report/category_colours.h"
#include "common/report/svg_plot.h"
#include "lessons/04-zero/zero_report.h"

namespace vramlab::lesson04 {

namespace {

using memory::MemoryCategory;

report::StackedBarChart memory_chart(const Lesson& lesson) {
  report::StackedBarChart chart;
  chart.categories = {"parameter", "gradient", "optimizer_state"};
  const bool scale = !lesson.figure1.empty();
  const std::vector<StrategyRun>& runs = scale ? lesson.figure1 : lesson.training;
  if (runs.empty()) return chart;
  const StrategyRun& any = runs.front();
  chart.title = (scale ? lesson.settings.figure1_model.name : lesson.settings.train.model.name) +
                ": model states per rank, N = " + std::to_string(any.world_size) +
                ", mixed-bf16 AdamW";
  for (const StrategyRun& run : runs) {
    const ModelStates& m = run.ranks.front().model_state;
    chart.bars.push_back({std::string(dist::zero_stage_name(run.stage)),
                          {static_cast<uint64_t>(m.parameters), static_cast<uint64_t>(m.gradients),
                           static_cast<uint64_t>(m.optimizer_states)}});
  }
  return chart;
}

report::GroupedBarChart communication_chart(const Lesson& lesson) {
  report::GroupedBarChart chart;
  chart.series = {"gradients (measured)", "parameters (measured)", "ZeRO paper, 2Ψ or 3Ψ"};
  chart.values_bytes.assign(3, {});
  if (lesson.training.empty()) return chart;
  const StrategyRun& any = lesson.training.front();
  chart.title = "Bytes sent per rank per step, N = " + std::to_string(any.world_size) +
                ", Ψ = " + std::to_string(any.parameter_count);
  for (const StrategyRun& run : lesson.training) {
    const RankRun& r = run.ranks.front();
    chart.groups.push_back(std::string(dist::zero_stage_name(run.stage)));
    chart.values_bytes[0].push_back(
        static_cast<uint64_t>(r.last_step.of(dist::Traffic::gradients).bytes_sent));
    chart.values_bytes[1].push_back(
        static_cast<uint64_t>(r.last_step.of(dist::Traffic::parameters).bytes_sent));
    chart.values_bytes[2].push_back(
        static_cast<uint64_t>(paper_bytes_per_step(run.stage, run.parameter_count, run.world_size,
                                                   run.precision == amp::Precision::fp32 ? 4 : 2)));
  }
  return chart;
}

report::LinePlot timeline_plot(const Lesson& lesson) {
  report::LinePlot plot;
  plot.x_label = "allocator event in the step";
  plot.y_label = "live bytes (requested)";
  plot.y_is_bytes = true;
  // Logarithmic: a small model's activations are many times its gathered block, whose teeth
  // would vanish on a linear axis.
  plot.log_y = true;
  const StrategyRun* z3 = find(lesson.training, dist::ZeroStage::parameters);
  if (!z3 || z3->timeline.empty()) return plot;
  const int64_t layer = std::min<int64_t>(1, lesson.settings.train.model.layers - 1);
  plot.title =
      "ZeRO-3, rank 0, one step: each block's parameters gathered, used, released "
      "(dashed: block " +
      std::to_string(layer) + ")";
  const std::vector<std::pair<MemoryCategory, std::string>> shown = {
      {MemoryCategory::parameter, "parameters (shard + gathered units)"},
      {MemoryCategory::activation, "activations"},
      {MemoryCategory::gradient, "gradients (shard + unit being reduced)"}};
  double top = 0.0, bottom = 1e300;
  for (const auto& [category, name] : shown) {
    report::LineSeries line;
    line.name = name;
    line.colour = report::category_colour(memory::category_name(category));
    for (const TimelinePoint& p : z3->timeline) {
      line.x.push_back(static_cast<double>(p.event));
      const double y = static_cast<double>(p.bytes[static_cast<size_t>(category)]);
      line.y.push_back(y);
      top = std::max(top, y);
      if (y > 0.0) bottom = std::min(bottom, y);
    }
    plot.series.push_back(std::move(line));
  }
  // The chosen block's phases as dashed vertical lines, where the observer saw them begin.
  for (const PhaseSpan& span : z3->spans) {
    if (span.layer != layer) continue;
    report::LineSeries mark;
    mark.name = span.phase + " " + std::to_string(span.layer);
    mark.colour = span.phase == "forward_layer" ? "#555555" : "#999999";
    mark.dashed = true;
    mark.x = {static_cast<double>(span.first_event), static_cast<double>(span.first_event)};
    mark.y = {bottom, top};
    plot.series.push_back(std::move(mark));
  }
  return plot;
}

}  // namespace

Figures make_figures(const Lesson& lesson) {
  return {report::plot_stacked_bar(memory_chart(lesson)),
          report::plot_grouped_bar(communication_chart(lesson)),
          report::plot_line(timeline_plot(lesson))};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const Figures figures = make_figures(lesson);
  const std::filesystem::path dir(out_dir);
  const FigurePaths paths{(dir / "zero_memory_per_rank.svg").string(),
                          (dir / "zero_communication.svg").string(),
                          (dir / "zero3_timeline.svg").string()};
  report::write_text_file(paths.memory_svg, figures.memory.svg);
  report::write_text_file(paths.communication_svg, figures.communication.svg);
  report::write_text_file(paths.timeline_svg, figures.timeline.svg);
  return paths;
}

}  // namespace vramlab::lesson04
