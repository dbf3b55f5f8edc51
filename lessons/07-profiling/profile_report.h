/// \file
/// \brief Lesson 07's report: one recorded training run read as memory_viz and torch.profiler
/// show it (the peak and its owner by module, phase and stack; memory per module; the largest
/// allocations at the peak; the per-op table), the same run with checkpointing beside it, the
/// planted leak found from two snapshots, a 7B model on meta, and the numbers its claims read (a
/// 355M model on meta; claims.json, which LessonMain evaluates), as tables, JSON and figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/svg_plot.h"
#include "lessons/07-profiling/profile_runs.h"

namespace vramlab::lesson07 {

/// What the lesson runs.
struct LessonSettings {
  RunSettings run;                 ///< the baseline (no checkpointing).
  std::string recompute = "full";  ///< the second configuration's --recompute.
  int64_t leak_after = 2;          ///< k: the first snapshot is taken after step k.
  int64_t leak_steps = 3;          ///< n: the second after step k + n.
  int64_t top = 10;                ///< rows of the top-allocation and per-op tables.
  bool overhead = true;            ///< time the baseline's steps without recording too.
  bool scale = true;               ///< the at-scale runs on meta.
  RunSettings scale_run;           ///< e.g. llama2-7b on meta.
  /// Claim #97's configuration: GPT-2 medium (355M) at b = 16, s = 1024 on meta, one step.
  RunSettings medium_run;
};

/// Claim #97's numbers: what a 355M GPT-2 holds per category (peak, requested bytes), on meta.
struct MediumModelBytes {
  std::string model;             ///< "gpt2-355m"
  int64_t parameter_count = 0;   ///< Ψ
  int64_t parameters = 0;        ///< bytes
  int64_t gradients = 0;         ///< bytes
  int64_t optimizer_states = 0;  ///< bytes
  int64_t activation_peak = 0;   ///< the step's saved-activation peak (requested bytes)
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;                 ///< as run.
  ProfiledRun baseline;                    ///< no checkpointing.
  ProfiledRun recompute;                   ///< with settings.recompute.
  double stack_capture_seconds = 0.0;      ///< stack_capture_seconds(), with the overhead
  StepTimes unprofiled;                    ///< the baseline's steps, not recorded.
  LeakHunt leak;                           ///< the planted leak.
  std::optional<ProfiledRun> scale;        ///< the large model on meta.
  std::optional<MediumModelBytes> medium;  ///< claim #97.
};

/// Runs everything the settings ask for.
/// \param settings the lesson's settings.
/// \param progress if not null, told one line per run (for the terminal).
/// \return the lesson. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when a run does not fit its device.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// A C++ function name as the report prints it: without "vramlab::", argument lists and
/// template arguments, e.g. "nn::Attention::forward".
/// \param function a demangled name. \return the short name.
std::string short_function(const std::string& function);

/// Live bytes at the peak per module and memory category.
struct ModuleBytes {
  std::string module;                   ///< "(none)" for allocations outside every module
  std::vector<int64_t> category_bytes;  ///< one per memory::MemoryCategory, in enum order
  int64_t total = 0;                    ///< their sum
};

/// \param peak a peak report. \return its live allocations grouped by module (largest first),
/// each split by category.
std::vector<ModuleBytes> module_bytes(const snapshot::PeakReport& peak);

/// \param lesson the runs. \return the JSON object of `--json` (keys in profile_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's SVG figure (the HTML pages are written by write_figures()).
struct Figures {
  /// One bar per module at the baseline's peak, segments by memory category.
  report::SvgFigure per_module;
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// Paths of the written figures and profiles.
struct FigurePaths {
  std::string per_module_svg;  ///< profile_per_module.svg
  std::string timeline_html;   ///< the baseline's memory timeline, stacks on hover
  std::string trace_html;      ///< the baseline's trace page
  std::string baseline_dir;    ///< write_profile() of the baseline (snapshot, trace, tables)
  std::string recompute_dir;   ///< … of the checkpointed run
};

/// Writes make_figures() and both runs' profiles into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error or vramlab::UsageError when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

/// \p value bytes in binary units ("1.50 GiB"); a negative value reads as 0.
std::string bytes(int64_t value);

}  // namespace vramlab::lesson07
