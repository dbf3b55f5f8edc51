// Lesson 05's runs: one rank trained with or without the optimizer offloaded, measured (see
// offload_runs.h).
#include "lessons/05-offload/offload_runs.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "common/dist/launch_ranks.h"
#include "common/memory/oom_error.h"
#include "common/nn/runtime.h"
#include "common/optim/state_swap.h"
#include "common/platform/errors.h"

namespace vramlab::lesson05 {

namespace {

bool same(const train::ModelStateMeasured& a, int64_t parameters, int64_t gradients,
          int64_t optimizer_states) {
  return a.parameters == parameters && a.gradients == gradients &&
         a.optimizer_states == optimizer_states;
}

// PyTorch's message up to the request ("CUDA out of memory. Tried to allocate 24.24 GiB"): the
// rest (capacity, free, reserved) is the allocator's state, which the row's bytes show.
std::string request_of(const std::string& text) {
  const size_t at = text.find("Tried to allocate");
  const size_t end = at == std::string::npos ? text.find('\n') : text.find(". ", at);
  return text.substr(0, end);
}

// Trains spec.steps steps on this rank and fills \p r; the last step's copies, clock and losses.
void train_rank(const RunSpec& spec, train::TrainOptions options, const dist::LaunchedRank& rank,
                RunResult& r) {
  options.set_groups(rank.groups.data_parallel, rank.groups.tensor_parallel);
  nn::Runtime runtime(spec.device);
  train::Trainer trainer(runtime, options);
  train::BackwardTimeline timeline(runtime.clock());
  trainer.add_observer(timeline);
  const optim::StateSwap* swap = trainer.optimizer().state_swap();
  const stream::StreamId drive = trainer.optimizer().nvme_lane();
  const nn::ParameterStore& store = trainer.model().parameters();
  for (int64_t s = 1; s <= spec.steps; ++s) {
    const nn::TransferStats before = runtime.transfer_stats();
    const optim::SwapTraffic swapped = swap ? swap->traffic() : optim::SwapTraffic{};
    const int64_t parameters_read = store.nvme_read_bytes();
    const int64_t parameters_written = store.nvme_write_bytes();
    const double drive_busy = swap ? runtime.clock().busy_seconds(drive) : 0.0;
    const bool last = s == spec.steps;
    if (last) {
      // The step's own start: the trainer synchronises the device's streams as it begins.
      r.last_step_start_seconds = runtime.clock().synchronize();
      runtime.clock().keep_spans(spec.keep_spans);
    }
    const train::StepResult step = trainer.step();
    r.losses.push_back(step.loss);
    if (!last) {
      r.previous_delayed_update_seconds = step.delayed_update_seconds;
      continue;
    }
    if (spec.keep_spans) {
      r.last_step_spans = runtime.clock().spans();
      for (int64_t id = 0; id < runtime.clock().stream_count(); ++id)
        r.stream_names.push_back(runtime.clock().stream_name(id));
      runtime.clock().keep_spans(false);
    }
    const nn::TransferStats& after = runtime.transfer_stats();
    r.host_to_device_bytes = after.host_to_device_bytes - before.host_to_device_bytes;
    r.device_to_host_bytes = after.device_to_host_bytes - before.device_to_host_bytes;
    r.copy_seconds = (after.host_to_device_seconds - before.host_to_device_seconds) +
                     (after.device_to_host_seconds - before.device_to_host_seconds);
    r.step_seconds = step.clock_seconds;
    r.host_update_seconds = step.host_update_seconds;
    r.exposed_copy_seconds = step.exposed_copy_seconds;
    r.delayed_update_seconds = step.delayed_update_seconds;
    r.activation_peak_bytes = step.activation_peak_bytes;
    r.activation_bytes_after_forward = step.activation_bytes_after_forward;
    r.backward_units = timeline.units();
    r.backward_end_seconds = timeline.backward_end_seconds();
    if (swap != nullptr) {
      // The parameters' files too, with --offload-param-device nvme (one drive).
      r.nvme_read_bytes = swap->traffic().read_bytes - swapped.read_bytes +
                          store.nvme_read_bytes() - parameters_read;
      r.nvme_write_bytes = swap->traffic().write_bytes - swapped.write_bytes +
                           store.nvme_write_bytes() - parameters_written;
      r.nvme_seconds = runtime.clock().busy_seconds(drive) - drive_busy;
    }
  }
  if (swap != nullptr) {
    r.nvme_bytes = swap->file_bytes() + store.nvme_file_bytes();
    if (const storage::NvmeTier* tier = swap->tier()) {
      r.nvme_read_bytes_per_s = tier->stats().read_bytes_per_s();
      r.nvme_write_bytes_per_s = tier->stats().write_bytes_per_s();
    }
  }
  trainer.remove_observer(timeline);
  r.schedule = trainer.schedule();
  r.parameter_bytes = trainer.model().parameters().values().bytes();
  r.device = trainer.model_state();
  if (const std::optional<train::ModelStateMeasured> host = trainer.host_model_state())
    r.host = *host;
  // On NVMe the host holds a unit's parameters only while a fetch or the update uses them: what
  // it needs is the most it held at once.
  if (store.values_on_nvme())
    r.host.parameters = trainer.optimizer_runtime()
                            .allocator()
                            .category_stats()
                            .requested(memory::MemoryCategory::parameter)
                            .peak;
  r.pinned_model_state_requested = trainer.host_pinned_model_state(false).total();
  r.pinned_model_state_blocks = trainer.host_pinned_model_state(true).total();
  r.device_peak_bytes = trainer.memory_report().peak_total_bytes;
  r.pinned_peak_bytes = runtime.host_allocator().host_memory_stats().allocated_bytes.peak;
  const memory::CategoryStats pinned = runtime.host_allocator().category_stats();
  r.pinned_activation_bytes = pinned.of(memory::MemoryCategory::activation).peak;
  r.pinned_activation_requested_bytes = pinned.requested(memory::MemoryCategory::activation).peak;
}

}  // namespace

bool RunResult::equals_estimate() const {
  return same(device, estimate.parameters.bytes, estimate.gradients.bytes,
              estimate.optimizer_states.bytes) &&
         same(host, estimate.host_parameter_bytes, estimate.host_gradient_bytes,
              estimate.host_optimizer_state_bytes) &&
         nvme_bytes == estimate.nvme_optimizer_state_bytes + estimate.nvme_parameter_bytes &&
         pinned_model_state_requested == estimate.host_pinned_requested_bytes &&
         pinned_model_state_blocks == estimate.host_pinned_bytes;
}

RunSpec on_nvme(RunSpec spec, std::string label) {
  spec.label = std::move(label);
  spec.train.plan.parallel.zero = plan::ZeroStage::parameters;
  spec.train.plan.parallel.prefetch = true;
  spec.train.plan.offload.optimizer = true;
  spec.train.plan.offload.parameters = true;
  spec.train.plan.offload.optimizer_device = plan::OffloadDevice::nvme;
  return spec;
}

bool RunResult::activations_equal_estimate() const {
  return activation_bytes_after_forward == estimate.runtime_bytes_after_forward &&
         pinned_activation_bytes == estimate.host_activation_bytes &&
         pinned_activation_requested_bytes == estimate.host_activation_requested_bytes;
}

RunResult run(const RunSpec& spec) {
  if (spec.steps < 2)
    throw UsageError("--steps must be >= 2 (the last step is measured), got " +
                     std::to_string(spec.steps));
  RunResult r;
  r.label = spec.label;
  r.device_name = spec.device.name();
  r.offload = spec.train.plan.offload.optimizer;
  r.overlap = spec.train.plan.offload.overlap;
  r.activations_offloaded = spec.train.plan.activations.offload;
  r.options = spec.train;
  r.options.groups = {};
  r.link_bytes_per_s = spec.device.spec.host_to_device_bytes_per_s;
  r.estimate = train::estimate_step(spec.train, 1, 1);
  // A ZeRO stage needs its data-parallel group, here of one simulated rank; plain training runs
  // without one.
  const bool zero = spec.train.plan.parallel.zero != plan::ZeroStage::ddp;
  const dist::LaunchSpec ranks{zero ? 1 : 0, 1, spec.device.kind == memory::DeviceKind::meta};
  train::TrainOptions options = spec.train;
  // The states' files, on a device that makes them: a directory of the run's own unless given.
  std::string made;
  if (options.plan.offload.optimizer_device == plan::OffloadDevice::nvme &&
      spec.device.kind != memory::DeviceKind::meta && options.nvme.files.path.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "vramlab-lesson05-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw UsageError("cannot make a directory for the NVMe run's files: " + pattern);
    made = options.nvme.files.path = pattern;
  }
  try {
    dist::launch_ranks(ranks,
                       [&](const dist::LaunchedRank& rank) { train_rank(spec, options, rank, r); });
  } catch (const memory::OutOfMemoryError& e) {
    r.fits = false;
    r.out_of_memory = request_of(e.what());
  } catch (...) {
    if (!made.empty()) std::filesystem::remove_all(made);
    throw;
  }
  if (!made.empty()) std::filesystem::remove_all(made);
  return r;
}

}  // namespace vramlab::lesson05
