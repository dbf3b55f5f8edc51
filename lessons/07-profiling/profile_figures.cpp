// Lesson 07's figures: the memory per module at the peak as stacked bars, and both runs'
// profiles (snapshot, trace, tables, timeline) written by profile::write_profile (see
// profile_report.h).
#include <filesystem>

#include "common/memory/memory_category.h"
#include "common/profile/chrome_trace.h"
#include "common/profile/profile_files.h"
#include "common/report/svg_plot.h"
#include "common/report/trace_html.h"
#include "lessons/07-profiling/profile_report.h"

namespace vramlab::lesson07 {

namespace {

// Bars beyond this many modules are summed into one "other modules" bar, so that a 32-layer
// model's chart stays readable.
constexpr size_t kMaxModuleBars = 24;

report::StackedBarChart per_module_chart(const Lesson& lesson) {
  report::StackedBarChart chart;
  chart.title = lesson.settings.run.train.model.name + ": memory live at the peak, per module";
  const std::vector<ModuleBytes> modules = module_bytes(lesson.baseline.peak);
  std::vector<bool> used(memory::kMemoryCategoryCount, false);
  for (const ModuleBytes& m : modules)
    for (size_t c = 0; c < memory::kMemoryCategoryCount; ++c)
      used[c] = used[c] || m.category_bytes[c] > 0;
  std::vector<size_t> shown;  // category indices with bytes somewhere
  for (size_t c = 0; c < memory::kMemoryCategoryCount; ++c)
    if (used[c]) {
      shown.push_back(c);
      chart.categories.emplace_back(memory::category_name(memory::kAllMemoryCategories[c]));
    }
  report::StackedBar other{"other modules", std::vector<uint64_t>(shown.size(), 0)};
  for (size_t i = 0; i < modules.size(); ++i) {
    std::vector<uint64_t> values;
    for (const size_t c : shown)
      values.push_back(static_cast<uint64_t>(modules[i].category_bytes[c]));
    if (i + 1 < kMaxModuleBars || modules.size() <= kMaxModuleBars) {
      chart.bars.push_back({modules[i].module, values});
    } else {
      for (size_t k = 0; k < values.size(); ++k) other.values_bytes[k] += values[k];
    }
  }
  if (modules.size() > kMaxModuleBars) chart.bars.push_back(other);
  return chart;
}

}  // namespace

Figures make_figures(const Lesson& lesson) {
  return {report::plot_stacked_bar(per_module_chart(lesson))};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  FigurePaths paths;
  const Figures figures = make_figures(lesson);
  paths.per_module_svg = (fs::path(out_dir) / "profile_per_module.svg").string();
  report::write_text_file(paths.per_module_svg, figures.per_module.svg);
  const std::string model = lesson.settings.run.train.model.name;
  const profile::ProfileFiles baseline = profile::write_profile(
      lesson.baseline.recording, (fs::path(out_dir) / "profile-baseline").string(),
      "lesson 07: " + model + ", baseline");
  profile::write_profile(lesson.recompute.recording,
                         (fs::path(out_dir) / "profile-recompute").string(),
                         "lesson 07: " + model + ", " + lesson.recompute.label);
  paths.baseline_dir = (fs::path(out_dir) / "profile-baseline").string();
  paths.recompute_dir = (fs::path(out_dir) / "profile-recompute").string();
  paths.timeline_html = baseline.timeline_html;
  // The trace drawn offline, for when Perfetto (which loads itself from the network) is out of
  // reach.
  paths.trace_html = (fs::path(out_dir) / "profile_trace.html").string();
  report::write_text_file(
      paths.trace_html, report::render_trace_html(profile::chrome_trace(lesson.baseline.recording),
                                                  "lesson 07: " + model + ", baseline trace"));
  return paths;
}

}  // namespace vramlab::lesson07
