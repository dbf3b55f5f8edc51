// The planner's proof: running a candidate on meta devices (see plan_run.h).
#include "common/planner/plan_run.h"

#include <algorithm>
#include <mutex>

#include "common/dist/launch_ranks.h"
#include "common/memory/expandable_segments_scope.h"
#include "common/memory/oom_error.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::planner {

MeasuredRun run_plan(const Problem& problem, const Candidate& candidate, memory::DeviceKind kind,
                     int64_t steps) {
  if (steps < 2)
    throw UsageError("--steps " + std::to_string(steps) +
                     " must be >= 2: the optimizer's states appear at the first step");
  if (kind != memory::DeviceKind::meta && kind != memory::DeviceKind::sim)
    throw UsageError("the planner runs its plan on meta or sim devices, not " +
                     std::string(memory::device_kind_name(kind)));
  memory::Device device = problem.machine.device;
  device.kind = kind;
  train::TrainOptions options;
  options.model = problem.model;
  options.seq = problem.seq;
  options.batch = candidate.micro_batch;
  options.plan = candidate.plan;
  options.host_memory_bytes_per_s = problem.machine.host_memory_bytes_per_s;
  options.nvme.read_bytes_per_s = problem.machine.host.nvme_read_bytes_per_s;
  options.nvme.write_bytes_per_s = problem.machine.host.nvme_write_bytes_per_s;
  const int64_t gpus =
      candidate.plan.parallel.data_parallel * candidate.plan.parallel.tensor_parallel;
  // A ZeRO plan on one GPU still shards, over a group of one.
  const bool ranks = gpus > 1 || candidate.plan.parallel.zero != plan::ZeroStage::ddp;
  const dist::LaunchSpec spec{ranks ? gpus : 0, candidate.plan.parallel.tensor_parallel,
                              kind == memory::DeviceKind::meta};
  const memory::ExpandableSegmentsScope expandable(device);
  MeasuredRun run;
  std::mutex mutex;
  try {
    dist::launch_ranks(spec, [&](const dist::LaunchedRank& rank) {
      train::TrainOptions o = options;
      o.set_groups(rank.groups.data_parallel, rank.groups.tensor_parallel);
      nn::Runtime runtime(device);
      train::Trainer trainer(runtime, o);
      double last = 0.0;
      for (int64_t s = 0; s < steps; ++s) last = trainer.step().clock_seconds;
      const train::MemoryReport report = trainer.memory_report();
      const std::lock_guard lock(mutex);
      run.peak_bytes = std::max(run.peak_bytes, report.peak_total_bytes);
      run.reserved_bytes = std::max(run.reserved_bytes, report.reserved_peak_bytes);
      if (rank.speaks()) run.step_seconds = last;
    });
    run.fits = true;
  } catch (const memory::OutOfMemoryError& e) {
    const std::string text = e.what();
    run.out_of_memory = text.substr(0, text.find(". GPU"));
    run.peak_bytes = run.reserved_bytes = 0;
  }
  return run;
}

}  // namespace vramlab::planner
