/// \file
/// \brief Lesson 05's runs and report: ZeRO-Offload on a small model on `sim` (what the device and
/// the host hold, what crosses the link, overlap on and off, the losses against no offload), the
/// host link swept on `meta` beside ZeRO-Infinity's efficiency model, one step's streams as a
/// trace, and the large models the tutorials name (13B on one 32 GB device, 7B's memory saved and
/// time lost), the delayed parameter update's time saved and loss curve, as tables, JSON and
/// three figures (its claims: claims.json, which LessonMain
/// evaluates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/amp/precision_policy.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/report/svg_plot.h"
#include "lessons/05-offload/offload_runs.h"

namespace vramlab::lesson05 {

/// What the lesson runs.
struct LessonSettings {
  ModelConfig model;      ///< the small model trained on device.
  int64_t batch = 4;      ///< B.
  int64_t seq = 64;       ///< T.
  int64_t steps = 3;      ///< per run (≥ 2; the last is measured).
  memory::Device device;  ///< a sim device with a link.
  amp::Precision precision = amp::Precision::mixed_bf16;  ///< 16-bit gradients and parameters.
  uint64_t seed = 1;                                      ///< weights and tokens.
  ModelConfig sweep_model;                                ///< the link sweep's model, on meta.
  memory::Device sweep_device;                            ///< a meta preset: its roofline and peak.
  int64_t sweep_batch = 1;                                ///< its B.
  int64_t sweep_seq = 4096;                               ///< its T.
  std::vector<double> links_gbps = {4, 8, 16, 32, 64, 128};  ///< the link, each direction.
  /// The timeline's link: one step of the sweep's model at it, overlap on and off, every kernel
  /// and copy on the stream clock's lanes.
  double timeline_link_gbps = 16;
  bool scale = true;  ///< run the large models on meta (13B's fit, 7B's cost).
  /// The delayed parameter update's loss curves: the small model this many steps, updated at
  /// once and delayed from each step of dpu_from (ZeRO-Offload's experiments start at 40).
  int64_t dpu_steps = 40;
  std::vector<int64_t> dpu_from = {5, 20};  ///< `--offload-dpu`'s first delayed steps (≥ 1).
  /// Its time: the sweep's model at this link, updated at once and delayed from step 2.
  double dpu_link_gbps = 32;
  /// Activation offload at scale: the sweep's model at this B (T = sweep_seq, flash attention,
  /// the optimizer offloaded under ZeRO-2) with its activations kept, recomputed, offloaded, and
  /// both, at activation_link_gbps.
  int64_t activation_batch = 4;
  double activation_link_gbps = 32;  ///< see activation_batch
  /// The small model's run with its optimizer's states on NVMe writes its files here
  /// (`--nvme-path`); empty: a directory of its own in the system's temporary directory.
  std::string nvme_path;
};

/// One link bandwidth of the sweep: the same step with overlap on and off, and the model.
struct SweepPoint {
  double link_gbps = 0.0;   ///< each direction.
  RunResult on;             ///< gradients streamed during the backward.
  RunResult off;            ///< everything copied after the backward.
  /// The same with the update delayed from step 2 (`--offload-dpu 2`), overlap on; 3 steps, so
  /// that the last is a steady one.
  RunResult delayed_on;
  RunResult delayed_off;  ///< delayed_on with overlap off.
  /// Overlap on, updated at once, the parameters copied back tile by tile as the host's update
  /// finishes each (`--offload-copy-back tiled`).
  RunResult tiled;
  double model_efficiency;  ///< ZeRO-Infinity's ait·bw / (ait·bw + peak) for 4Ψ bytes.
};

/// A run at scale with the name the claims select it by.
struct ScaleRun {
  std::string id;     ///< e.g. "13b-offload-32gib" (no spaces: a claims selector's value).
  std::string model;  ///< its model's name.
  RunResult run;      ///< what it held and spent.
};

/// ZeRO-Offload's delayed parameter update (`--offload-dpu`): what it saves and what it changes.
struct DelayedUpdate {
  RunResult at_once;               ///< the small model on sim, settings.dpu_steps steps.
  std::vector<RunResult> delayed;  ///< the same, delayed from each of settings.dpu_from.
  RunResult time_at_once;          ///< the sweep's model at settings.dpu_link_gbps, 4 steps.
  RunResult time_delayed;  ///< the same, delayed from step 2 (its last step is a steady one).
};

/// Activation offload (`--offload-activations on`): the small model on sim with its activations
/// kept and offloaded (the same losses; the bytes against the estimator), and the sweep's model
/// where its activations do not fit (LessonSettings::activation_batch).
struct ActivationOffload {
  std::vector<RunResult> small;  ///< kept, offloaded.
  std::vector<RunResult> large;  ///< kept, recomputed, offloaded, recomputed and offloaded.
};

/// Everything the lesson shows.
struct Lesson {
  LessonSettings settings;        ///< as run.
  std::vector<RunResult> runs;    ///< the small model: no offload, overlap on, overlap off.
  std::vector<SweepPoint> sweep;  ///< one per link.
  SweepPoint timeline;            ///< at settings.timeline_link_gbps, with the last step's spans.
  /// The timeline's step under ZeRO-3 with the parameters offloaded too, prefetched: the
  /// "parameter fetch" lane beside the others.
  RunResult timeline_fetched;
  std::vector<ScaleRun> scale;    ///< with settings.scale.
  DelayedUpdate dpu;              ///< the delayed parameter update.
  ActivationOffload activations;  ///< activation offload.
};

/// Runs everything the settings ask for.
/// \param settings the lesson's settings. \param progress if not null, told one line per run.
/// \return the lesson. \throws vramlab::UsageError for bad settings.
Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&) = nullptr);

/// \param lesson the runs. \return the JSON object of `--json` (keys in offload_report.cpp).
nlohmann::json to_json(const Lesson& lesson);

/// \param lesson the runs. \param colour ANSI colours. \return the tables and notes.
std::string render_text(const Lesson& lesson, bool colour);

/// \param lesson the runs. \return the efficiency against the link: overlap on and off, measured,
/// and ZeRO-Infinity's model.
report::SvgFigure sweep_figure(const Lesson& lesson);

/// \param lesson the runs. \return the small model's loss per step, updated at once and delayed
/// from each first step.
report::SvgFigure dpu_loss_figure(const Lesson& lesson);

/// \param lesson the runs. \return the timeline's step with overlap on, with overlap off and
/// under ZeRO-Infinity, each a process of a Chrome trace with one lane per stream (its kernels and
/// copies).
nlohmann::json timeline_trace(const Lesson& lesson);

/// The figures' paths.
struct FigurePaths {
  std::string sweep_svg;      ///< offload_link_sweep.svg
  std::string timeline_html;  ///< offload_streams.html (the trace page of timeline_trace())
  std::string dpu_svg;        ///< offload_dpu_losses.svg
};

/// Writes sweep_figure(), timeline_trace() and dpu_loss_figure() into \p out_dir (created if
/// needed). \return their paths. \throws std::runtime_error when one cannot be written.
FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir);

}  // namespace vramlab::lesson05
