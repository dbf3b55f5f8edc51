/// \file
/// \brief Lesson 05's measurements: one training run with or without the optimizer offloaded
/// (ZeRO-Offload, the trainer's `--offload optimizer`), what the device and the host held, what
/// crossed the host link in a step and how much of the step's clock it took.
///
/// Every run trains one rank: plain training, or with a ZeRO stage one simulated data-parallel
/// rank (DeepSpeed's ZeRO-Offload is stage 2 with offload_optimizer; at N = 1 stage 2 is plain
/// training whose offloaded run keeps no gradient on the device, but streams every gradient
/// shard as the backward makes it, so its overlap cannot be turned off). The figures of a step
/// are the last step's: the first one also stages the parameters on the host and makes the
/// states.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/recompute/recompute_schedule.h"
#include "common/stream/clock.h"
#include "common/train/backward_timeline.h"
#include "common/train/trainer.h"

namespace vramlab::lesson05 {

/// One run to measure.
struct RunSpec {
  std::string label;          ///< the row's name, e.g. "ZeRO-Offload, overlap on".
  train::TrainOptions train;  ///< model, plan (offload and overlap among it), B, T, seed.
  memory::Device device;      ///< where it trains (its spec's link sets the copies' time).
  int64_t steps = 2;          ///< optimizer steps (≥ 2: the last one is measured).
  /// Keep every kernel's and copy's span of the last step on the stream clock (for a timeline).
  bool keep_spans = false;
};

/// \p spec with its offloaded optimizer's states on NVMe (`--offload-optimizer-device nvme`):
/// ZeRO-3 with the parameters offloaded, each block prefetched (ZeRO-Infinity). On cpu and sim
/// its files go under train.nvme.files.path, or when that is empty under a directory run() makes
/// in the system's temporary directory and removes after.
RunSpec on_nvme(RunSpec spec, std::string label);

/// What one run held and spent.
struct RunResult {
  std::string label;        ///< RunSpec::label.
  std::string device_name;  ///< the device's name.
  bool fits = true;         ///< false: memory::OutOfMemoryError before the last step ended.
  /// When it did not fit: the error up to its request (PyTorch's "CUDA out of memory. Tried to
  /// allocate 24.24 GiB").
  std::string out_of_memory;
  bool offload = false;               ///< the optimizer offloaded.
  bool overlap = true;                ///< its gradients streamed during the backward.
  double link_bytes_per_s = 0.0;      ///< the host link, each direction (0: no link on the clock).
  train::ModelStateMeasured device;   ///< model states on the device after the last step.
  train::ModelStateMeasured host;     ///< on the host (zeros without offload).
  estimate::Estimate estimate;        ///< the estimator's for the same options, one rank.
  int64_t device_peak_bytes = 0;      ///< allocated bytes at their peak (rounded blocks).
  int64_t pinned_peak_bytes = 0;      ///< the pinned host tier's peak (blocks), all of it.
  /// Of host: what sits in the pinned pool (`--offload-pin-memory on`: the staged gradients and
  /// parameters, the fp32 master), as asked for and in its power-of-two blocks.
  int64_t pinned_model_state_requested = 0;
  int64_t pinned_model_state_blocks = 0;  ///< see pinned_model_state_requested
  int64_t host_to_device_bytes = 0;   ///< over the link in the last step.
  int64_t device_to_host_bytes = 0;   ///< over the link in the last step.
  double copy_seconds = 0.0;          ///< the last step's copies on the link, both directions.
  double step_seconds = 0.0;          ///< the last step on the device's clock.
  double host_update_seconds = 0.0;   ///< of step_seconds: the host's own work.
  double exposed_copy_seconds = 0.0;  ///< of step_seconds: copy time nothing hid.
  /// With `--offload-dpu`: the last step's update, on the host's own thread beside the next step
  /// (not in step_seconds).
  double delayed_update_seconds = 0.0;
  /// The step before the last one's delayed update: what ran beside the last step.
  double previous_delayed_update_seconds = 0.0;
  /// Saved activations (`--offload-activations on` when activations_offloaded): the store's
  /// bytes at their peak and when the last step's forward ended, on the device; and the pinned
  /// host blocks that held them at their peak (power-of-two rounded) and the bytes asked for.
  bool activations_offloaded = false;
  /// The options it trained with (no parallel groups: those lived only during the run).
  train::TrainOptions options;
  /// The recompute schedule the trainer made from them (what exercise 05.3 reads).
  recompute::RecomputeSchedule schedule;
  int64_t activation_peak_bytes = 0;              ///< see activations_offloaded
  int64_t activation_bytes_after_forward = 0;     ///< see activations_offloaded
  int64_t pinned_activation_bytes = 0;            ///< see activations_offloaded
  int64_t pinned_activation_requested_bytes = 0;  ///< see activations_offloaded
  std::vector<double> losses;         ///< per step, nats (0 on meta).
  /// The last step's backward: when each unit's gradients became final on the compute stream's
  /// clock and their bytes, and when it ended (what exercise 05.1 predicts the exposed time from).
  std::vector<train::BackwardTimeline::Unit> backward_units;
  double backward_end_seconds = 0.0;  ///< see backward_units.
  int64_t parameter_bytes = 0;        ///< the device's parameters (the copy back's bytes).
  /// With RunSpec::keep_spans: the last step's kernels and copies on the stream clock.
  std::vector<stream::Span> last_step_spans;
  std::vector<std::string> stream_names;  ///< the clock's streams, indexed by id.
  /// With the optimizer's states on NVMe (and the parameters', with --offload-param-device nvme):
  /// the files' bytes on the drive; what the last step read
  /// and wrote, and the drive's busy time on the clock then; with real files (cpu, sim) the
  /// tier's measured bandwidth over the whole run (0 on meta).
  int64_t nvme_bytes = 0;
  int64_t nvme_read_bytes = 0;            ///< see nvme_bytes
  int64_t nvme_write_bytes = 0;           ///< see nvme_bytes
  double nvme_seconds = 0.0;              ///< see nvme_bytes
  double nvme_read_bytes_per_s = 0.0;     ///< see nvme_bytes
  double nvme_write_bytes_per_s = 0.0;    ///< see nvme_bytes
  double last_step_start_seconds = 0.0;   ///< the clock's time when the last step began.

  /// \return the compute stream's share of the step: neither the host's work nor exposed copies.
  [[nodiscard]] double compute_seconds() const {
    return step_seconds - host_update_seconds - exposed_copy_seconds;
  }
  /// \return the device's model states and the estimator's agree to the byte, and so do the
  /// host's and the NVMe files' (model_state(), host_model_state(), estimate_step()).
  [[nodiscard]] bool equals_estimate() const;
  /// \return the store's bytes after the forward and the pinned activation blocks equal the
  /// estimator's (runtime_bytes_after_forward, host_activation_bytes and its requested bytes).
  [[nodiscard]] bool activations_equal_estimate() const;
};

/// Trains \p spec on one simulated rank and measures it; an out-of-memory error is a result (fits
/// = false), not an exception.
/// \throws vramlab::UsageError for options the trainer refuses, or steps < 2.
RunResult run(const RunSpec& spec);

}  // namespace vramlab::lesson05
