/// \file
/// \brief Lesson 02's report: every schedule run on one model (activation peak measured beside the
/// planner's prediction, allocator peak, step time, recompute share, gradients bitwise equal to
/// keeping everything), the largest batch each fits on a device, the same schedules at scale on
/// meta beside Korthikanti et al. 2022, int8 activation compression, as tables, JSON and figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/memory/device.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/svg_plot.h"
#include "lessons/02-checkpointing/measure_schedules.h"

namespace vramlab::lesson02 {

/// What the lesson runs.
struct LessonSettings {
  RunSettings run;  ///< the model and the device of the schedule table.
  /// The hand schedules, in table order (the budget row is added after them).
  std::vector<std::string> schedules = {"none", "full", "every:2", "every:4", "sqrt", "selective"};
  /// budget:X of the table; empty = half-way between the sqrt and none peaks (planner's).
  std::optional<int64_t> budget_bytes;
  memory::Device max_batch_device;  ///< where the largest batches are searched (a capacity).
  int64_t max_batch_limit = 256;    ///< the largest batch tried.
  bool scale = true;                ///< run the meta table (meta_model at meta_seq, B = 1).
  ModelConfig meta_model;           ///< the model at scale.
  int64_t meta_seq = 4096;          ///< its T.
  /// The depths of the table of saved-activation peaks as L grows (the run's model on meta).
  std::vector<int64_t> depths = {16, 64, 256};
  bool compression = true;          ///< run the int8 rows (needs a computing device).
};

/// One row of the schedule table.
struct PolicyRow {
  PolicyRun run;  ///< the measurements.
  /// Step 1's gradients and the parameters after the last step are bitwise those of `none`;
  /// empty on meta (nothing is computed).
  std::optional<bool> grads_bitwise_equal;
  double step_seconds = 0.0;  ///< median of run.step_seconds.
};

/// The largest batch one schedule fits on the max-batch device.
struct MaxBatchRow {
  std::string name;   ///< the schedule.
  int64_t batch = 0;  ///< B runs on the device and B + 1 does not (0: not even B = 1).
  /// For a sim device: the answer of the search on its meta twin (the same caching allocator and
  /// capacity, no kernels), which steps on the device then corrected to batch.
  std::optional<int64_t> meta_twin_batch;
};

/// One int8 row: the compressed run beside the fp32 run of the same schedule.
struct CompressionRow {
  std::string name;                        ///< e.g. "int8-block + full".
  std::string schedule;                    ///< the recompute schedule.
  std::string compression;                 ///< "int8" or "int8-block".
  int64_t activation_peak_bytes = 0;       ///< the store's peak, compressed.
  int64_t fp32_activation_peak_bytes = 0;  ///< the same schedule without compression.
  int64_t none_activation_peak_bytes = 0;  ///< `none`, fp32: the baseline of every saving.
  int64_t bytes_after_forward = 0;         ///< the store when the forward ended, compressed.
  /// estimate::runtime_bytes_after_forward(): the prediction of bytes_after_forward.
  int64_t predicted_bytes_after_forward = 0;
  double max_relative_grad_error = 0.0;  ///< max over tensors of ‖g_int8 − g‖ / ‖g‖, step 1.
  std::string worst_tensor;              ///< the tensor of that maximum.
  double median_relative_grad_error = 0.0;  ///< median over tensors.
  double loss = 0.0;                        ///< after the last step.
  double fp32_loss = 0.0;                   ///< `none`, fp32, after the same steps.
};

/// One schedule of a planner sweep (the trade-off figure).
struct TradeoffPoint {
  std::string name;                          ///< e.g. "budget:40MiB".
  int64_t activation_peak_bytes = 0;         ///< the planner's (equal to the runtime's).
  double recomputed_forward_fraction = 0.0;  ///< share of the forward re-run.
};

/// One schedule's saved-activation peak at one depth (the lesson's model with L layers, on meta).
struct DepthPoint {
  int64_t layers = 0;                 ///< L.
  std::string schedule;               ///< none, sqrt or full.
  int64_t activation_peak_bytes = 0;  ///< the store's peak.
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;                  ///< as run.
  int64_t budget_bytes = 0;                 ///< X of the budget row.
  std::string budget_note;                  ///< how X was chosen.
  std::vector<PolicyRow> policies;          ///< the schedule table, `none` first.
  std::vector<MaxBatchRow> max_batch;       ///< one per schedule.
  std::vector<PolicyRun> meta;              ///< the scale table (may be empty).
  std::vector<DepthPoint> depth;            ///< none, sqrt, full as L grows (with the scale table).
  std::vector<CompressionRow> compression;  ///< the int8 rows (may be empty).
  std::vector<TradeoffPoint> sweep;         ///< budget-optimal schedules at many budgets.
  int64_t least_activation_peak_bytes = 0;  ///< the smallest peak any schedule reaches.
};

/// Runs everything the settings ask for.
/// \param settings the lesson's settings.
/// \param progress if not null, told one line per measurement (for the terminal).
/// \return the lesson. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when a table schedule does not fit settings.run.device.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// \param lesson the runs. \return the JSON object of `--json` (keys in checkpoint_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's two figures.
struct Figures {
  report::SvgFigure memory_over_step;  ///< saved bytes phase by phase, a few schedules.
  report::SvgFigure tradeoff;          ///< activation peak vs recomputed share, with the frontier.
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// Paths of the written figures.
struct FigurePaths {
  std::string memory_over_step_svg;  ///< memory_over_step.svg
  std::string tradeoff_svg;          ///< tradeoff.svg
};

/// Writes make_figures() into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

}  // namespace vramlab::lesson02
