// The largest micro-batch that fits, by running steps (see max_batch.h).
#include "common/train/max_batch.h"

#include <algorithm>
#include <string>

#include "common/dist/launch_ranks.h"
#include "common/memory/oom_error.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"

namespace vramlab::train {

const char* batch_search_name(BatchSearch search) {
  return search == BatchSearch::power ? "power" : "binsearch";
}

BatchSearch parse_batch_search(const std::string& text) {
  if (text == "power") return BatchSearch::power;
  if (text == "binsearch") return BatchSearch::binsearch;
  throw UsageError("--mode '" + text + "': expected power or binsearch");
}

int64_t predicted_peak_bytes(const TrainOptions& options) {
  const estimate::Estimate e = estimate_step(options, 1, 1);
  return e.parameters.bytes + e.gradients.bytes + e.optimizer_states.bytes +
         e.runtime_schedule_peak_bytes;
}

namespace {

// One trial: a fresh runtime and trainer (one rank; a ZeRO plan gets a group of one) running
// `steps` whole steps at micro-batch `batch`.
BatchTrial run_trial(const memory::Device& device, TrainOptions options, int64_t batch,
                     int64_t steps) {
  BatchTrial trial;
  trial.batch = batch;
  options.batch = batch;
  trial.predicted_bytes = predicted_peak_bytes(options);
  const bool zero = options.plan.parallel.zero != plan::ZeroStage::ddp;
  const dist::LaunchSpec one{zero ? 1 : 0, 1, device.kind == memory::DeviceKind::meta};
  try {
    dist::launch_ranks(one, [&](const dist::LaunchedRank& rank) {
      TrainOptions o = options;
      o.set_groups(rank.groups.data_parallel, rank.groups.tensor_parallel);
      nn::Runtime runtime(device);
      Trainer trainer(runtime, o);
      for (int64_t s = 0; s < steps; ++s) (void)trainer.step();
      const MemoryReport report = trainer.memory_report();
      trial.peak_bytes = report.peak_total_bytes;
      trial.reserved_bytes = report.reserved_peak_bytes;
    });
    trial.fits = true;
  } catch (const memory::OutOfMemoryError& e) {
    const std::string text = e.what();
    trial.out_of_memory = text.substr(0, text.find(". GPU"));
  }
  return trial;
}

}  // namespace

void check_max_batch_options(const MaxBatchOptions& search) {
  if (search.first_batch < 1 || search.first_batch > search.max_batch)
    throw UsageError("--init " + std::to_string(search.first_batch) + " must be in [1, " +
                     std::to_string(search.max_batch) + "]");
  if (search.steps_per_trial < 2)
    throw UsageError("--steps-per-trial " + std::to_string(search.steps_per_trial) +
                     " must be >= 2: the optimizer's states appear at the first step");
  if (search.max_trials < 1)
    throw UsageError("--max-trials " + std::to_string(search.max_trials) + " must be >= 1");
}

MaxBatchResult find_max_batch(const memory::Device& device, const TrainOptions& options,
                              const MaxBatchOptions& search,
                              const std::function<void(const BatchTrial&)>& progress) {
  check_max_batch_options(search);
  TrainOptions first = options;
  first.batch = search.first_batch;
  validate(first);  // a bad option is found before any trial runs

  MaxBatchResult result;
  const auto trial = [&](int64_t batch) {
    result.trials.push_back(run_trial(device, options, batch, search.steps_per_trial));
    if (progress) progress(result.trials.back());
    return result.trials.back().fits;
  };
  const auto budget_left = [&] {
    const bool left = static_cast<int64_t>(result.trials.size()) < search.max_trials;
    if (!left) result.hit_max_trials = true;
    return left;
  };
  // Up from the first batch (or down by halves while even it fails): `low` fits, `high` fails
  // (0: none has yet).
  int64_t low = 0, high = 0, batch = search.first_batch;
  while (budget_left()) {
    if (trial(batch)) {
      low = batch;
      if (high != 0 || batch == search.max_batch) break;
      batch = std::min(2 * batch, search.max_batch);
    } else {
      high = batch;
      if (low != 0 || batch == 1) break;
      batch = batch / 2;
    }
  }
  if (search.search == BatchSearch::binsearch && low != 0 && high != 0) {
    // The peak is assumed to grow with the batch; the page shows where the allocator's rounding
    // makes it a staircase instead.
    while (high - low > 1 && budget_left()) {
      const int64_t mid = low + (high - low) / 2;
      if (trial(mid)) {
        low = mid;
      } else {
        high = mid;
      }
    }
  }
  result.largest = low;

  // The estimator's answer over the same range, by bisection on its (monotonic) peak.
  const int64_t capacity = static_cast<int64_t>(device.spec.capacity_bytes);
  const auto predicted_fits = [&](int64_t b) {
    TrainOptions o = options;
    o.batch = b;
    try {
      return predicted_peak_bytes(o) <= capacity;
    } catch (const UsageError&) {
      return false;  // its bytes overflow 64 bits: far beyond any device
    }
  };
  if (predicted_fits(1)) {
    int64_t fits = 1, fails = search.max_batch + 1;
    while (fails - fits > 1) {
      const int64_t mid = fits + (fails - fits) / 2;
      if (predicted_fits(mid)) {
        fits = mid;
      } else {
        fails = mid;
      }
    }
    result.predicted = fits;
  }
  return result;
}

}  // namespace vramlab::train
