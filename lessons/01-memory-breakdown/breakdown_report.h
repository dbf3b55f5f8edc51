/// \file
/// \brief Lesson 01's report: the measured step beside the estimate, category by category, with
/// the difference explained, the saved activations per layer, bytes per parameter, and what was
/// live at the peak — as a terminal table, as JSON, and as figures (SVG and an HTML timeline).
///
/// The report calls the lesson's exercise functions (bytes per parameter, layer activation bytes,
/// peak from a trace), so a learner running `vramlab run 01 --mine` sees their own code's numbers
/// beside the measurement; a stub that is not implemented yet is reported, never fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/estimate/estimator.h"
#include "common/memory/memory_category.h"
#include "common/report/svg_plot.h"
#include "lessons/01-memory-breakdown/api/bytes_per_param.h"
#include "lessons/01-memory-breakdown/api/peak_from_trace.h"
#include "lessons/01-memory-breakdown/measure_scale.h"
#include "lessons/01-memory-breakdown/measure_step.h"

namespace vramlab::lesson01 {

/// One category of the breakdown: measured, estimated, and why they differ.
struct CategoryRow {
  std::string key;                         ///< JSON key, e.g. "optimizer_states".
  std::string label;                       ///< table label, e.g. "optimizer states".
  memory::MemoryCategory category;         ///< the allocator category measured.
  int64_t measured_bytes = 0;              ///< the allocator's peak of the category (rounded).
  std::optional<int64_t> requested_bytes;  ///< what the code asked for, where known.
  std::optional<int64_t> estimated_bytes;  ///< the formula's bytes (none for temporaries).
  std::string source;                      ///< the formula and where it comes from.
  std::string why;                         ///< the difference, explained.
};

/// A tensor live at the peak.
struct LiveTensor {
  std::string name;                 ///< e.g. "blocks.3.att".
  memory::MemoryCategory category;  ///< what it is for.
  int64_t bytes = 0;                ///< its requested bytes.
};

/// What an exercise function returned, or why it could not be used.
struct ExerciseStatus {
  std::string id;     ///< e.g. "01.2".
  bool ok = false;    ///< it returned a value.
  std::string error;  ///< the exception's message otherwise (e.g. NOT IMPLEMENTED YET).
};

/// Everything the lesson shows.
struct Breakdown {
  StepSettings settings;                 ///< what ran.
  StepMeasurement measurement;           ///< what the allocator saw.
  estimate::Estimate estimate;           ///< `vramlab estimate` for the same step (fp32).
  std::vector<CategoryRow> rows;         ///< parameters … inputs.
  int64_t estimated_peak_bytes = 0;      ///< the estimator's total (P + G + O + activations).
  int64_t largest_temporary_bytes = 0;   ///< the largest single temporary of the step.
  std::string largest_temporary_name;    ///< its name.
  std::vector<LayerActivations> layers;  ///< the store, grouped by layer.
  /// Exercise 01.2's bytes of one block (GPT-2 family only; empty otherwise or on error).
  std::optional<int64_t> exercise_layer_bytes;
  /// Exercise 01.1 for the runtime's fp32 training (empty on error).
  std::optional<ModelStateBreakdown> exercise_fp32;
  /// Exercise 01.1 for ZeRO's mixed precision, bf16 with fp32 master weights (empty on error).
  std::optional<ModelStateBreakdown> exercise_mixed;
  /// Exercise 01.3 on the step's trace.
  std::optional<PeakReport> exercise_peak;
  std::vector<LiveTensor> live_at_peak;  ///< largest first (from exercise 01.3's names).
  std::string
      peak_owner;  ///< phase and module of the peak event, e.g. "backward in blocks.3.attn".
  std::vector<ExerciseStatus> exercises;  ///< 01.1, 01.2, 01.3.
};

/// Measures nothing: turns a measurement into the lesson's breakdown, calling the exercises.
/// \param settings what ran. \param measurement what was measured (moved from).
/// \return the breakdown.
/// \throws vramlab::UsageError for bad settings (the estimator's).
Breakdown analyse(const StepSettings& settings, StepMeasurement measurement);

/// \param breakdown the breakdown. \param colour emit ANSI styles.
/// \return the human report (tables and explanations).
std::string render_text(const Breakdown& breakdown, bool colour);

/// \param breakdown the breakdown.
/// \return one JSON object: measured_bytes and estimated_bytes per category, peak_bytes,
/// the per-layer activations, bytes per parameter, the live tensors at the peak and the inputs.
nlohmann::json to_json(const Breakdown& breakdown);

/// \param scale the runs at scale. \param colour ANSI styles. \return their two tables: the
/// steps on meta, and the estimator's rows.
std::string render_scale(const Scale& scale, bool colour);

/// Paths of the figures written by write_figures().
struct FigurePaths {
  std::string breakdown_svg;              ///< stacked bar of the breakdown.
  std::string measured_vs_estimated_svg;  ///< grouped bars per category.
  std::string timeline_html;              ///< the memory timeline of the step.
};

/// The lesson's figures, laid out but not written (tests check their layout).
struct Figures {
  report::SvgFigure breakdown;              ///< stacked bars: the peak measured and estimated.
  report::SvgFigure measured_vs_estimated;  ///< grouped bars per category.
  std::string timeline_html;                ///< the memory timeline of the step.
};

/// \param breakdown the breakdown.
/// \return breakdown.svg's data: the peak as measured (what was live at it) and as estimated, by
/// category; each bar's total is a total of render_text()'s tables.
report::StackedBarChart breakdown_chart(const Breakdown& breakdown);

/// \param breakdown the breakdown. \return the lesson's figures.
Figures make_figures(const Breakdown& breakdown);

/// Writes breakdown.svg, measured_vs_estimated.svg and timeline.html into \p out_dir (created
/// if missing).
/// \param breakdown the breakdown. \param out_dir the directory.
/// \return the paths written.
/// \throws std::runtime_error naming a path that cannot be written.
FigurePaths write_figures(const Breakdown& breakdown, const std::string& out_dir);

}  // namespace vramlab::lesson01
