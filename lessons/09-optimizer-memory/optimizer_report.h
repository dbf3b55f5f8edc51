/// \file
/// \brief Lesson 09's report: every optimizer trained on one small model (losses, final loss
/// against AdamW's), the bytes each keeps in two precisions (measured three ways beside the
/// estimator), 8-bit AdamW's quantisation error over training, the model states of large models
/// on meta, as tables, JSON and figures (its claims: claims.json, which LessonMain evaluates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/svg_plot.h"
#include "lessons/09-optimizer-memory/measure_optimizers.h"

namespace vramlab::lesson09 {

/// The largest final-loss gap to AdamW's (relative) that counts as training as well as AdamW.
inline constexpr double kFinalLossTolerance = 0.05;

/// What the lesson runs.
struct LessonSettings {
  RunSettings train;    ///< the training runs (every optimizer, settings.train.precision).
  LearningRates rates;  ///< one per family.
  /// Which optimizers, in table order (default: all of kOptimizers).
  std::vector<estimate::Optimizer> optimizers{kOptimizers.begin(), kOptimizers.end()};
  /// The second precision whose bytes are measured with one step per optimizer (mixed-bf16 beside
  /// an fp32 training run); nothing when it equals the training precision.
  amp::Precision compare_precision = amp::Precision::mixed_bf16;
  bool scale = true;                      ///< measure the large models on meta.
  std::vector<ModelConfig> scale_models;  ///< e.g. llama2-7b and llama2-70b.
  /// Their precisions: fp32, pure bf16 (the states take the parameters' type) and mixed-bf16.
  std::vector<amp::Precision> scale_precisions = {amp::Precision::fp32, amp::Precision::bf16,
                                                  amp::Precision::mixed_bf16};
};

/// One optimizer of one large model in one precision: a one-step meta run.
struct ScaleRun {
  std::string model;  ///< its name.
  OptimizerRun run;   ///< what it kept.
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;             ///< as run.
  std::vector<OptimizerRun> training;  ///< one per optimizer, settings.train.steps steps.
  std::vector<OptimizerRun> compared;  ///< one step per optimizer in compare_precision.
  std::vector<ScaleRun> scale;         ///< model × precision × optimizer on meta.
  double entropy_rate_nats = 0.0;      ///< the loss floor of the token stream.
  double unigram_entropy_nats = 0.0;   ///< what a model ignoring the context reaches.
};

/// Runs everything the settings ask for.
/// \param settings the lesson's settings.
/// \param progress if not null, told one line per run (for the terminal).
/// \return the lesson. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when a run does not fit its device.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// \param lesson the runs. \param optimizer one of them. \return its training run, or null.
const OptimizerRun* find_training(const Lesson& lesson, estimate::Optimizer optimizer);
/// \param lesson the runs. \param model a scale model's name. \param precision a precision.
/// \param optimizer an optimizer. \return the meta run, or null.
const OptimizerRun* find_scale(const Lesson& lesson, const std::string& model,
                               amp::Precision precision, estimate::Optimizer optimizer);
/// \param lesson the runs. \param optimizer one of them. \return (its final loss − AdamW's) /
/// AdamW's, or NaN without both runs.
double final_loss_gap(const Lesson& lesson, estimate::Optimizer optimizer);

/// \param lesson the runs. \return the JSON object of `--json` (keys in optimizer_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's two figures.
struct Figures {
  /// The first scale model's model states per optimizer, fp32 and mixed-bf16, stacked (weights,
  /// gradients, master, states, absmax), labelled in bytes per parameter; the small model's when
  /// the lesson ran no scale.
  report::SvgFigure bytes;
  report::SvgFigure losses;  ///< every optimizer's loss curve (a moving mean), the floor dashed.
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// Paths of the written figures.
struct FigurePaths {
  std::string bytes_svg;   ///< optimizer_bytes_per_param.svg
  std::string losses_svg;  ///< optimizer_loss_curves.svg
};

/// Writes make_figures() into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

}  // namespace vramlab::lesson09
