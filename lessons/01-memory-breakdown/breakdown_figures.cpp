// Lesson 01's figures: the breakdown as a stacked bar, measured vs estimated per category, and the
// step's memory timeline (see breakdown_report.h).
#include <filesystem>

#include "common/memory/device.h"
#include "common/report/memory_timeline_html.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/01-memory-breakdown/breakdown_report.h"

namespace vramlab::lesson01 {

FigurePaths write_figures(const Breakdown& b, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the figure directory '" + out_dir +
                             "': " + ec.message());
  const StepSettings& s = b.settings;
  const std::string what = s.model.name + ", B=" + std::to_string(s.batch) +
                           ", T=" + std::to_string(s.seq) + ", " + s.optimizer + ", fp32, " +
                           s.device.name();

  // Stacked bars: the sum of category peaks, what was live at the peak, the estimate.
  report::StackedBarChart stacked;
  stacked.title = "Lesson 01: one training step, by category (" + what + ")";
  std::vector<memory::MemoryCategory> cats;
  for (const CategoryRow& r : b.rows) {
    stacked.categories.push_back(std::string(memory::category_name(r.category)));
    cats.push_back(r.category);
  }
  report::StackedBar measured{"measured (peak of each category)", {}};
  report::StackedBar estimated{"estimated (vramlab estimate)", {}};
  for (const CategoryRow& r : b.rows) {
    measured.values_bytes.push_back(static_cast<uint64_t>(r.measured_bytes));
    estimated.values_bytes.push_back(static_cast<uint64_t>(r.estimated_bytes.value_or(0)));
  }
  stacked.bars.push_back(measured);
  if (!b.live_at_peak.empty()) {
    report::StackedBar at_peak{"live at the peak (one moment)",
                               std::vector<uint64_t>(cats.size(), 0)};
    for (const LiveTensor& t : b.live_at_peak)
      for (size_t i = 0; i < cats.size(); ++i)
        if (cats[i] == t.category) at_peak.values_bytes[i] += static_cast<uint64_t>(t.bytes);
    stacked.bars.push_back(at_peak);
  }
  stacked.bars.push_back(estimated);
  if (s.device.kind == memory::DeviceKind::sim) {
    stacked.budget_bytes = s.device.spec.capacity_bytes;
    stacked.budget_label = s.device.name() + " capacity";
  }

  report::GroupedBarChart grouped;
  grouped.title = "Measured vs estimated per category (" + what + ")";
  grouped.series = {"measured", "estimated"};
  grouped.values_bytes.resize(2);
  for (const CategoryRow& r : b.rows) {
    grouped.groups.push_back(r.label);
    grouped.values_bytes[0].push_back(static_cast<uint64_t>(r.measured_bytes));
    grouped.values_bytes[1].push_back(static_cast<uint64_t>(r.estimated_bytes.value_or(0)));
  }
  grouped.groups.push_back("peak");
  grouped.values_bytes[0].push_back(static_cast<uint64_t>(b.measurement.peak_allocated_bytes));
  grouped.values_bytes[1].push_back(static_cast<uint64_t>(b.estimated_peak_bytes));

  FigurePaths paths{(fs::path(out_dir) / "breakdown.svg").string(),
                    (fs::path(out_dir) / "measured_vs_estimated.svg").string(),
                    (fs::path(out_dir) / "timeline.html").string()};
  report::write_text_file(paths.breakdown_svg, report::render_stacked_bar_svg(stacked));
  report::write_text_file(paths.measured_vs_estimated_svg, report::render_grouped_bar_svg(grouped));
  report::write_text_file(
      paths.timeline_html,
      report::render_memory_timeline_html(b.measurement.snapshot,
                                          "Lesson 01: memory timeline of one step (" + what + ")"));
  return paths;
}

}  // namespace vramlab::lesson01
