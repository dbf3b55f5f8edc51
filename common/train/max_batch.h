/// \file
/// \brief The largest micro-batch that fits, found by running steps (Lightning's batch-size
/// finder; accelerate's find_executable_batch_size halves instead), beside the estimator's
/// prediction. Each trial is a fresh runtime and trainer that runs a few whole steps: the first
/// optimizer step creates the optimizer's states, so a trial of forward and backward alone would
/// pass batches that die at step() (Lightning's steps_per_trial defaults to 3 for that reason).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/train/trainer.h"

namespace vramlab::train {

/// How the search moves (Lightning's `mode`).
enum class BatchSearch {
  power,      ///< double from the first batch until a trial fails; the last that fitted
  binsearch,  ///< as power, then bisect between the last that fitted and the first that failed
};

/// \return "power" or "binsearch".
const char* batch_search_name(BatchSearch search);
/// \throws vramlab::UsageError naming \p text unless it is one of the names.
BatchSearch parse_batch_search(const std::string& text);

/// What the search does.
struct MaxBatchOptions {
  BatchSearch search = BatchSearch::binsearch;  ///< power or binsearch
  int64_t first_batch = 2;      ///< the first trial's micro-batch (Lightning's init_val)
  int64_t steps_per_trial = 3;  ///< whole steps per trial, ≥ 2: the states exist from the first
  int64_t max_trials = 25;      ///< trials at most (Lightning's max_trials)
  int64_t max_batch = int64_t{1} << 20;  ///< no trial beyond it
};

/// One trial: the micro-batch, whether it ran its steps, and its peak.
struct BatchTrial {
  int64_t batch = 0;            ///< the micro-batch B
  bool fits = false;            ///< it ran its steps
  int64_t peak_bytes = 0;       ///< allocated_bytes.all.peak over its steps (0 when it failed)
  int64_t reserved_bytes = 0;   ///< reserved_bytes.all.peak (what the device gave the cache)
  int64_t predicted_bytes = 0;  ///< the estimator's peak for this batch (max_batch.cpp)
  std::string out_of_memory;    ///< the error's first line when it failed
};

/// The search's outcome.
struct MaxBatchResult {
  std::vector<BatchTrial> trials;  ///< in the order they ran
  int64_t largest = 0;             ///< the largest micro-batch that fitted; 0 if none did
  int64_t predicted = 0;           ///< the estimator's largest (max_batch.cpp); 0 if none
  bool hit_max_trials = false;     ///< stopped by max_trials before the search ended
};

/// The estimator's peak for one step of \p options: the model states (parameters, gradients,
/// optimizer states, fp32 master) plus the activations' peak under the runtime's layout and
/// schedule. It leaves out the step's temporaries (the logits' gradient, a kernel's scratch), so
/// the runs find a smaller largest batch than it predicts where those matter.
/// \throws vramlab::UsageError as estimate_step().
int64_t predicted_peak_bytes(const TrainOptions& options);

/// \throws vramlab::UsageError naming the setting of \p search that cannot work.
void check_max_batch_options(const MaxBatchOptions& search);

/// Runs the search for \p options (their batch is replaced by each trial's) on \p device, one
/// rank. \p progress, if set, is told each trial's result as it ends.
/// \throws vramlab::UsageError for bad options (named); errors other than running out of memory.
MaxBatchResult find_max_batch(const memory::Device& device, const TrainOptions& options,
                              const MaxBatchOptions& search,
                              const std::function<void(const BatchTrial&)>& progress = {});

}  // namespace vramlab::train
