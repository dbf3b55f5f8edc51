// vramlab maxbatch: the largest micro-batch that fits on a device, found by running whole steps
// (Lightning's batch-size finder, `power` or `binsearch`), beside the estimator's prediction.
//
//   vramlab maxbatch --model gpt2-124m --device sim:a100-40g --seq 512 [--mode power|binsearch]
//                    [--init 2] [--steps-per-trial 3] [--max-trials 25] [technique flags] [--json]
//
// Exit codes: 0 searched (a batch that fits found or not: the output says), 2 bad input.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/errors.h"
#include "common/platform/flag_checks.h"
#include "common/report/table.h"
#include "common/train/max_batch.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {
namespace {

using nlohmann::json;

struct MaxBatchCommandOptions {
  ModelFlags model;
  std::optional<int64_t> seq;
  std::string device = "sim";
  std::string mode = "binsearch";
  int64_t init = 2;
  int64_t steps_per_trial = 3;
  int64_t max_trials = 25;
  int64_t seed = 1;
  bool json = false;
  std::shared_ptr<plan::PlanFlags> plan;
};

void run_maxbatch(const MaxBatchCommandOptions& o) {
  const memory::Device device = memory::parse_device(o.device);
  if (device.kind == memory::DeviceKind::cpu)
    throw UsageError("--device cpu has no capacity to fill: give sim[:preset|:size] or meta[:...]");
  train::TrainOptions options;
  options.plan = o.plan->plan();
  options.model = o.model.build(o.seq);
  options.seq = o.seq.value_or(std::min<int64_t>(128, options.model.max_seq));
  options.seed = static_cast<uint64_t>(o.seed);
  train::MaxBatchOptions search;
  search.search = train::parse_batch_search(o.mode);
  search.first_batch = o.init;
  search.steps_per_trial = o.steps_per_trial;
  search.max_trials = o.max_trials;
  train::check_max_batch_options(search);
  {
    train::TrainOptions first = options;
    first.batch = o.init;
    train::validate(first);  // before the header: a bad value is the output's only line
  }
  if (!o.json)
    std::printf("vramlab maxbatch %s on %s, T=%lld, %s search from B=%lld, %lld steps a trial\n",
                options.model.name.c_str(), device.name().c_str(),
                static_cast<long long>(options.seq), o.mode.c_str(), static_cast<long long>(o.init),
                static_cast<long long>(o.steps_per_trial));
  const train::MaxBatchResult result =
      train::find_max_batch(device, options, search, [&](const train::BatchTrial& t) {
        if (o.json) return;
        std::printf(
            "  B=%-6lld %s\n", static_cast<long long>(t.batch),
            t.fits ? ("fits: peak " + memory::format_size(static_cast<uint64_t>(t.peak_bytes)) +
                      ", reserved " + memory::format_size(static_cast<uint64_t>(t.reserved_bytes)))
                         .c_str()
                   : ("out of memory (" + t.out_of_memory + ")").c_str());
        std::fflush(stdout);
      });
  if (o.json) {
    json trials = json::array();
    for (const train::BatchTrial& t : result.trials)
      trials.push_back({{"batch", t.batch},
                        {"fits", t.fits},
                        {"peak_bytes", t.fits ? json(t.peak_bytes) : json(nullptr)},
                        {"reserved_bytes", t.fits ? json(t.reserved_bytes) : json(nullptr)},
                        {"predicted_peak_bytes", t.predicted_bytes},
                        {"out_of_memory", t.fits ? json(nullptr) : json(t.out_of_memory)}});
    std::printf("%s\n", json{{"model", options.model.name},
                             {"device", device.name()},
                             {"capacity_bytes", device.spec.capacity_bytes},
                             {"seq", options.seq},
                             {"mode", o.mode},
                             {"steps_per_trial", o.steps_per_trial},
                             {"largest_batch", result.largest},
                             {"predicted_largest_batch", result.predicted},
                             {"hit_max_trials", result.hit_max_trials},
                             {"trials", trials},
                             {"plan", plan::to_json(options.plan)}}
                            .dump()
                            .c_str());
    return;
  }
  if (result.largest == 0)
    std::printf("no micro-batch fits %s, not even B=1 (the model states alone may not)\n",
                device.name().c_str());
  else
    std::printf("largest micro-batch that fits: B=%lld (%zu trials%s)\n",
                static_cast<long long>(result.largest), result.trials.size(),
                result.hit_max_trials ? ", stopped by --max-trials" : "");
  std::printf(
      "the estimator predicts B=%lld (its model states plus its activation peak; the step's "
      "temporaries are not in it)\n",
      static_cast<long long>(result.predicted));
}

}  // namespace

void add_maxbatch_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<MaxBatchCommandOptions>();
  auto* cmd = app.add_subcommand(
      "maxbatch",
      "Find the largest micro-batch that fits a device by running whole steps (Lightning's "
      "batch-size finder), beside the estimator's prediction");
  add_model_options(*cmd, opts->model);
  cmd->add_option("--seq", opts->seq, "Sequence length T (default min(128, the context))")
      ->check(platform::integer_in(1));
  cmd->add_option("--device", opts->device,
                  "sim[:preset|:size] | meta[:preset|:size] (default sim)");
  cmd->add_option("--mode", opts->mode,
                  "power: double until a trial fails, keep the last that fitted | binsearch "
                  "(default): then bisect between it and the first that failed");
  cmd->add_option("--init", opts->init, "The first trial's micro-batch (default 2)")
      ->check(platform::integer_in(1));
  cmd->add_option("--steps-per-trial", opts->steps_per_trial,
                  "Whole steps each trial runs (default 3, at least 2: the optimizer's states "
                  "appear at the first step)");
  cmd->add_option("--max-trials", opts->max_trials, "Trials at most (default 25)")
      ->check(platform::integer_in(1));
  cmd->add_option("--seed", opts->seed, "Seed of the model and the data (default 1)");
  opts->plan = std::make_shared<plan::PlanFlags>(*cmd, plan::Plan{}, plan::train_plan_flags());
  cmd->add_flag("--json", opts->json, "One JSON object: every trial, the largest, the prediction");
  cmd->callback([opts, &exit_code] {
    run_maxbatch(*opts);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
