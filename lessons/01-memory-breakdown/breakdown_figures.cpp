// Lesson 01's figures: the breakdown as a stacked bar, measured vs estimated per category, and the
// step's memory timeline (see breakdown_report.h).
#include <algorithm>
#include <filesystem>

#include "common/memory/device.h"
#include "common/report/memory_timeline_html.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/01-memory-breakdown/breakdown_report.h"

namespace vramlab::lesson01 {

namespace {

using memory::MemoryCategory;

std::string settings_summary(const StepSettings& s) {
  return s.model.name + ", B=" + std::to_string(s.batch) + ", T=" + std::to_string(s.seq) + ", " +
         s.optimizer + ", fp32, " + s.device.name();
}

}  // namespace

report::StackedBarChart breakdown_chart(const Breakdown& b) {
  const StepSettings& s = b.settings;
  const std::string what = settings_summary(s);
  // Two bars, each totalling a number of the text's "peak (allocated)" row: the measured peak
  // split by what was live at it (exercise 01.3's tensors, at their requested sizes, plus what
  // the allocator's 512-B rounding and unsplit blocks add), and the estimate's P + G + O + A.
  report::StackedBarChart stacked;
  stacked.title = "Lesson 01: the peak of one training step, by category (" + what + ")";
  for (const CategoryRow& r : b.rows)
    stacked.categories.push_back(std::string(memory::category_name(r.category)));
  stacked.categories.push_back("allocator rounding");
  const size_t rounding = b.rows.size();
  if (!b.live_at_peak.empty()) {
    report::StackedBar at_peak{"measured: live at the peak",
                               std::vector<uint64_t>(stacked.categories.size(), 0)};
    int64_t live_bytes = 0;
    for (const LiveTensor& t : b.live_at_peak) {
      for (size_t i = 0; i < b.rows.size(); ++i)
        if (b.rows[i].category == t.category)
          at_peak.values_bytes[i] += static_cast<uint64_t>(t.bytes);
      live_bytes += t.bytes;
    }
    at_peak.values_bytes[rounding] = static_cast<uint64_t>(
        std::max<int64_t>(0, b.measurement.peak_allocated_bytes - live_bytes));
    stacked.bars.push_back(at_peak);
  }
  report::StackedBar estimated{"estimated: P + G + O + A",
                               std::vector<uint64_t>(stacked.categories.size(), 0)};
  for (size_t i = 0; i < b.rows.size(); ++i) {
    // The estimator's peak counts the model states and the saved activations only.
    const MemoryCategory c = b.rows[i].category;
    if (c == MemoryCategory::input || c == MemoryCategory::temporary) continue;
    estimated.values_bytes[i] = static_cast<uint64_t>(b.rows[i].estimated_bytes.value_or(0));
  }
  stacked.bars.push_back(estimated);
  if (s.device.kind == memory::DeviceKind::sim) {
    stacked.budget_bytes = s.device.spec.capacity_bytes;
    stacked.budget_label = s.device.name() + " capacity";
  }
  return stacked;
}

Figures make_figures(const Breakdown& b) {
  const std::string what = settings_summary(b.settings);

  report::GroupedBarChart grouped;
  grouped.title = "Measured vs estimated per category (" + what + ")";
  grouped.series = {"measured", "estimated"};
  grouped.values_bytes.resize(2);
  grouped.missing.resize(2);
  for (const CategoryRow& r : b.rows) {
    grouped.groups.push_back(r.label);
    grouped.values_bytes[0].push_back(static_cast<uint64_t>(r.measured_bytes));
    grouped.values_bytes[1].push_back(static_cast<uint64_t>(r.estimated_bytes.value_or(0)));
    grouped.missing[0].push_back(false);
    grouped.missing[1].push_back(!r.estimated_bytes.has_value());  // no formula counts it
  }
  grouped.groups.push_back("peak (allocated)");
  grouped.values_bytes[0].push_back(static_cast<uint64_t>(b.measurement.peak_allocated_bytes));
  grouped.values_bytes[1].push_back(static_cast<uint64_t>(b.estimated_peak_bytes));
  grouped.missing[0].push_back(false);
  grouped.missing[1].push_back(false);

  return {report::plot_stacked_bar(breakdown_chart(b)), report::plot_grouped_bar(grouped),
          report::render_memory_timeline_html(
              b.measurement.snapshot, "Lesson 01: memory timeline of one step (" + what + ")")};
}

FigurePaths write_figures(const Breakdown& b, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the figure directory '" + out_dir +
                             "': " + ec.message());
  const Figures figures = make_figures(b);
  FigurePaths paths{(fs::path(out_dir) / "breakdown.svg").string(),
                    (fs::path(out_dir) / "measured_vs_estimated.svg").string(),
                    (fs::path(out_dir) / "timeline.html").string()};
  report::write_text_file(paths.breakdown_svg, figures.breakdown.svg);
  report::write_text_file(paths.measured_vs_estimated_svg, figures.measured_vs_estimated.svg);
  report::write_text_file(paths.timeline_html, figures.timeline_html);
  return paths;
}

}  // namespace vramlab::lesson01
