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
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input (checked before
// mpirun starts the ranks, so it is one line, once).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/dist/launch_ranks.h"
#include "common/dist/mpi_communicator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "common/train/trainer.h"
#include "common/workbook/lesson_binary.h"
#include "lessons/04-zero/exercise_results.h"
#include "lessons/04-zero/zero_report.h"

namespace {

using namespace vramlab;
namespace fs = std::filesystem;

struct Options {
  std::string model;  // empty: the lesson's small model
  int64_t batch = 8, seq = 64, steps = 8, ranks = 4, scale_ranks = 64;
  std::string device = "sim";
  uint64_t seed = 1;
  std::vector<std::string> strategies;  // empty: all four
  bool prefetch = false, simulated = false, no_scale = false, json = false;
  std::string out_dir;
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

std::string lesson_command(const std::string& flags) {
  return workbook::lesson_command("04", workbook::lesson_runs_mine(), flags);
}

dist::ZeroStage parse_strategy(const std::string& name) {
  for (const dist::ZeroStage s : lesson04::kStages)
    if (dist::zero_stage_name(s) == name) return s;
  throw UsageError("unknown strategy '" + name + "' (ddp, zero1, zero2 or zero3)");
}

// Everything the command line says, checked before any rank starts.
lesson04::LessonSettings settings_of(const Options& o, const plan::Plan& plan) {
  if (o.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(o.batch));
  if (o.seq < 1) throw UsageError("--seq must be >= 1, got " + std::to_string(o.seq));
  if (o.steps < 1) throw UsageError("--steps must be >= 1, got " + std::to_string(o.steps));
  if (o.ranks < 1 || o.ranks > 64)
    throw UsageError("--ranks must be in [1, 64], got " + std::to_string(o.ranks));
  if (o.scale_ranks < 1 || o.scale_ranks > 1024)
    throw UsageError("--scale-ranks must be in [1, 1024], got " + std::to_string(o.scale_ranks));
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

int run(const Options& o, const plan::Plan& plan, int argc, char** argv) {
  lesson04::Lesson lesson;
  lesson.settings = settings_of(o, plan);
  // Made before any work, and before mpirun starts the ranks: an --out-dir that cannot be a
  // folder is named once, in one line, not by every rank and then by mpirun.
  const fs::path out_dir = workbook::prepare_out_dir(o.out_dir, "04");
  const bool under_mpirun = dist::launched_by_mpirun();
  if (!under_mpirun && !o.simulated) {
    if (dist::mpirun_usable()) {
      dist::exec_under_mpirun(argc, argv, o.ranks, report::use_colour(stdout));
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
  const bool speaks = dist::launched_rank() == 0;
  void (*progress)(const std::string&) = speaks && !o.json ? workbook::print_progress : nullptr;
  try {
    lesson.training = lesson04::run_training(lesson.settings, under_mpirun, progress);
  } catch (const memory::OutOfMemoryError& e) {
    std::fprintf(stderr, "%s\n\nlesson 04: a rank does not fit %s. Try:\n  %s\n", e.what(),
                 lesson.settings.train.device.name().c_str(),
                 lesson_command("--device sim:a100-80g   # a larger simulated GPU").c_str());
    return kExitFailure;
  }
  if (!speaks) return 0;
  if (lesson.settings.scale) lesson04::run_scale(lesson, progress);

  const lesson04::FigurePaths figures = lesson04::write_figures(lesson, out_dir.string());
  const std::vector<lesson04::ExerciseResult> exercises = lesson04::exercise_results(lesson);
  if (o.json) {
    nlohmann::json j = lesson04::to_json(lesson);
    j["exercises"] = workbook::exercise_results_json(exercises);
    j["figures"] = {{"memory_svg", figures.memory_svg},
                    {"communication_svg", figures.communication_svg},
                    {"timeline_svg", figures.timeline_svg}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::fputs(lesson04::render_text(lesson, report::use_colour(stdout)).c_str(), stdout);
  std::fputs(
      ("\n" + workbook::render_exercise_results(exercises, lesson04::kExercisesHeading)).c_str(),
      stdout);
  std::printf("\nFigures in %s: %s, %s, %s\n", workbook::out_dir_shown(out_dir).c_str(),
              fs::path(figures.memory_svg).filename().c_str(),
              fs::path(figures.communication_svg).filename().c_str(),
              fs::path(figures.timeline_svg).filename().c_str());
  std::printf("Next:\n  %s   # FSDP's prefetch: two units gathered at once\n",
              lesson_command("--strategies zero3 --prefetch --no-scale").c_str());
  std::printf("  %s   # bitwise-equal losses: ranks summing in a fixed order\n",
              lesson_command("--simulated --no-scale").c_str());
  std::printf(
      "  vramlab estimate --model llama2-70b --zero 3 --dp 16   # how many GPUs 70B needs\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  CLI::App app{
      "Lesson 04: ZeRO 1/2/3 and FSDP. A small GPT-2 trained by 4 ranks (under mpirun) with DDP "
      "and each ZeRO stage: per-rank bytes, bytes sent, losses; then the ZeRO paper's 7.5B on 64 "
      "ranks, Llama 2 7B and 70B on 8, with simulated ranks on meta.",
      "lesson04_zero"};
  app.add_option("--model", o.model,
                 "Model to train (default: a 4-layer GPT-2, C=64, 4 heads, V=128)");
  app.add_option("--batch", o.batch, "Sequences per rank per step B (default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 64)");
  app.add_option("--steps", o.steps, "Training steps per strategy (default 8)");
  app.add_option("--ranks", o.ranks,
                 "Data-parallel ranks N: mpirun's -np, or simulated threads (default 4)");
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
                 "Simulated ranks of the ZeRO paper's 7.5B on meta (default 64, its Figure 1)");
  app.add_flag("--no-scale", o.no_scale, "Skip the large models on meta");
  app.add_flag("--json", o.json, "One JSON object (printed by rank 0) instead of the tables");
  app.add_option("--out-dir", o.out_dir,
                 "Where zero_memory_per_rank.svg, zero_communication.svg and zero3_timeline.svg "
                 "go (default: lesson-output/04 in the build directory)");
  return workbook::run_lesson_main(app, argc, argv, "lesson04_zero",
                                   [&] { return run(o, plan_flags.plan(), argc, argv); });
}
