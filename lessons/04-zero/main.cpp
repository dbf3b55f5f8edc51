// Lesson 04, ZeRO 1/2/3 and FSDP: one small GPT-2 trained by 4 ranks with DDP, ZeRO-1, ZeRO-2
// and ZeRO-3; per rank the bytes of parameters, gradients and optimizer states (the allocator's
// requested bytes, beside `vramlab estimate`), the peak, the bytes sent per step beside the ZeRO
// paper's 2Ψ and 3Ψ, the losses against DDP's; then on `meta`, with simulated ranks, the ZeRO
// paper's Figure 1 (7.5B over 64 ranks), the seeds' Llama 2 7B over 8 and Llama 2 70B over 8 x 80
// GB with ZeRO-3; the seeds' claims.
//
//   build/bin/lesson04_zero                   re-runs itself under `mpirun -np 4` (4 processes)
//   build/bin/lesson04_zero --simulated       the 4 ranks as threads of one process
//   mpirun --allow-run-as-root --oversubscribe -np 2 build/bin/lesson04_zero --no-scale
//   build/bin/lesson04_zero --json --out-dir /tmp/l04
//   build/bin/vramlab run 04
//
// Without MPI in the build (or without its launcher) the ranks are simulated, and the output
// says so. Under mpirun rank 0 prints; the other ranks only train.
//
// The figures go to <build>/lesson-output/04 unless --out-dir says otherwise.
//
// Exit codes (workbook::LessonMain): 0 success, 1 out of memory or another run-time failure, 2 bad
// input (checked before mpirun starts the ranks, so it is one line, once).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/dist/launch_ranks.h"
#include "common/dist/mpi_communicator.h"
#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"
#include "common/workbook/lesson_main.h"
#include "lessons/04-zero/claims_file.h"
#include "lessons/04-zero/exercise_results.h"
#include "lessons/04-zero/zero_report.h"

namespace {

using namespace vramlab;

struct Options {
  std::string model;  // empty: the lesson's small model
  int64_t batch = 8, seq = 64, steps = 8, ranks = 4, scale_ranks = 64;
  std::string device = "sim";
  uint64_t seed = 1;
  std::vector<std::string> strategies;  // empty: all four
  bool prefetch = false, simulated = false, no_scale = false;
};

// A 4-layer GPT-2 (C = 64, 4 heads, V = 128): four blocks give ZeRO-3's timeline four
// gather/release teeth per pass, and 4 ranks x 4 strategies train in seconds.
ModelConfig lesson_model(const std::string& name, int64_t seq) {
  ModelFlags flags;
  if (!name.empty()) {
    flags.name = name;
    return flags.build(seq);
  }
  flags.family = "gpt2";
  flags.layers = 4;
  flags.hidden = 64;
  flags.heads = 4;
  flags.vocab = 128;
  flags.max_seq = std::max<int64_t>(64, seq);
  ModelConfig model = flags.build(seq);
  model.name = "gpt2-4x64";
  return model;
}

dist::ZeroStage parse_strategy(const std::string& name) {
  for (const dist::ZeroStage s : lesson04::kStages)
    if (dist::zero_stage_name(s) == name) return s;
  throw UsageError("unknown strategy '" + name + "' (ddp, zero1, zero2 or zero3)");
}

// Everything the command line says, checked before any rank starts.
lesson04::LessonSettings settings_of(const Options& o, const plan::Plan& plan) {
  lesson04::LessonSettings s;
  s.train.model = lesson_model(o.model, o.seq);
  s.train.batch = o.batch;
  s.train.seq = o.seq;
  s.train.device = memory::parse_device(o.device);
  s.train.seed = o.seed;
  s.train.steps = o.steps;
  s.train.precision = plan.amp.precision;
  s.train.learning_rate = plan.optimizer.learning_rate;
  s.train.prefetch = o.prefetch;
  s.ranks = o.ranks;
  if (!o.strategies.empty()) {
    s.stages.clear();
    for (const std::string& name : o.strategies) s.stages.push_back(parse_strategy(name));
  }
  train::TrainOptions check;
  check.model = s.train.model;
  check.batch = s.train.batch;
  check.seq = s.train.seq;
  check.plan.amp.precision = s.train.precision;
  train::validate(check);
  s.scale = !o.no_scale;
  s.figure1_model = lesson04::figure1_model();
  s.figure1_ranks = o.scale_ranks;
  s.seed_model = model_config_by_name("llama2-7b");
  s.big_model = model_config_by_name("llama2-70b");
  return s;
}

// Checked before mpirun starts the ranks (LessonMain checks the flags and prepares --out-dir
// first), so bad input is one line, once, not one per rank and then mpirun's.
workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run,
                           int argc, char** argv) {
  lesson04::Lesson lesson;
  lesson.settings = settings_of(o, plan);
  const bool under_mpirun = dist::launched_by_mpirun();
  if (!under_mpirun && !o.simulated) {
    if (dist::mpirun_usable()) {
      dist::exec_under_mpirun(argc, argv, o.ranks, run.colour());
      lesson.launch = std::string("could not start ") + build_info::kMpiexec + " (" +
                      std::strerror(errno) + "): the ranks are simulated threads instead.";
    } else {
      lesson.launch = "MPI is not part of this build (or its launcher is missing): the " +
                      std::to_string(o.ranks) +
                      " ranks are simulated threads of one process, which sum in rank order.";
    }
  }
  if (under_mpirun) {
    lesson.launch = "Started by mpirun: " + std::to_string(dist::launched_world_size({})) +
                    " processes, one rank each (OpenMPI), sharing this machine's cores.";
  } else if (o.simulated) {
    lesson.launch = "--simulated: the " + std::to_string(o.ranks) +
                    " ranks are threads of one process (dist::SimulatedCommunicator).";
  }
  // Rank 0 speaks for every rank; the others only train.
  workbook::LessonOutput out;
  out.silent = dist::launched_rank() != 0;
  run.on_out_of_memory(lesson.settings.train.device.name(), "--device sim:a100-80g",
                       "a larger simulated GPU", "a rank");
  void (*progress)(const std::string&) = out.silent ? nullptr : run.progress_function();
  lesson.training = lesson04::run_training(lesson.settings, under_mpirun, progress);
  if (out.silent) return out;
  if (lesson.settings.scale) lesson04::run_scale(lesson, progress);

  const lesson04::FigurePaths figures = lesson04::write_figures(lesson, run.out_dir().string());
  out.json = lesson04::to_json(lesson);
  out.text = lesson04::render_text(lesson, run.colour());
  out.figures = {{"memory_svg", figures.memory_svg},
                 {"communication_svg", figures.communication_svg},
                 {"timeline_svg", figures.timeline_svg}};
  out.exercises = {std::string(lesson04::kExercisesHeading), lesson04::exercise_results(lesson)};
  out.claims_file = lesson04::files::claims_json();
  out.next = {{run.command("--strategies zero3 --prefetch --no-scale"),
               "FSDP's prefetch: two units gathered at once"},
              {run.command("--simulated --no-scale"),
               "bitwise-equal losses: ranks summing in a fixed order"},
              {"vramlab estimate --model llama2-70b --zero 3 --dp 16", "how many GPUs 70B needs"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "04", "lesson04_zero",
      "Lesson 04: ZeRO 1/2/3 and FSDP. A small GPT-2 trained by 4 ranks (under mpirun) with DDP "
      "and each ZeRO stage: per-rank bytes, bytes sent, losses; then the ZeRO paper's 7.5B on 64 "
      "ranks, Llama 2 7B and 70B on 8, with simulated ranks on meta.",
      "zero_memory_per_rank.svg, zero_communication.svg and zero3_timeline.svg");
  CLI::App& app = lesson.app();
  app.add_option("--model", o.model,
                 "Model to train (default: a 4-layer GPT-2, C=64, 4 heads, V=128)");
  app.add_option("--batch", o.batch, "Sequences per rank per step B (default 8)")
      ->check(workbook::at_least(1));
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 64)")
      ->check(workbook::at_least(1));
  app.add_option("--steps", o.steps, "Training steps per strategy (default 8)")
      ->check(workbook::at_least(1));
  app.add_option("--ranks", o.ranks,
                 "Data-parallel ranks N: mpirun's -np, or simulated threads (1 to 64, default 4)")
      ->check(workbook::in_range(1, 64));
  app.add_flag("--simulated", o.simulated,
               "Run the ranks as threads of one process instead of under mpirun");
  app.add_option("--strategies", o.strategies, "Which strategies (default ddp,zero1,zero2,zero3)")
      ->delimiter(',');
  app.add_flag("--prefetch", o.prefetch,
               "ZeRO-3 gathers the next block with the current one (FSDP's prefetch)");
  app.add_option("--device", o.device,
                 "Every rank's device: cpu | sim[:preset|:size] | meta (default sim)");
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  plan::Plan defaults;
  defaults.amp.precision = plan::Precision::mixed_bf16;  // ZeRO's 2 + 2 + 12 bytes per parameter
  defaults.optimizer.learning_rate = 3e-3f;
  // --prefetch stays the lesson's own: it changes only the ZeRO-3 run of the strategies it trains.
  const plan::PlanFlags plan_flags(app, defaults,
                                   {plan::PlanFlag::precision, plan::PlanFlag::learning_rate});
  app.add_option("--scale-ranks", o.scale_ranks,
                 "Simulated ranks of the ZeRO paper's 7.5B on meta (1 to 1024, default 64, its "
                 "Figure 1)")
      ->check(workbook::in_range(1, 1024));
  app.add_flag("--no-scale", o.no_scale, "Skip the large models on meta");
  return lesson.run(
      argc, argv, [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r, argc, argv); });
}
