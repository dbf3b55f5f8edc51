/// \file
/// \brief Lesson 04's runs, tables, JSON and figures: the four strategies trained on a
/// small model by N ranks (under `mpirun`, or simulated), then at scale on `meta` with simulated
/// ranks: the ZeRO paper's Figure 1 (7.5B over 64 ranks), the seeds' Llama 2 7B over 8 ranks,
/// and Llama 2 70B over 8 ranks of 80 GB with ZeRO-3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/svg_plot.h"
#include "lessons/04-zero/zero_runs.h"

namespace vramlab::lesson04 {

/// The largest relative difference between a strategy's loss and DDP's, at any step, that still
/// counts as equal when the reductions' order is not fixed (MPI with more than two ranks): a few
/// ulps of the bf16 gradients, far below the step-to-step change of the loss.
inline constexpr double kLossTolerance = 1e-3;

/// What the lesson runs.
struct LessonSettings {
  RunSettings train;  ///< the small model, trained by every strategy.
  int64_t ranks = 4;  ///< N when the ranks are simulated (under mpirun: the world's size).
  std::vector<dist::ZeroStage> stages{kStages.begin(), kStages.end()};  ///< which strategies.
  bool scale = true;                                                    ///< the meta runs.
  ModelConfig figure1_model;                                            ///< the ZeRO paper's 7.5B.
  int64_t figure1_ranks = 64;                                           ///< its Nd.
  ModelConfig seed_model;                        ///< the seeds' 7B (Llama 2 7B).
  int64_t seed_ranks = 8;                        ///< their 8 GPUs.
  ModelConfig big_model;                         ///< Llama 2 70B.
  int64_t big_ranks = 8;                         ///< the seed's 8 GPUs.
  uint64_t big_capacity_bytes = 80'000'000'000;  ///< each GPU's memory (80 GB).
  int64_t big_seq = 4096;                        ///< the 70B run's T (B = 1, blocks recomputed).
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;              ///< as run.
  std::string launch;                   ///< how the ranks ran (mpirun, simulated, why).
  std::vector<StrategyRun> training;    ///< one per stage, the small model.
  std::vector<StrategyRun> figure1;     ///< 7.5B over figure1_ranks, two steps each, meta.
  std::vector<StrategyRun> seed_bf16;   ///< Llama 2 7B over seed_ranks, pure bf16 (8 B/param).
  std::vector<StrategyRun> seed_mixed;  ///< the same, mixed-bf16 (16 B/param).
  std::vector<StrategyRun> big;         ///< Llama 2 70B over big_ranks, ZeRO-3, meta.
};

/// The ZeRO paper's 7.5B: a GPT of 36 layers, C = 4096, 32 heads, GPT-2's vocabulary (Ψ =
/// 7.46e9; the paper's Figure 1 rounds Ψ to 7.5B).
ModelConfig figure1_model();

/// Trains every stage of settings.stages on the small model: as this process's rank of the world
/// `mpirun` started when \p under_mpirun (rank 0 ends with every rank's numbers), else on
/// settings.ranks simulated ranks. \param settings the lesson. \param under_mpirun see above.
/// \param progress told one line per run (may be null). \return one run per stage.
/// \throws as run_rank.
std::vector<StrategyRun> run_training(const LessonSettings& settings, bool under_mpirun,
                                      void (*progress)(const std::string&));

/// Runs the meta runs of settings.scale into \p lesson (simulated ranks in this process).
/// \param lesson its settings say what. \param progress as run_training's.
void run_scale(Lesson& lesson, void (*progress)(const std::string&));

/// \param runs one per stage. \param stage the stage. \return its run, or null.
const StrategyRun* find(const std::vector<StrategyRun>& runs, dist::ZeroStage stage);

/// \param lesson the runs. \param stage a stage. \return the largest |loss − DDP's loss| / DDP's
/// loss over the steps (0 when bitwise equal), NaN without both runs.
double loss_difference(const Lesson& lesson, dist::ZeroStage stage);
/// \param lesson the runs. \param stage a stage. \return every step's loss bitwise DDP's.
bool losses_bitwise_equal(const Lesson& lesson, dist::ZeroStage stage);
/// \param lesson the runs. \return whether the reductions' order is fixed (simulated ranks, or
/// two MPI ranks), so the page promises bitwise equality.
bool reduction_order_fixed(const Lesson& lesson);

/// \param run one strategy. \return the object: {strategy, world_size, per_rank:
/// [{rank, model_state_bytes: {parameters, gradients, optimizer_states}, peak_bytes,
/// bytes_sent}], losses}, with a few keys more (the estimator, traffic classes, the paper's
/// volume).
nlohmann::json run_to_json(const StrategyRun& run);
/// \param lesson the runs. \return the `--json` object: {lesson, world_size, backend, model,
/// runs: [run_to_json...], scale: {...}} (LessonMain adds claims, exercises and figures).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// The lesson's three figures.
struct Figures {
  /// Per-rank model states by category for each strategy: the 7.5B over 64 ranks (the ZeRO
  /// paper's Figure 1) when the lesson ran at scale, else the small model.
  report::SvgFigure memory;
  report::SvgFigure communication;  ///< bytes sent per rank per step, measured and the paper's.
  report::SvgFigure timeline;       ///< ZeRO-3 rank 0, one step: live bytes per category.
};

/// \param lesson the runs. \return the figures.
Figures make_figures(const Lesson& lesson);

/// Paths of the written figures.
struct FigurePaths {
  std::string memory_svg;         ///< zero_memory_per_rank.svg
  std::string communication_svg;  ///< zero_communication.svg
  std::string timeline_svg;       ///< zero3_timeline.svg
};

/// Writes make_figures() into \p out_dir (created if needed).
/// \param lesson the runs. \param out_dir a folder. \return the paths.
/// \throws std::runtime_error when a file cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

/// \p bytes in decimal gigabytes with two decimals ("1.42 GB"), as the papers count them.
std::string gb(double bytes);

}  // namespace vramlab::lesson04
