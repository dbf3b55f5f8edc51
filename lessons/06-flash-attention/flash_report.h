/// \file
/// \brief Lesson 06's report: the attention core naive against flash over a sweep of sequence
/// lengths (peak and saved bytes, time, the largest differences of the output and gradients), a
/// small model trained with each kernel, the per-layer saved bytes of a large model on meta, the
/// causal tiling of one (batch, head), as tables, JSON and figures (its claims: claims.json,
/// which LessonMain evaluates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/svg_plot.h"
#include "kernels/cpu/flash_attention.h"
#include "lessons/06-flash-attention/measure_attention.h"

namespace vramlab::lesson06 {

/// The largest |flash − naive| accepted, relative to the largest |naive| of the same tensor: the
/// two kernels sum the same f32 products in different orders (tile by tile with rescaling against
/// row by row), so they differ by a few f32 roundings of values of that size.
inline constexpr double kOutTolerance = 5e-6;
/// The same for dq, dk, dv: each sums T products of recomputed probabilities.
inline constexpr double kGradTolerance = 2e-5;

/// What the lesson runs.
struct LessonSettings {
  std::vector<int64_t> seqs = {512, 1024, 2048, 4096, 8192};  ///< the sweep's T, ascending.
  CoreShape shape;                                            ///< the heads of the sweep.
  memory::Device device;  ///< where the sweep computes (sim by default).
  /// The longest T at which naive attention is computed (and timed); above it its memory is
  /// measured on meta, which allocates the same tensors without running a kernel.
  int64_t naive_max_seq = 8192;
  uint64_t seed = 1;        ///< the sweep's inputs and the training run's weights.
  bool training = true;     ///< run the training comparison.
  TrainSettings train;      ///< its model and steps.
  bool scale = true;        ///< run the at-scale table on meta.
  ModelConfig scale_model;  ///< its model (B = 1, fp32).
  std::vector<int64_t> scale_seqs = {4096, 8192, 32768};  ///< its T.
  int64_t tiling_seq = 256;                               ///< T of the tiling figure.
  kernels::cpu::FlashTiles tiles;                         ///< the tiles it draws.
};

/// One T of the sweep.
struct SeqRow {
  int64_t seq = 0;        ///< T.
  CoreRun naive;          ///< on the device, or on meta above naive_max_seq (no time, no outputs).
  CoreRun flash;          ///< on the device.
  bool compared = false;  ///< both computed: the differences below are measured.
  double max_abs_diff_out = 0.0;    ///< max |out_flash − out_naive|.
  double max_abs_diff_grads = 0.0;  ///< max over dq, dk, dv of |g_flash − g_naive|.
  double max_abs_out = 0.0;         ///< max |out_naive|: the scale of its tolerance.
  double max_abs_grads = 0.0;       ///< max |g_naive| over dq, dk, dv.
};

/// One T of the at-scale table: one layer's saved bytes from a meta training step.
struct ScaleRow {
  int64_t seq = 0;    ///< T (B = 1).
  TrainingRun naive;  ///< one meta step with naive attention.
  TrainingRun flash;  ///< one meta step with flash attention.
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;            ///< as run.
  std::vector<SeqRow> rows;           ///< the sweep.
  std::vector<TrainingRun> training;  ///< naive then flash (empty without training).
  std::vector<ScaleRow> scale;        ///< the at-scale table (may be empty).
  /// Claim #80's shape (B = 8, H = 16, T = 4096) on meta: the bytes of one (B, H, T, T) f32
  /// tensor as the runtime allocates it.
  int64_t claim80_att_bytes = 0;
  kernels::cpu::FlashTileCounts tiling;  ///< flash_tile_counts(tiling_seq, tiles).
};

/// Runs everything the settings ask for.
/// \param settings the lesson's settings.
/// \param progress if not null, told one line per run (for the terminal).
/// \return the lesson. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when a run does not fit its device.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// \param row one T. \return naive peak / flash peak.
double peak_ratio(const SeqRow& row);
/// \param row one T. \return (naive saved + scratch) / (flash saved + scratch): the memory the
/// kernel needs beyond q, k, v, out and their gradients, which grows ∝ T.
double extra_ratio(const SeqRow& row);
/// \param lesson the runs. \param seq a T. \return its row, or null when the sweep has none.
const SeqRow* find_row(const Lesson& lesson, int64_t seq);

/// \param lesson the runs. \return the JSON object of `--json` (keys in flash_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's two figures.
struct Figures {
  report::SvgFigure memory;  ///< peak and saved bytes against T, log-log, naive and flash.
  report::SvgFigure tiling;  ///< the (query tile, key tile) grid of one (batch, head).
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// The tiling figure alone: cells coloured computed in full, partial (on the diagonal, masked
/// per element) or skipped (above the diagonal), with the counts in the legend.
/// \param seq T ≥ 1. \param tiles the tile sizes. \return the figure and its text boxes.
report::SvgFigure tiling_figure(int64_t seq, const kernels::cpu::FlashTiles& tiles);

/// Paths of the written figures.
struct FigurePaths {
  std::string memory_svg;  ///< attention_memory.svg
  std::string tiling_svg;  ///< flash_tiling.svg
};

/// Writes make_figures() into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

}  // namespace vramlab::lesson06
