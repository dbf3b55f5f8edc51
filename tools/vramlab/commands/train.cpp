// `vramlab train`: trains a decoder-only transformer on a synthetic learnable token stream on a
// chosen device and reports loss and tokens/s per step, the median step time and the peak memory
// per category (from the caching allocator).
//
// --kernels picks what runs the step: the CPU kernels (default on cpu and sim), the CUDA kernels
// under the SIMT emulator on the same memory (cuda-emulated), or the CUDA kernels on a GPU (cuda,
// the only choice and the default on a cuda device).
//
//   vramlab train --model gpt2-tiny --steps 20
//   vramlab train --model gpt2-tiny --optimizer sgd-momentum --lr 0.1
//   vramlab train --layers 2 --hidden 128 --heads 4 --seq 64 --batch 4 --vocab 512
//                 --device sim:t4-16g --kernels cuda-emulated
//   vramlab train --model llama2-70b --batch 1 --seq 4096 --steps 1 --device meta --json
//   vramlab train --model gpt2-tiny --device cuda:0
//   vramlab train --model gpt2-tiny --recompute sqrt --dropout 0.1
//   vramlab train --model gpt2-tiny --steps 2 --device sim --profile prof
//                 (prof/: snapshot.pickle for memory_viz, trace.json for Perfetto, ops.txt, ...)
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/amp/loss_scale_spec.h"
#include "common/amp/precision_policy.h"
#include "common/dist/communicator.h"
#include "common/dist/launch_ranks.h"
#include "common/dist/mpi_communicator.h"
#include "common/dist/parallel_options.h"
#include "common/estimate/model_state_memory.h"
#include "common/estimate/recompute_costs.h"
#include "common/memory/device.h"
#include "common/memory/host_memory.h"
#include "common/memory/memory_category.h"
#include "common/memory/oom_error.h"
#include "common/model/model_config.h"
#include "common/model/model_flags.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/roofline.h"
#include "common/nn/runtime.h"
#include "common/optim/state_swap.h"
#include "common/plan/plan.h"
#include "common/plan/plan_flags.h"
#include "common/platform/errors.h"
#include "common/platform/flag_checks.h"
#include "common/platform/free_cores.h"
#include "common/platform/number_text.h"
#include "common/platform/printable.h"
#include "common/profile/profile_files.h"
#include "common/profile/profiler.h"
#include "common/recompute/recompute_schedule.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/progress_bar.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/snapshot/snapshot_pickle.h"
#include "common/stream/clock.h"
#include "common/train/sequence_lengths.h"
#include "common/train/trainer.h"
#include "tools/vramlab/commands.h"
#include "tools/vramlab/commands/function_names.h"

namespace vramlab::cli {

namespace {

using nlohmann::json;

struct TrainCommandOptions {
  ModelFlags model;
  std::shared_ptr<plan::PlanFlags> plan;  // the technique flags and --plan FILE
  std::optional<int64_t> seq, batch;
  int64_t vary_seq = 0;    // --vary-seq MIN: each step's T drawn from [MIN, T]; 0: fixed
  int64_t bucket_seq = 1;  // --bucket-seq N: each drawn T padded up to a multiple of N
  int64_t eval_batches = 0;       // --eval-batches M after the steps; 0: no evaluation
  std::string eval_grad = "off";  // --eval-grad on: the evaluation's forwards save for backward
  bool eval_keep_graphs = false;  // --eval-keep-graphs: `total_loss += loss` across the loop
  bool keep_outputs = false;      // --keep-outputs: the staged leak, every step's logits kept
  int64_t steps = 20;
  std::string device = "cpu";
  std::string kernels;  // empty: the device's default
  int64_t threads = 0;
  uint64_t seed = 1;
  std::optional<double> link_gbps;  // overrides the device's host link, both directions
  std::optional<double> memory_gbps;       // overrides the device's memory bandwidth
  std::optional<double> host_memory_gbps;  // a meta device's host, for an offloaded update
  // --offload-optimizer-device nvme: the drive's directory, requests and bandwidths
  std::string nvme_path, nvme_block_size, nvme_engine;
  std::optional<int64_t> nvme_queue_depth;
  std::optional<double> nvme_read_gbps, nvme_write_gbps;
  std::optional<std::string> peak_tflops;  // overrides some of its peaks: "fp32=19.5,bf16=312"
  int64_t simulate_ranks = 0;       // 0: one process, or the ranks mpirun started
  bool json = false;
  std::string profile_dir;  // empty: no profile
  bool profile_given = false;
  std::string profile_stacks = "on";
  bool profile_stacks_given = false;
  std::string snapshot_on_oom;  // empty: none
  bool snapshot_on_oom_given = false;
};

// What one data-parallel rank measured, for rank 0's per-rank table.
struct RankOutcome {
  int64_t rank = 0;
  train::ModelStateMeasured state;  // after the last step
  int64_t peak_bytes = 0;           // allocated_bytes.all.peak (rounded blocks)
  int64_t bytes_sent = 0;           // gradients + parameters, the last step
  int64_t tp_bytes_sent = 0;        // tensor parallelism's activations, the last step
  json summary;                     // the rank's --json summary (rank 0's is printed)
};

// Where a rank's profile goes: DIR itself for one process, DIR/rankR when there are ranks (each
// writes its own files; under mpirun every process does).
// This rank's number in the launch (data-parallel rank × t + tensor-parallel rank), or none for
// one process without ranks: what its per-rank files are named after.
std::optional<int64_t> launched_rank(const train::TrainOptions& options) {
  if (!options.groups.data_parallel && !options.groups.tensor_parallel) return std::nullopt;
  return options.groups.tensor_parallel
             ? options.groups.data_parallel->rank() * options.groups.tensor_parallel->world_size() +
                   options.groups.tensor_parallel->rank()
             : options.groups.data_parallel->rank();
}

std::string profile_directory(const TrainCommandOptions& o, const train::TrainOptions& options) {
  const std::optional<int64_t> rank = launched_rank(options);
  if (!rank) return o.profile_dir;
  return (std::filesystem::path(o.profile_dir) / ("rank" + std::to_string(*rank))).string();
}

// Checked before training, so a typo does not cost the run.
void check_profile_options(const TrainCommandOptions& o) {
  if (o.profile_stacks != "on" && o.profile_stacks != "off")
    throw UsageError("--profile-stacks '" + o.profile_stacks + "' is not on or off");
  if (o.profile_given && o.profile_dir.empty())
    throw UsageError("--profile needs a directory, got ''");
  if (o.profile_dir.empty()) {
    if (o.profile_stacks_given) throw UsageError("--profile-stacks needs --profile DIR");
    return;
  }
  std::error_code error;
  std::filesystem::create_directories(o.profile_dir, error);
  if (error || !std::filesystem::is_directory(o.profile_dir))
    throw UsageError("--profile '" + o.profile_dir + "': cannot create the directory" +
                     (error ? " (" + error.message() + ")" : " (a file has that name)"));
}

// The --snapshot-on-oom file of a rank: PATH for one process; with ranks, each its own, the rank
// before the extension (PATH's stem.rankR.pickle), as Megatron-LM names one per rank.
std::string oom_snapshot_path(const TrainCommandOptions& o, const train::TrainOptions& options) {
  const std::optional<int64_t> rank = launched_rank(options);
  if (!rank) return o.snapshot_on_oom;
  const std::filesystem::path path(o.snapshot_on_oom);
  return (path.parent_path() /
          (path.stem().string() + ".rank" + std::to_string(*rank) + path.extension().string()))
      .string();
}

// Checked before training: a snapshot that cannot be written is found out now, not at the OOM.
void check_snapshot_on_oom(const TrainCommandOptions& o) {
  if (!o.snapshot_on_oom_given) return;
  const std::string shown = platform::printable(o.snapshot_on_oom);
  if (o.snapshot_on_oom.empty()) throw UsageError("--snapshot-on-oom needs a file, got ''");
  const std::filesystem::path path(o.snapshot_on_oom);
  const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code error;
  if (!std::filesystem::is_directory(parent, error))
    throw UsageError("--snapshot-on-oom " + shown + ": the directory " +
                     platform::printable(parent.string()) + " does not exist");
  if (std::filesystem::is_directory(path, error))
    throw UsageError("--snapshot-on-oom " + shown + " is a directory; give a file, e.g. " +
                     platform::printable((path / "oom.pickle").string()));
  if (::access(parent.c_str(), W_OK) != 0)
    throw UsageError("--snapshot-on-oom " + shown + ": the directory " +
                     platform::printable(parent.string()) + " is not writable");
}

// One line on the peak: how big, who reached it (module, phase, tensor) and where it was
// allocated.
std::string peak_summary(const snapshot::PeakReport& peak) {
  std::string line = "peak " + report::format_bytes(static_cast<uint64_t>(peak.peak_bytes));
  const snapshot::Allocation& owner = peak.peak_owner;
  if (peak.peak_event < 0) return line + " before the first recorded event";
  line += " reached by " + (owner.tensor.empty() ? std::string("an allocation") : owner.tensor) +
          " (" + report::format_bytes(static_cast<uint64_t>(owner.bytes)) + ", module " +
          (owner.module.empty() ? "(none)" : owner.module) + ", " +
          (owner.phase.empty() ? "no phase" : owner.phase) + ")";
  if (!owner.frames.empty()) line += " in " + without_parameters(owner.frames.front().function);
  return line;
}

json category_json(const std::array<int64_t, memory::kMemoryCategoryCount>& bytes) {
  json j = json::object();
  for (const memory::MemoryCategory cat : memory::kAllMemoryCategories)
    j[std::string(memory::category_name(cat))] = bytes[static_cast<size_t>(cat)];
  return j;
}

// The pinned host tier's statistics under PyTorch's keys (torch.cuda.host_memory_stats), and its
// peak bytes per category (the blocks' power-of-two sizes, and the bytes asked for).
json host_memory_json(const memory::CachingHostAllocator& host) {
  const memory::CategoryStats categories = host.category_stats();
  std::array<int64_t, memory::kMemoryCategoryCount> blocks{}, requested{};
  for (const memory::MemoryCategory cat : memory::kAllMemoryCategories) {
    blocks[static_cast<size_t>(cat)] = categories.of(cat).peak;
    requested[static_cast<size_t>(cat)] = categories.requested(cat).peak;
  }
  return {{"pinned", host.host_memory_stats().to_json()},
          {"peak_bytes_by_category", category_json(blocks)},
          {"peak_requested_bytes_by_category", category_json(requested)}};
}

// What the steps spent on the device's stream clock, summed over the run.
struct ClockTotals {
  double exposed_copy_seconds = 0.0;  // StepResult::exposed_copy_seconds
  double host_update_seconds = 0.0;   // StepResult::host_update_seconds
  double delayed_update_seconds = 0.0;  // StepResult::delayed_update_seconds
};

// The run on the device's stream clock (Note [The stream clock]): the compute stream's kernel
// time (measured, or on a meta preset each kernel's roofline: kernel_time says which), the
// copies' time over the host link, the steps' copy time that did not hide (exposed) and, with
// the optimizer offloaded, the host's updates (those delayed apart); every figure is the whole
// run's, in seconds.
json clock_json(nn::Runtime& runtime, const ClockTotals& steps) {
  stream::Clock& clock = runtime.clock();
  const nn::TransferStats& copies = runtime.transfer_stats();
  const memory::DeviceSpec& spec = runtime.device().spec;
  const auto gbps = [](double bytes_per_s) {
    return bytes_per_s > 0.0 ? json(bytes_per_s / 1e9) : json(nullptr);
  };
  return {{"seconds", clock.synchronize()},
          {"kernel_time", runtime.kernels().roofline() ? "roofline" : "measured"},
          {"compute_stream_busy_s", clock.busy_seconds(stream::Clock::compute_stream())},
          {"exposed_copy_s", steps.exposed_copy_seconds},
          {"host_update_s", steps.host_update_seconds},
          {"delayed_update_s", steps.delayed_update_seconds},
          {"host_to_device_s", copies.host_to_device_seconds},
          {"device_to_host_s", copies.device_to_host_seconds},
          {"host_to_device_bytes", copies.host_to_device_bytes},
          {"device_to_host_bytes", copies.device_to_host_bytes},
          {"link_gbps",
           {{"host_to_device", gbps(spec.host_to_device_bytes_per_s)},
            {"device_to_host", gbps(spec.device_to_host_bytes_per_s)}}}};
}

void run_ranks(const TrainCommandOptions& o, const train::TrainOptions& options,
               const memory::Device& device);

// The parameters on NVMe (--offload-param-device nvme), null without: their files and the bytes
// the fetches and updates moved (the initialisation's writes included).
json parameters_nvme_json(train::Trainer& trainer) {
  const nn::ParameterStore& store = trainer.model().parameters();
  if (!store.values_on_nvme()) return nullptr;
  return {{"file_bytes", store.nvme_file_bytes()},
          {"files", store.layout().units().size()},
          {"read_bytes", store.nvme_read_bytes()},
          {"write_bytes", store.nvme_write_bytes()}};
}

// The optimizer states on NVMe (--offload-optimizer-device nvme), null without: the files, the
// bytes moved, the drive's busy time on the clock and, with real files, the measured bandwidth.
json nvme_json(train::Trainer& trainer, nn::Runtime& runtime) {
  const optim::StateSwap* swap = trainer.optimizer().state_swap();
  if (swap == nullptr) return nullptr;
  const storage::NvmeTier* tier = swap->tier();
  json measured = nullptr;
  if (tier != nullptr)
    measured = {{"read_gbps", tier->stats().read_bytes_per_s() / 1e9},
                {"write_gbps", tier->stats().write_bytes_per_s() / 1e9},
                {"engine", storage::nvme_engine_name(tier->engine())},
                {"direct", tier->direct()}};
  return {{"path", tier ? json(tier->options().path) : json(nullptr)},
          {"file_bytes", swap->file_bytes()},
          {"host_staging_bytes", swap->staging_bytes()},
          {"read_bytes", swap->traffic().read_bytes},
          {"write_bytes", swap->traffic().write_bytes},
          {"clock_read_gbps", swap->options().read_bytes_per_s / 1e9},
          {"clock_write_gbps", swap->options().write_bytes_per_s / 1e9},
          {"drive_busy_s", runtime.clock().busy_seconds(trainer.optimizer().nvme_lane())},
          {"measured", measured},
          {"parameters", parameters_nvme_json(trainer)}};
}

std::string gbps_text(double bytes_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB/s", bytes_per_s / 1e9);
  return text;
}

// The text summary's line for nvme_json.
void print_nvme(train::Trainer& trainer, nn::Runtime& runtime, int64_t steps) {
  const optim::StateSwap* swap = trainer.optimizer().state_swap();
  if (swap == nullptr) return;
  const storage::NvmeTier* tier = swap->tier();
  std::string where = "no files on meta: the clock's drive only";
  if (tier != nullptr)
    where = "under " + platform::printable(tier->options().path) + " (" +
            std::string(storage::nvme_engine_name(tier->engine())) +
            (tier->direct() ? ", O_DIRECT" : ", page cache: the file system refuses O_DIRECT") +
            "; measured " + gbps_text(tier->stats().read_bytes_per_s()) + " read, " +
            gbps_text(tier->stats().write_bytes_per_s()) + " write)";
  std::printf(
      "optimizer states on NVMe (ZeRO-Infinity): %s in %lld files %s; the host stages two units' "
      "states, %s; over %lld steps read %s and wrote %s, the drive busy %s on the clock\n",
      report::format_bytes(static_cast<uint64_t>(swap->file_bytes())).c_str(),
      static_cast<long long>(swap->part_count() * swap->state_count()), where.c_str(),
      report::format_bytes(static_cast<uint64_t>(swap->staging_bytes())).c_str(),
      static_cast<long long>(steps),
      report::format_bytes(static_cast<uint64_t>(swap->traffic().read_bytes)).c_str(),
      report::format_bytes(static_cast<uint64_t>(swap->traffic().write_bytes)).c_str(),
      report::format_duration_ms(runtime.clock().busy_seconds(trainer.optimizer().nvme_lane()) *
                                 1e3)
          .c_str());
  const nn::ParameterStore& store = trainer.model().parameters();
  if (store.values_on_nvme())
    std::printf(
        "parameters on NVMe (ZeRO-Infinity): %s in %lld files; the fetches and updates read %s "
        "and wrote %s (the initialisation's writes included), on the same drive\n",
        report::format_bytes(static_cast<uint64_t>(store.nvme_file_bytes())).c_str(),
        static_cast<long long>(store.layout().units().size()),
        report::format_bytes(static_cast<uint64_t>(store.nvme_read_bytes())).c_str(),
        report::format_bytes(static_cast<uint64_t>(store.nvme_write_bytes())).c_str());
}

// The host's model states under --offload optimizer (null without).
json host_state_json(const std::optional<train::ModelStateMeasured>& host) {
  if (!host) return nullptr;
  return {{"parameters", host->parameters},
          {"gradients", host->gradients},
          {"optimizer_states", host->optimizer_states}};
}

// The device flags that turn the clock: --link-gbps for every device with a clock, and the
// roofline's rates (--memory-gbps, --peak-tflops), which only a meta device uses (on sim and cpu
// a kernel takes its measured time, so a changed peak there would change nothing silently).
void apply_device_flags(const TrainCommandOptions& o, memory::Device& device) {
  if (o.link_gbps) {
    device.spec.host_to_device_bytes_per_s = platform::bandwidth_flag("--link-gbps", *o.link_gbps);
    device.spec.device_to_host_bytes_per_s = device.spec.host_to_device_bytes_per_s;
  }
  if (!o.memory_gbps && !o.peak_tflops) return;
  if (o.memory_gbps)
    device.spec.memory_bandwidth_bytes_per_s =
        platform::bandwidth_flag("--memory-gbps", *o.memory_gbps);
  if (o.peak_tflops)
    device.spec.peak_flops = memory::parse_peak_tflops(*o.peak_tflops, device.spec.peak_flops);
  const char* const which = o.memory_gbps ? "--memory-gbps" : "--peak-tflops";
  if (device.kind != memory::DeviceKind::meta)
    throw UsageError(std::string(which) +
                     " sets the roofline a kernel takes on a meta device; on '" + device.name() +
                     "' a kernel takes its measured time");
  if (!nn::Roofline::of(device.spec))
    throw UsageError(std::string(which) + ": '" + device.name() +
                     "' has no preset, so the roofline needs --memory-gbps and --peak-tflops for "
                     "fp32, bf16 and fp16 (or a preset, e.g. meta:a100-40g)");
}

// --nvme-*: where the optimizer states' files go and how fast the drive is on the clock.
void apply_nvme_flags(const TrainCommandOptions& o, const memory::Device& device,
                      train::TrainOptions& options) {
  // The first --nvme-* flag given, as typed: what a refusal names.
  std::string given;
  const auto note = [&](bool set, const char* flag, const std::string& value) {
    if (set && given.empty()) given = std::string(flag) + " " + platform::printable(value);
  };
  note(!o.nvme_path.empty(), "--nvme-path", o.nvme_path);
  note(!o.nvme_block_size.empty(), "--nvme-block-size", o.nvme_block_size);
  note(!o.nvme_engine.empty(), "--nvme-engine", o.nvme_engine);
  note(o.nvme_queue_depth.has_value(), "--nvme-queue-depth",
       o.nvme_queue_depth ? std::to_string(*o.nvme_queue_depth) : "");
  note(o.nvme_read_gbps.has_value(), "--nvme-read-gbps",
       o.nvme_read_gbps ? number_text(*o.nvme_read_gbps) : "");
  note(o.nvme_write_gbps.has_value(), "--nvme-write-gbps",
       o.nvme_write_gbps ? number_text(*o.nvme_write_gbps) : "");
  const bool nvme = options.plan.offload.optimizer_device == plan::OffloadDevice::nvme;
  if (!given.empty() && !nvme)
    throw UsageError(given +
                     ": the --nvme-* flags say where and how the optimizer states go to NVMe; "
                     "they need --offload-optimizer-device nvme");
  if (!nvme) return;
  optim::NvmeSwapOptions& swap = options.nvme;
  swap.files.path = o.nvme_path;
  if (!o.nvme_block_size.empty()) {
    uint64_t bytes = 0;
    try {
      bytes = memory::parse_size_bytes(o.nvme_block_size);
    } catch (const UsageError& e) {
      throw UsageError("--nvme-block-size " + platform::printable(o.nvme_block_size) + ": " +
                       e.what());
    }
    if (bytes > static_cast<uint64_t>(int64_t{1} << 30))
      throw UsageError("--nvme-block-size " + o.nvme_block_size + " is beyond 1 GiB");
    swap.files.block_size = static_cast<int64_t>(bytes);
  }
  if (o.nvme_queue_depth) swap.files.queue_depth = *o.nvme_queue_depth;
  if (!o.nvme_engine.empty()) swap.files.engine = storage::parse_nvme_engine(o.nvme_engine);
  if (o.nvme_read_gbps)
    swap.read_bytes_per_s = platform::bandwidth_flag("--nvme-read-gbps", *o.nvme_read_gbps);
  if (o.nvme_write_gbps)
    swap.write_bytes_per_s = platform::bandwidth_flag("--nvme-write-gbps", *o.nvme_write_gbps);
  if (device.kind == memory::DeviceKind::meta && !o.nvme_path.empty())
    throw UsageError("--nvme-path " + platform::printable(o.nvme_path) +
                     ": a meta device makes no files (its drive is the clock's, "
                     "--nvme-read-gbps and --nvme-write-gbps)");
  if (device.kind != memory::DeviceKind::meta && o.nvme_path.empty())
    throw UsageError(
        "--offload-optimizer-device nvme needs --nvme-path DIR: the directory, on the drive, "
        "where the optimizer states' files go");
}

// The evaluation of --eval-batches, --eval-grad and --eval-keep-graphs.
train::EvalOptions eval_options(const TrainCommandOptions& o) {
  const bool grad = o.eval_grad == "on";
  if (o.eval_batches == 0 && (grad || o.eval_keep_graphs))
    throw UsageError(std::string(grad ? "--eval-grad on" : "--eval-keep-graphs") +
                     " says how the evaluation runs: give --eval-batches M too");
  if (o.eval_keep_graphs && !grad)
    throw UsageError(
        "--eval-keep-graphs keeps each loss's graph, and without grad (torch.no_grad()) there is "
        "none: give --eval-grad on");
  return {std::max<int64_t>(o.eval_batches, 1), !grad, o.eval_keep_graphs};
}

// The lengths of --vary-seq and --bucket-seq over the run's T and seed.
train::SequenceLengths sequence_lengths(const TrainCommandOptions& o,
                                        const train::TrainOptions& options) {
  if (o.bucket_seq != 1 && o.vary_seq == 0)
    throw UsageError("--bucket-seq " + std::to_string(o.bucket_seq) +
                     " pads the lengths --vary-seq draws: give --vary-seq MIN too");
  return {o.vary_seq, options.seq, o.bucket_seq, o.seed};
}

void run_train(const TrainCommandOptions& o) {
  if (o.threads > 0) {
    platform::choose_openmp_threads(static_cast<int>(o.threads));
  }
  memory::Device device = memory::parse_device(o.device);
  apply_device_flags(o, device);
  train::TrainOptions options;
  options.plan = o.plan->plan();
  if (o.host_memory_gbps) {
    options.host_memory_bytes_per_s =
        platform::bandwidth_flag("--host-memory-gbps", *o.host_memory_gbps);
    if (device.kind != memory::DeviceKind::meta)
      throw UsageError(
          "--host-memory-gbps sets how long a meta device's host takes for its "
          "update; on '" +
          device.name() + "' the host's update runs and takes its measured time");
    if (!options.plan.offload.optimizer)
      throw UsageError(
          "--host-memory-gbps times the host's optimizer update: it needs --offload "
          "optimizer, got --offload " +
          std::string(plan::offload_name(options.plan.offload)));
  }
  apply_nvme_flags(o, device, options);
  options.model = o.model.build(o.seq);
  options.batch = o.batch.value_or(8);
  options.seq = o.seq.value_or(std::min<int64_t>(128, options.model.max_seq));
  options.seed = o.seed;
  options.keep_outputs = o.keep_outputs;
  sequence_lengths(o, options).validate();  // before the header
  (void)eval_options(o);
  check_profile_options(o);
  check_snapshot_on_oom(o);
  run_ranks(o, options, device);
}

RankOutcome train_on(nn::Runtime& runtime, const TrainCommandOptions& o,
                     const train::TrainOptions& options, const memory::Device& device, bool speak);

// Note [Snapshot on OOM]
// PyTorch's recipe for an out-of-memory error that happens far into a run
// (torch.cuda.memory._record_memory_history(max_entries=100000) at the start, and an observer
// attached with torch._C._cuda_attach_out_of_memory_observer that calls _dump_snapshot() when the
// allocator gives up; Megatron-LM does the same, a file per rank): the allocator's history is
// recorded from the start, and the error writes the snapshot, so the file holds every live block
// with its module, phase and tensor, the segments with their free space (the fragmentation
// question), and the trace up to the failed request. The error itself then goes on as without
// the flag; a snapshot that cannot be written is reported beside it.
RankOutcome train_rank(const TrainCommandOptions& o, const train::TrainOptions& options,
                       const memory::Device& device, bool speak) {
  const nn::KernelKind kernels = o.kernels.empty() ? nn::Runtime::default_kernel_kind(device)
                                                   : nn::parse_kernel_kind(o.kernels);
  nn::Runtime runtime(device, kernels);
  if (o.snapshot_on_oom.empty()) return train_on(runtime, o, options, device, speak);
  // A profile records already (with its own settings); otherwise the recipe's.
  if (o.profile_dir.empty()) runtime.allocator().record_history(memory::RecordMode::all, 100000);
  const std::string path = oom_snapshot_path(o, options);
  std::string written;  // what became of the snapshot: the note the error gains
  runtime.allocator().attach_out_of_memory_observer([&](const memory::OutOfMemoryError&) {
    if (!written.empty()) return;  // the first failure's state
    try {
      snapshot::write_snapshot_pickle(runtime.allocator().snapshot(), path);
      written = "The allocator's state at the failure is in " + platform::printable(path) +
                " (vramlab profile " + platform::printable(path) + ", or pytorch.org/memory_viz).";
    } catch (const std::exception& failed) {
      written = "(the snapshot was not written: " + platform::printable(failed.what()) + ")";
    }
  });
  try {
    return train_on(runtime, o, options, device, speak);
  } catch (const memory::OutOfMemoryError& e) {
    if (written.empty()) throw;
    throw memory::OutOfMemoryError(std::string(e.what()) + "\n" + written, e.details());
  }
}

RankOutcome train_on(nn::Runtime& runtime, const TrainCommandOptions& o,
                     const train::TrainOptions& options, const memory::Device& device, bool speak) {
  const recompute::RecomputeSchedule schedule = train::recompute_schedule(options);
  const std::string kernels_name(nn::kernel_kind_name(runtime.kernel_kind()));
  // Made before the trainer, so the parameters' and optimizer states' allocations are recorded
  // with their modules and stacks (as _record_memory_history() called before building the model).
  std::optional<profile::Profiler> profiler;
  if (!o.profile_dir.empty()) {
    profile::ProfilerOptions profiler_options;
    profiler_options.cpp_stacks = o.profile_stacks == "on";
    profiler.emplace(runtime, profiler_options);
  }
  train::Trainer trainer(runtime, options);
  RankOutcome outcome;
  outcome.rank = options.groups.data_parallel ? options.groups.data_parallel->rank() : 0;

  const bool colour = report::use_colour(stdout);
  using namespace report::style;
  const ModelConfig& m = options.model;
  const int64_t ranks = options.groups.data_parallel_size();
  if (!o.json && speak) {
    if (options.groups.data_parallel)
      std::printf(
          "%s data parallel over %lld %s ranks%s: each trains on B=%lld of a global "
          "batch of %lld\n",
          std::string(dist::zero_stage_name(options.plan.parallel.zero)).c_str(),
          static_cast<long long>(ranks),
          std::string(options.groups.data_parallel->backend()).c_str(),
          options.plan.parallel.prefetch ? " with prefetch" : "",
          static_cast<long long>(options.batch), static_cast<long long>(options.batch * ranks));
    std::printf("%s %s (%s) on %s, %s kernels: %s parameters, B=%lld T=%lld, %lld threads\n",
                bold("vramlab train", colour).c_str(), m.name.c_str(),
                std::string(model_family_name(m.family)).c_str(), device.name().c_str(),
                kernels_name.c_str(), report::format_count(m.parameter_count()).c_str(),
                static_cast<long long>(options.batch), static_cast<long long>(options.seq),
                static_cast<long long>(omp_get_max_threads()));
    if (options.plan.recompute.kind != recompute::RecomputeSpec::Kind::none ||
        options.plan.dropout.p > 0 ||
        options.plan.activations.compression != nn::ActivationCompression::none)
      std::printf(
          "recompute %s (%s: . keeps, s selective, F/f full span start/inside), "
          "%.0f%% of the forward re-run; kept activations %s; dropout %g\n",
          schedule.name.c_str(), recompute::schedule_pattern(schedule).c_str(),
          100.0 * estimate::recomputed_forward_fraction(m, options.batch, options.seq, schedule,
                                                        options.plan.attention),
          options.plan.activations.compression == nn::ActivationCompression::none
              ? "fp32"
              : std::string(nn::compression_name(options.plan.activations.compression)).c_str(),
          static_cast<double>(options.plan.dropout.p));
    std::printf("precision %s%s%s, %s attention, %lld micro-batch%s per step, loss scale %s%s\n",
                std::string(amp::precision_name(options.plan.amp.precision)).c_str(),
                options.plan.amp.fp32_grads ? " with fp32 gradients" : "",
                options.plan.amp.stochastic_rounding ? " with stochastic rounding" : "",
                std::string(attention_kind_name(options.plan.attention)).c_str(),
                static_cast<long long>(options.plan.batch.grad_accum),
                options.plan.batch.grad_accum == 1 ? "" : "es",
                amp::loss_scale_name(train::effective_loss_scale(options)).c_str(),
                options.plan.optimizer.max_grad_norm > 0
                    ? (", gradients clipped to norm " +
                       std::to_string(options.plan.optimizer.max_grad_norm))
                          .c_str()
                    : "");
    std::printf(
        "data: Markov chain over %lld tokens, unigram entropy %.3f nats, entropy rate %.3f nats\n",
        static_cast<long long>(m.vocab), trainer.data().unigram_entropy_nats(),
        trainer.data().entropy_rate_nats());
  }
  report::ProgressBarOptions bar_options;
  bar_options.unit = "step";
  bar_options.colour = report::use_colour(stderr);
  if (o.json || !speak) bar_options.mode = report::ProgressMode::kSilent;
  report::ProgressBar bar(static_cast<uint64_t>(o.steps), "train", bar_options);
  const bool bar_on_terminal = bar.mode() == report::ProgressMode::kTerminal;
  std::vector<double> seconds;
  int64_t activation_peak = 0;      // the saved-activation store's, over all steps
  int64_t bytes_after_forward = 0;  // the store's when the last step's forward ended
  int64_t skipped_steps = 0;
  ClockTotals clock_totals;
  const train::SequenceLengths lengths = sequence_lengths(o, options);
  for (int64_t s = 0; s < o.steps; ++s) {
    if (lengths.varies()) trainer.set_seq(lengths.length(s + 1));
    const train::StepResult r = trainer.step();
    skipped_steps += r.skipped ? 1 : 0;
    clock_totals.exposed_copy_seconds += r.exposed_copy_seconds;
    clock_totals.host_update_seconds += r.host_update_seconds;
    clock_totals.delayed_update_seconds += r.delayed_update_seconds;
    seconds.push_back(r.seconds);
    activation_peak = std::max(activation_peak, r.activation_peak_bytes);
    bytes_after_forward = r.activation_bytes_after_forward;
    outcome.bytes_sent = r.communication.of(dist::Traffic::gradients).bytes_sent +
                         r.communication.of(dist::Traffic::parameters).bytes_sent;
    outcome.tp_bytes_sent = r.communication.of(dist::Traffic::activations).bytes_sent;
    if (!speak) continue;
    if (o.json) {
      std::printf("%s\n", json{{"step", r.step},
                               {"seq", trainer.options().seq},
                               {"loss", r.loss},
                               {"step_s", r.seconds},
                               {"tokens_per_s", r.tokens_per_s},
                               {"clock_s", r.clock_seconds},
                               {"exposed_copy_s", r.exposed_copy_seconds},
                               {"host_update_s", r.host_update_seconds},
                               {"delayed_update_s", r.delayed_update_seconds},
                               {"activation_peak_bytes", r.activation_peak_bytes},
                               {"loss_scale", r.loss_scale},
                               {"found_inf", r.found_inf},
                               {"skipped", r.skipped},
                               {"bytes_sent", outcome.bytes_sent},
                               {"grad_norm",
                                std::isfinite(r.grad_norm) ? json(r.grad_norm) : json(nullptr)}}
                              .dump()
                              .c_str());
      std::fflush(stdout);
    } else {
      char suffix[96];
      std::snprintf(suffix, sizeof suffix, "loss %.4f  %.0f tok/s%s", r.loss, r.tokens_per_s,
                    r.skipped ? "  skipped (inf/NaN)" : "");
      if (bar_on_terminal) {
        bar.update(static_cast<uint64_t>(s + 1), suffix);
      } else {
        std::printf(
            "step %4lld  %sloss %.4f  %.3f s  %.0f tokens/s%s\n", static_cast<long long>(r.step),
            lengths.varies() ? ("T=" + std::to_string(trainer.options().seq) + "  ").c_str() : "",
            r.loss, r.seconds, r.tokens_per_s,
            r.skipped ? "  skipped: inf/NaN in the gradients" : "");
      }
    }
  }
  bar.finish();
  // A delayed update's parameters reach the device only after the next step: the last one's now,
  // so the model the run leaves is its last step's (its copy counts among the run's bytes).
  trainer.optimizer().finish_delayed_update(trainer.model().parameters());
  std::optional<train::EvalResult> evaluation;
  if (o.eval_batches > 0) evaluation = trainer.evaluate(eval_options(o));
  std::optional<profile::ProfileFiles> files;
  std::string profile_line;
  json profile_json;
  if (profiler) {
    const profile::Recording recording = profiler->stop();
    const std::string directory = profile_directory(o, options);
    const bool per_rank = directory != o.profile_dir;
    files = profile::write_profile(
        recording, directory,
        "vramlab train: " + m.name + " on " + device.name() +
            (per_rank ? ", " + std::filesystem::path(directory).filename().string() : ""));
    const snapshot::PeakReport peak = snapshot::analyse_peak(recording.snapshot);
    profile_line = peak_summary(peak);
    profile_json = {{"directory", directory},
                    {"files",
                     {{"snapshot_pickle", files->snapshot_pickle},
                      {"snapshot_json", files->snapshot_json},
                      {"trace_json", files->trace_json},
                      {"ops_table", files->ops_table},
                      {"ops_json", files->ops_json},
                      {"timeline_html", files->timeline_html}}},
                    {"stacks", o.profile_stacks == "on"},
                    {"recorded_s", recording.seconds},
                    {"peak_bytes", peak.peak_bytes},
                    {"peak_owner",
                     {{"module", peak.peak_owner.module},
                      {"phase", peak.peak_owner.phase},
                      {"tensor", peak.peak_owner.tensor}}}};
  }
  const train::MemoryReport mem = trainer.memory_report();
  const double median_s = train::median(seconds);
  outcome.state = trainer.model_state();
  outcome.peak_bytes = mem.peak_total_bytes;
  if (o.json) {
    json summary{
        {"summary", true},
        {"model", m.name},
        {"device", device.name()},
        {"kernels", kernels_name},
        {"optimizer", estimate::optimizer_name(options.plan.optimizer.name)},
        {"optimizer_state_bytes", trainer.optimizer().state_bytes()},
        {"parameters", m.parameter_count()},
        {"batch", options.batch},
        {"seq", options.seq},
        {"steps", o.steps},
        {"threads", omp_get_max_threads()},
        {"median_step_s", median_s},
        {"tokens_per_s", static_cast<double>(options.batch * options.seq) / median_s},
        {"unigram_entropy_nats", trainer.data().unigram_entropy_nats()},
        {"entropy_rate_nats", trainer.data().entropy_rate_nats()},
        {"peak_bytes",
         {{"total", mem.peak_total_bytes}, {"by_category", category_json(mem.peak_bytes)}}},
        {"reserved_peak_bytes", mem.reserved_peak_bytes},
        {"host_memory", host_memory_json(runtime.host_allocator())},
        {"clock", clock_json(runtime, clock_totals)},
        {"recompute",
         {{"schedule", schedule.name},
          {"pattern", recompute::schedule_pattern(schedule)},
          {"recomputed_forward_fraction",
           estimate::recomputed_forward_fraction(m, options.batch, options.seq, schedule,
                                                 options.plan.attention)}}},
        {"compress_activations", nn::compression_name(options.plan.activations.compression)},
        {"activation_peak_bytes", activation_peak},
        {"activation_bytes_after_forward", bytes_after_forward},
        {"dropout", options.plan.dropout.p},
        {"attention", attention_kind_name(options.plan.attention)},
        {"precision", amp::precision_name(options.plan.amp.precision)},
        {"fp32_grads", options.plan.amp.fp32_grads},
        {"stochastic_rounding", options.plan.amp.stochastic_rounding},
        {"grad_accum", options.plan.batch.grad_accum},
        {"loss_scale", amp::loss_scale_name(train::effective_loss_scale(options))},
        {"final_loss_scale", trainer.scaler().scale()},
        {"skipped_steps", skipped_steps},
        {"model_state_bytes",
         {{"parameters", outcome.state.parameters},
          {"gradients", outcome.state.gradients},
          {"optimizer_states", outcome.state.optimizer_states}}},
        {"offload", plan::offload_name(options.plan.offload)},
        {"offload_overlap",
         options.plan.offload.optimizer ? json(options.plan.offload.overlap) : json(nullptr)},
        {"offload_copy_back", options.plan.offload.optimizer
                                  ? json(options.plan.offload.tiled_copy_back ? "tiled" : "whole")
                                  : json(nullptr)},
        {"offload_dpu", options.plan.offload.optimizer
                            ? json(plan::delay_update_name(options.plan.offload.delay_update_from))
                            : json(nullptr)},
        // The rate a meta device's host update takes its time at (null where it is measured).
        {"host_memory_gbps",
         options.plan.offload.optimizer && device.kind == memory::DeviceKind::meta
             ? json(options.host_memory_bytes_per_s / 1e9)
             : json(nullptr)},
        {"host_model_state_bytes", host_state_json(trainer.host_model_state())},
        // Of them, the page-locked blocks (--offload-pin-memory on): each a power of two.
        {"host_pinned_model_state_bytes", options.plan.offload.optimizer
                                              ? json(trainer.host_pinned_model_state(true).total())
                                              : json(nullptr)},
        {"nvme", nvme_json(trainer, runtime)},
        {"eval", evaluation ? json{{"batches", o.eval_batches},
                                   {"grad", o.eval_grad == "on"},
                                   {"keep_graphs", o.eval_keep_graphs},
                                   {"loss", evaluation->loss},
                                   {"saved_bytes", evaluation->saved_bytes},
                                   {"saved_peak_bytes", evaluation->saved_peak_bytes}}
                            : json(nullptr)},
        {"plan", plan::to_json(options.plan)}};  // what `vramlab train --plan FILE` reruns
    if (profiler) summary["profile"] = profile_json;
    outcome.summary = std::move(summary);
    return outcome;
  }
  if (!speak) return outcome;
  std::printf("median step %s  (%.0f tokens/s)\n",
              report::format_duration_ms(median_s * 1e3).c_str(),
              static_cast<double>(options.batch * options.seq) / median_s);
  if (evaluation)
    std::printf(
        "evaluation: loss %.4f over %lld batches %s; saved activations %s at the end "
        "(%s at most in one batch's forward)\n",
        evaluation->loss, static_cast<long long>(o.eval_batches),
        o.eval_grad == "on"
            ? (o.eval_keep_graphs ? "with grad, every graph kept" : "with grad, each graph freed")
            : "under no_grad",
        report::format_bytes(static_cast<uint64_t>(evaluation->saved_bytes)).c_str(),
        report::format_bytes(static_cast<uint64_t>(evaluation->saved_peak_bytes)).c_str());
  const bool parameters_offloaded = options.plan.offload.parameters;
  if (const std::optional<train::ModelStateMeasured> host = trainer.host_model_state())
    std::printf(
        parameters_offloaded
            ? "optimizer and parameters offloaded (ZeRO-Infinity): the host holds %s of optimizer "
              "states, the staged %s of gradients and the %s parameter shard each gather fetches; "
              "the device keeps none of them\n"
            : "optimizer offloaded (ZeRO-Offload): the host holds %s of optimizer states and the "
              "staged %s of gradients and %s of parameters its step reads and writes; none on the "
              "device\n",
        report::format_bytes(static_cast<uint64_t>(host->optimizer_states)).c_str(),
        report::format_bytes(static_cast<uint64_t>(host->gradients)).c_str(),
        report::format_bytes(static_cast<uint64_t>(host->parameters)).c_str());
  if (options.plan.offload.optimizer) {
    const nn::TransferStats& copies = runtime.transfer_stats();
    const std::string delayed_text =
        clock_totals.delayed_update_seconds > 0.0
            ? "; and " + report::format_duration_ms(clock_totals.delayed_update_seconds * 1e3) +
                  " of delayed updates beside the next steps (--offload-dpu " +
                  plan::delay_update_name(options.plan.offload.delay_update_from) + ")"
            : std::string();
    std::printf(
        "on the device's clock, over %lld steps: the host's updates %s, copies %s (%s to the "
        "host, %s back), of which %s exposed (%s)%s\n",
        static_cast<long long>(o.steps),
        report::format_duration_ms(clock_totals.host_update_seconds * 1e3).c_str(),
        report::format_duration_ms((copies.device_to_host_seconds + copies.host_to_device_seconds) *
                                   1e3)
            .c_str(),
        report::format_bytes(static_cast<uint64_t>(copies.device_to_host_bytes)).c_str(),
        report::format_bytes(static_cast<uint64_t>(copies.host_to_device_bytes)).c_str(),
        report::format_duration_ms(clock_totals.exposed_copy_seconds * 1e3).c_str(),
        parameters_offloaded
            ? (options.plan.parallel.prefetch ? "the parameters fetched one block ahead, --prefetch"
                                              : "each gather waiting for its fetch: add --prefetch")
            : (std::string("--offload-overlap ") + (options.plan.offload.overlap ? "on" : "off") +
               ", --offload-copy-back " +
               (options.plan.offload.tiled_copy_back ? "tiled" : "whole"))
                  .c_str(),
        delayed_text.c_str());
  }
  if (options.plan.offload.optimizer && options.plan.offload.pin_memory) {
    const train::ModelStateMeasured asked = trainer.host_pinned_model_state(false);
    std::printf(
        "of the host's bytes, %s are pinned (the staged gradients and parameters and the fp32 "
        "master, page-locked as DeepSpeed's pin_memory) in %s of power-of-two blocks; "
        "--offload-pin-memory off keeps them pageable\n",
        report::format_bytes(static_cast<uint64_t>(asked.total())).c_str(),
        report::format_bytes(static_cast<uint64_t>(trainer.host_pinned_model_state(true).total()))
            .c_str());
  }
  print_nvme(trainer, runtime, o.steps);
  if (options.plan.activations.offload) {
    const memory::CategoryStats pinned = runtime.host_allocator().category_stats();
    std::printf(
        "activations offloaded (--offload-activations on): %s of pinned host blocks at their peak "
        "for %s of saved tensors (each request rounded up to a power of two)\n",
        report::format_bytes(
            static_cast<uint64_t>(pinned.of(memory::MemoryCategory::activation).peak))
            .c_str(),
        report::format_bytes(
            static_cast<uint64_t>(pinned.requested(memory::MemoryCategory::activation).peak))
            .c_str());
    if (!options.plan.offload.optimizer) {
      const nn::TransferStats& copies = runtime.transfer_stats();
      std::printf(
          "on the device's clock, over %lld steps: copies %s (%s to the host, %s back), of which "
          "%s exposed\n",
          static_cast<long long>(o.steps),
          report::format_duration_ms(
              (copies.device_to_host_seconds + copies.host_to_device_seconds) * 1e3)
              .c_str(),
          report::format_bytes(static_cast<uint64_t>(copies.device_to_host_bytes)).c_str(),
          report::format_bytes(static_cast<uint64_t>(copies.host_to_device_bytes)).c_str(),
          report::format_duration_ms(clock_totals.exposed_copy_seconds * 1e3).c_str());
    }
  }
  report::Table table({{"category"}, {"peak", report::Align::kRight}});
  for (const memory::MemoryCategory cat : memory::kAllMemoryCategories)
    table.add_row(
        {std::string(memory::category_name(cat)),
         report::format_bytes(static_cast<uint64_t>(mem.peak_bytes[static_cast<size_t>(cat)]))});
  table.add_row(
      {"total (allocated)", report::format_bytes(static_cast<uint64_t>(mem.peak_total_bytes))},
      report::RowStyle::kBold);
  table.add_row({"reserved (segments)",
                 report::format_bytes(static_cast<uint64_t>(mem.reserved_peak_bytes))});
  std::printf("peak memory per category (caching allocator, rounded blocks):\n%s",
              table.render(colour, 2).c_str());
  if (options.groups.tensor_parallel_size() == 1)
    std::printf(
        "  saved activations at their peak: %s (the tensors' own bytes, as vramlab estimate "
        "--recompute %s%s predicts them)\n",
        report::format_bytes(static_cast<uint64_t>(activation_peak)).c_str(), schedule.name.c_str(),
        options.plan.activations.offload ? " --offload-activations on" : "");
  else
    std::printf(
        "  saved activations at their peak: %s (the tensors' own bytes; this tensor-parallel "
        "rank's heads and MLP units only, which vramlab estimate's runtime column, made for one "
        "rank, does not split)\n",
        report::format_bytes(static_cast<uint64_t>(activation_peak)).c_str());
  // A large-pool block is not split when 1 MiB or less would be left (PyTorch's should_split), so
  // a category can count more than its tensors; which blocks keep such a remainder depends on the
  // sequence of sizes, and gpt2-tiny's saved activations hit it already in the first step.
  // Expandable segments always split, so the same step then counts its tensors exactly.
  std::printf(
      "  (a block left with 1 MiB or less is not split (PyTorch's should_split), so a category "
      "can count up to 1 MiB per large block more than its tensors, in the first step as in later "
      "ones; with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True blocks are always split and "
      "each category counts its tensors' 512-B rounded sizes)\n");
  if (files) {
    const std::string directory = std::filesystem::path(files->snapshot_pickle).parent_path();
    std::printf(
        "profile%s: %s\n  %s\n",
        options.groups.data_parallel ? " of rank 0 (every rank wrote its own beside it)" : "",
        platform::printable(directory).c_str(), platform::printable(profile_line).c_str());
    std::printf(
        "  snapshot.pickle: pytorch.org/memory_viz or python -m torch.cuda._memory_viz; "
        "trace.json: ui.perfetto.dev or chrome://tracing; ops.txt: the per-op table; "
        "timeline.html: a browser; vramlab profile %s: the peak's owners\n",
        platform::printable(files->snapshot_pickle).c_str());
  }
  return outcome;
}

// Rank 0's report of every rank of a world of N·T: the model states each holds (requested
// bytes, what `vramlab estimate --zero S --dp N --tp T` predicts) and what it sent in the last
// step.
void report_ranks(const TrainCommandOptions& o, const train::TrainOptions& options,
                  std::vector<RankOutcome>& outcomes, int64_t T) {
  const int64_t N = static_cast<int64_t>(outcomes.size()) / T;  // data-parallel degree
  const estimate::Estimate e = train::estimate_step(options, N, T);
  if (o.json) {
    json per_rank = json::array();
    for (const RankOutcome& r : outcomes)
      per_rank.push_back({{"rank", r.rank},
                          {"model_state_bytes",
                           {{"parameters", r.state.parameters},
                            {"gradients", r.state.gradients},
                            {"optimizer_states", r.state.optimizer_states}}},
                          {"peak_bytes", r.peak_bytes},
                          {"bytes_sent", r.bytes_sent},
                          {"tensor_parallel_bytes_sent", r.tp_bytes_sent}});
    json summary = outcomes[0].summary;
    summary["parallel"] = {{"strategy", dist::zero_stage_name(options.plan.parallel.zero)},
                           {"world_size", N * T},
                           {"data_parallel", N},
                           {"tensor_parallel", T},
                           {"prefetch", options.plan.parallel.prefetch},
                           {"estimate_model_state_bytes",
                            {{"parameters", e.parameters.bytes},
                             {"gradients", e.gradients.bytes},
                             {"optimizer_states", e.optimizer_states.bytes}}},
                           {"per_rank", per_rank}};
    std::printf("%s\n", summary.dump().c_str());
    return;
  }
  report::Table table({{"rank"},
                       {"parameters", report::Align::kRight},
                       {"gradients", report::Align::kRight},
                       {"optimizer states", report::Align::kRight},
                       {"peak allocated", report::Align::kRight},
                       {"sent / step", report::Align::kRight},
                       {"TP sent / step", report::Align::kRight}});
  const auto bytes = [](int64_t b) { return report::format_bytes(static_cast<uint64_t>(b)); };
  for (const RankOutcome& r : outcomes)
    table.add_row({std::to_string(r.rank), bytes(r.state.parameters), bytes(r.state.gradients),
                   bytes(r.state.optimizer_states), bytes(r.peak_bytes), bytes(r.bytes_sent),
                   bytes(r.tp_bytes_sent)});
  table.add_row({"estimate", bytes(e.parameters.bytes), bytes(e.gradients.bytes),
                 bytes(e.optimizer_states.bytes), "", "", ""},
                report::RowStyle::kBold);
  std::printf(
      "model states per rank (requested bytes) beside vramlab estimate --zero %lld --dp "
      "%lld --tp %lld:\n%s",
      static_cast<long long>(options.plan.parallel.zero), static_cast<long long>(N),
      static_cast<long long>(T), table.render(report::use_colour(stdout), 2).c_str());
}

// The plan's data-parallel degree, when it states one (a plan file's; flags leave it 1 and the
// ranks decide it), must fill the world with its tensor-parallel groups.
void require_plan_ranks(const plan::ParallelPlan& parallel, int64_t world_size) {
  const int64_t tp = parallel.tensor_parallel;
  if (parallel.data_parallel > 1 && parallel.data_parallel * tp != world_size)
    throw UsageError("the plan's data_parallel " + std::to_string(parallel.data_parallel) +
                     " x tensor_parallel " + std::to_string(tp) + " needs " +
                     std::to_string(parallel.data_parallel * tp) + " ranks, got " +
                     std::to_string(world_size));
}

// One process, N simulated ranks (threads), or the ranks mpirun started (dist::launch_ranks);
// rank 0 reports every rank's numbers.
void run_ranks(const TrainCommandOptions& o, const train::TrainOptions& options,
               const memory::Device& device) {
  const plan::ParallelPlan& parallel = options.plan.parallel;
  const int64_t tp = parallel.tensor_parallel;
  const bool mpi = dist::launched_by_mpirun();
  if (mpi && o.simulate_ranks > 0)
    throw UsageError("--simulate-ranks " + std::to_string(o.simulate_ranks) +
                     " runs ranks as threads of one process; under mpirun the ranks are mpirun's");
  const dist::LaunchSpec spec{o.simulate_ranks, tp, device.kind == memory::DeviceKind::meta};
  const int64_t world_size = dist::launched_world_size(spec);
  if (!mpi && o.simulate_ranks == 0) {
    if (parallel.zero != dist::ZeroStage::ddp)
      throw UsageError("--zero " + std::to_string(static_cast<int64_t>(parallel.zero)) +
                       " needs data-parallel ranks: run under mpirun -np N, or add "
                       "--simulate-ranks N");
    if (tp != 1 || parallel.data_parallel != 1) {
      const std::string n = std::to_string(tp * parallel.data_parallel);
      throw UsageError(
          (tp != 1 ? "--tp " + std::to_string(tp)
                   : "the plan's data_parallel " + std::to_string(parallel.data_parallel)) +
          " needs ranks: run under mpirun -np " + n + ", or add --simulate-ranks " + n);
    }
    RankOutcome one = train_rank(o, options, device, true);
    if (o.json) std::printf("%s\n", one.summary.dump().c_str());
    return;
  }
  require_plan_ranks(parallel, world_size);
  if (o.simulate_ranks > 0 &&
      (device.kind == memory::DeviceKind::sim || device.kind == memory::DeviceKind::cpu)) {
    // Every rank checks the host's budget for its own share only; simulated ranks share this
    // process's RAM, so their shares together must fit.
    const uint64_t per_rank = static_cast<uint64_t>(
        train::step_host_bytes(options, train::recompute_schedule(options), world_size / tp, tp));
    memory::require_host_memory(device.name(), per_rank * static_cast<uint64_t>(world_size),
                                "the parameters and saved activations of " +
                                    std::to_string(world_size) +
                                    " simulated ranks, all in this process");
  }
  dist::launch_ranks(spec, [&](const dist::LaunchedRank& rank) {
    train::TrainOptions mine = options;
    mine.set_groups(rank.groups.data_parallel, rank.groups.tensor_parallel);
    RankOutcome outcome = train_rank(o, mine, device, rank.speaks());
    // Rank 0 learns every rank's numbers: (W, 6) i64.
    const std::vector<int64_t> all = dist::all_gather_values(
        rank, {outcome.state.parameters, outcome.state.gradients, outcome.state.optimizer_states,
               outcome.peak_bytes, outcome.bytes_sent, outcome.tp_bytes_sent});
    if (!rank.speaks()) return;
    std::vector<RankOutcome> outcomes(static_cast<size_t>(rank.world_size));
    for (size_t r = 0; r < outcomes.size(); ++r) {
      outcomes[r].rank = static_cast<int64_t>(r);
      outcomes[r].state = {all[6 * r], all[6 * r + 1], all[6 * r + 2]};
      outcomes[r].peak_bytes = all[6 * r + 3];
      outcomes[r].bytes_sent = all[6 * r + 4];
      outcomes[r].tp_bytes_sent = all[6 * r + 5];
    }
    outcomes[0].summary = std::move(outcome.summary);
    report_ranks(o, options, outcomes, tp);
  });
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TrainCommandOptions>();
  auto* cmd = app.add_subcommand(
      "train",
      "Train a transformer on synthetic learnable tokens (the named models and their shapes: "
      "vramlab estimate --list-models)");
  add_model_options(*cmd, opts->model);
  cmd->add_option("--seq", opts->seq, "Sequence length T (default min(128, the context))")
      ->check(platform::integer_in(1));
  cmd->add_option("--batch", opts->batch, "Sequences per micro-batch B (default 8)")
      ->check(platform::integer_in(1));
  cmd->add_option("--vary-seq", opts->vary_seq,
                  "MIN: each step's T drawn from [MIN, --seq] (the run's seed; a loader without "
                  "packing), so every step allocates activations of its own sizes")
      ->check(platform::integer_in(1));
  cmd->add_option("--bucket-seq", opts->bucket_seq,
                  "With --vary-seq: pad each drawn T up to a multiple of N (at most --seq), so "
                  "fewer sizes reach the allocator (default 1: none)")
      ->check(platform::integer_in(1));
  cmd->add_option("--eval-batches", opts->eval_batches,
                  "M: after the steps, an evaluation loop of M forwards on a stream of its own "
                  "(default 0: none)")
      ->check(platform::integer_in(1));
  cmd->add_option("--eval-grad", opts->eval_grad,
                  "off (default): the evaluation runs under torch.no_grad(), saving nothing for a "
                  "backward | on: it saves what training would")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--eval-keep-graphs", opts->eval_keep_graphs,
                "With --eval-grad on: every batch's saved tensors stay until the loop ends, as "
                "`total_loss += loss` keeps each loss's graph (instead of loss.item())");
  cmd->add_flag(
      "--keep-outputs", opts->keep_outputs,
      "Stages a leak (lesson 08): every step's (B, T, V) logits stay on the device for "
      "the rest of the run, as outputs.append(logits) without .detach().cpu() keeps them");
  cmd->add_option("--steps", opts->steps, "Training steps (default 20)")
      ->check(platform::integer_in(1));
  cmd->add_option("--device", opts->device,
                  "cpu | sim[:preset|:size] | meta | cuda[:N] (default cpu)");
  cmd->add_option("--link-gbps", opts->link_gbps,
                  "Bandwidth of the host link in GB/s, both directions (default: the device "
                  "preset's, e.g. PCIe 4.0 x16's 31.5 on sim:a100-40g): the time a copy takes "
                  "on the device's stream clock");
  cmd->add_option("--memory-gbps", opts->memory_gbps,
                  "Device-memory bandwidth in GB/s (default: the preset's, e.g. 1555 on "
                  "meta:a100-40g): on a meta device a kernel takes its roofline time, "
                  "max(FLOPs / peak, bytes / this bandwidth)");
  cmd->add_option("--host-memory-gbps", opts->host_memory_gbps,
                  "With --offload optimizer on a meta device: the host's memory bandwidth in GB/s "
                  "(default 204.8, one socket of eight DDR4-3200 channels), which the host's "
                  "update, memory-bound, takes its time at on the device's clock");
  cmd->add_option("--nvme-path", opts->nvme_path,
                  "With --offload-optimizer-device nvme: the directory the optimizer states' files "
                  "(and with --offload-param-device nvme the parameters') go in (DeepSpeed's "
                  "nvme_path; not on meta, which makes no files)");
  cmd->add_option("--nvme-block-size", opts->nvme_block_size,
                  "Bytes per NVMe request, a multiple of 4096 (default 1MiB, DeepSpeed's aio "
                  "block_size)");
  cmd->add_option("--nvme-queue-depth", opts->nvme_queue_depth,
                  "NVMe requests in flight, 1 to 256 (default 8, DeepSpeed's aio queue_depth)");
  cmd->add_option("--nvme-engine", opts->nvme_engine,
                  "How requests reach the drive: auto (io_uring where the kernel allows it, "
                  "default) | io_uring | threads");
  cmd->add_option("--nvme-read-gbps", opts->nvme_read_gbps,
                  "The drive's read bandwidth in GB/s on the device's clock (default 7, a PCIe "
                  "4.0 x4 drive's)");
  cmd->add_option("--nvme-write-gbps", opts->nvme_write_gbps,
                  "The drive's write bandwidth in GB/s on the device's clock (default 5)");
  cmd->add_option("--peak-tflops", opts->peak_tflops,
                  "Dense peak TFLOP/s of the listed dtypes, DTYPE=TFLOPS[,...] with DTYPE fp32, "
                  "bf16 or fp16 (default: the preset's, e.g. fp32=19.5,bf16=312 on "
                  "meta:a100-40g): the other roof of a meta device's kernels (fp32 matmuls run "
                  "without TF32, as PyTorch's by default)");
  cmd->add_option("--kernels", opts->kernels,
                  "What runs the step: cpu (the CPU kernels; default on cpu and sim), "
                  "cuda-emulated (the CUDA kernels under the SIMT emulator, on cpu or sim memory), "
                  "cuda (the CUDA kernels on a GPU; the only choice and the default on a cuda "
                  "device), meta (nothing runs: the only choice and the default on meta).");
  cmd->add_option("--threads", opts->threads,
                  "Threads of the runtime's OpenMP pool (default: all cores)")
      ->check(platform::integer_in(1));
  cmd->add_option("--seed", opts->seed,
                  "Seed of the weights, the token stream and the dropout masks (default 1)");
  cmd->add_option("--simulate-ranks", opts->simulate_ranks,
                  "Run N ranks as threads of this process, each with its own device (meta: a "
                  "64-rank run sized on a laptop); N/--tp of them are data-parallel")
      ->check(platform::integer_in(1, 4096));
  opts->plan = std::make_shared<plan::PlanFlags>(*cmd, plan::Plan{}, plan::train_plan_flags());
  cmd->add_flag("--json", opts->json, "One JSON object per step and a final summary object");
  cmd->add_option("--profile", opts->profile_dir,
                  "Record the run (every allocation with its module, phase and C++ stack; a span "
                  "per phase, module and kernel) and write into DIR: snapshot.pickle (for "
                  "pytorch.org/memory_viz), snapshot.json, trace.json (Perfetto, "
                  "chrome://tracing), ops.txt and ops.json (the per-op memory table), "
                  "timeline.html; with ranks, DIR/rank0, DIR/rank1, ... (read one with vramlab "
                  "profile DIR/snapshot.pickle). Step times then include the recording's cost")
      ->each([opts](const std::string&) { opts->profile_given = true; });
  cmd->add_option("--snapshot-on-oom", opts->snapshot_on_oom,
                  "Record the allocator's history and, if the run runs out of memory, write the "
                  "snapshot at that moment to FILE (a pickle for vramlab profile and "
                  "pytorch.org/memory_viz; with ranks FILE's stem.rankR.pickle each), as "
                  "PyTorch's out-of-memory observer recipe does")
      ->each([opts](const std::string&) { opts->snapshot_on_oom_given = true; });
  cmd->add_option("--profile-stacks", opts->profile_stacks,
                  "on (default): capture a C++ call stack with every allocation; off: module, "
                  "phase and tensor only, for the lowest recording overhead")
      ->each([opts](const std::string&) { opts->profile_stacks_given = true; });
  cmd->callback([opts, &exit_code] {
    run_train(*opts);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
