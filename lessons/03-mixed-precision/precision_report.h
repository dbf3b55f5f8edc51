/// \file
/// \brief Lesson 03's report: every precision trained on one model (loss, loss scale, skipped
/// steps, bytes per category beside the estimator's), the gradients' exponents against fp16's and
/// bf16's ranges, gradient accumulation, and the precisions at scale on meta, as tables, JSON and
/// figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/svg_plot.h"
#include "lessons/03-mixed-precision/measure_precision.h"

namespace vramlab::lesson03 {

/// What the lesson runs.
struct LessonSettings {
  RunSettings run;  ///< the model and the device of the mode table.
  /// The static scale of the overflow run (inf steps skipped, the scale never adapts); 0: no
  /// such run.
  double overflow_scale = 0.0;
  /// The static scale below 1 of the underflow run: the loss times 2^-12 makes every gradient
  /// 4096 times smaller, as small as the gradients fp16 flushes in deeper networks
  /// (Micikevicius et al. 2018, §3.2), and shows what fp16 without a scaler then does; 0: no
  /// such run.
  double underflow_scale = 0.0;
  bool accumulation = true;  ///< run the accumulation table (needs a computing device).
  bool scale = true;         ///< run the meta table (meta_model at meta_seq, B = 1).
  ModelConfig meta_model;    ///< the model at scale.
  int64_t meta_seq = 512;    ///< its T.
};

/// The gradient exponents of one run against the fp16 range.
struct UnderflowView {
  std::string run;               ///< the mode label whose last gradients these are.
  double scale = 1.0;            ///< what the stored gradients were multiplied by.
  ExponentHistogram histogram;   ///< log2 of the stored values.
  double flush_share = 0.0;      ///< nonzero values that would be 0 in fp16 as stored.
  double subnormal_share = 0.0;  ///< values among fp16's subnormals as stored.
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;            ///< as run.
  double entropy_rate_nats = 0.0;     ///< the loss floor of the synthetic chain.
  double unigram_entropy_nats = 0.0;  ///< what a context-free model reaches.
  std::vector<ModeRun> runs;          ///< the mode table, fp32 first.
  /// fp32's last gradients without a scale, then scaled by 2^16 (what GradScaler starts with),
  /// then mixed-fp16's as stored (scaled by its loss scale); empty on meta.
  std::vector<UnderflowView> underflow;
  double fp32_zero_share = 0.0;               ///< fp32's last gradients that are exactly 0.
  double fp16_unscaled_zero_share = 0.0;      ///< the same for mixed-fp16 without a scaler.
  std::vector<AccumulationRow> accumulation;  ///< K = 1, 2, 4, 8 and an unequal split.
  std::vector<ModeRun> meta;                  ///< every precision at scale (may be empty).
  std::vector<RoundTripError> round_trip;     ///< N(0, 1) through bf16 and f16.
};

/// The mode table's runs, in order: fp32, bf16, mixed-bf16, mixed-fp16 (dynamic), mixed-fp16
/// without a scaler, with overflow_scale > 0 mixed-fp16 at static:overflow_scale, and with
/// underflow_scale > 0 mixed-fp16 at static:underflow_scale.
/// \param settings the lesson's settings. \return the specs.
std::vector<ModeSpec> mode_specs(const LessonSettings& settings);

/// Runs everything the settings ask for.
/// \param settings the lesson's settings.
/// \param progress if not null, told one line per run (for the terminal).
/// \return the lesson. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when a run does not fit its device.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// \param lesson the runs. \return the JSON object of `--json` (keys in precision_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's three figures.
struct Figures {
  report::SvgFigure loss_curves;  ///< the loss per step of every mode.
  report::SvgFigure loss_scale;   ///< the scale per step, skipped steps marked.
  report::SvgFigure exponents;    ///< the histogram of log2 |g| with the 16-bit limits.
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// Paths of the written figures.
struct FigurePaths {
  std::string loss_curves_svg;  ///< loss_curves.svg
  std::string loss_scale_svg;   ///< loss_scale.svg
  std::string exponents_svg;    ///< gradient_exponents.svg
};

/// Writes make_figures() into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

}  // namespace vramlab::lesson03
