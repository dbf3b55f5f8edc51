// Lesson 07, memory profiling: a few training steps of a small GPT-2 recorded with every
// allocation's module, phase and C++ call stack and a span per phase, module and kernel; the peak
// and what owns it (by module, phase and stack), the memory per module, the largest allocations at
// the peak, the per-op table; the same steps with checkpointing (the table's totals grow, the
// peak drops); a planted leak found from two snapshots; Llama 2 7B on meta; the seeds' claims.
//
//   build/bin/lesson07_profiling                          the default run, well under a minute
//   build/bin/lesson07_profiling --recompute every:2 --top 20
//   build/bin/lesson07_profiling --json --out-dir /tmp/l07
//   build/bin/vramlab run 07
//
// The figures and both runs' profiles (snapshot.pickle for pytorch.org/memory_viz, trace.json for
// ui.perfetto.dev, the per-op tables, the HTML timeline) go to <build>/lesson-output/07 unless
// --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/terminal.h"
#include "common/train/trainer.h"
#include "common/workbook/lesson_binary.h"
#include "lessons/07-profiling/exercise_results.h"
#include "lessons/07-profiling/profile_report.h"

namespace {

using namespace vramlab;
namespace fs = std::filesystem;

struct Options {
  std::string model = "gpt2-tiny";
  int64_t batch = 4, seq = 128, steps = 3;
  std::string device = "sim";
  uint64_t seed = 1;
  int64_t leak_after = 2, leak_steps = 3, top = 10;
  bool no_stacks = false, no_overhead = false;
  std::string scale_model = "llama2-7b";
  int64_t scale_batch = 1, scale_seq = 4096;
  bool no_scale = false, json = false;
  std::string out_dir;
};

ModelConfig build_model(const std::string& name, int64_t seq) {
  ModelFlags flags;
  flags.name = name;
  return flags.build(seq);
}

std::string lesson_command(const std::string& flags) {
  return workbook::lesson_command("07", workbook::lesson_runs_mine(), flags);
}

int run(const Options& o, const plan::Plan& plan) {
  if (o.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(o.batch));
  if (o.seq < 1) throw UsageError("--seq must be >= 1, got " + std::to_string(o.seq));
  if (o.steps < 2)
    throw UsageError("--steps must be >= 2 (the first creates the optimizer states), got " +
                     std::to_string(o.steps));
  if (o.leak_after < 1)
    throw UsageError("--leak-after must be >= 1, got " + std::to_string(o.leak_after));
  if (o.leak_steps < 1)
    throw UsageError("--leak-steps must be >= 1, got " + std::to_string(o.leak_steps));
  if (o.top < 1) throw UsageError("--top must be >= 1, got " + std::to_string(o.top));
  if (o.scale_batch < 1)
    throw UsageError("--scale-batch must be >= 1, got " + std::to_string(o.scale_batch));
  if (o.scale_seq < 1)
    throw UsageError("--scale-seq must be >= 1, got " + std::to_string(o.scale_seq));

  lesson07::LessonSettings s;
  s.run.train.model = build_model(o.model, o.seq);
  s.run.train.batch = o.batch;
  s.run.train.seq = o.seq;
  s.run.train.seed = o.seed;
  s.run.device = memory::parse_device(o.device);
  s.run.steps = o.steps;
  s.run.cpp_stacks = !o.no_stacks;
  s.recompute = plan::to_string(plan.recompute);
  s.leak_after = o.leak_after;
  s.leak_steps = o.leak_steps;
  s.top = o.top;
  s.overhead = !o.no_overhead;
  s.scale = !o.no_scale;
  if (s.scale) {
    s.scale_run.train.model = build_model(o.scale_model, o.scale_seq);
    s.scale_run.train.batch = o.scale_batch;
    s.scale_run.train.seq = o.scale_seq;
    s.scale_run.device = memory::parse_device("meta");
    s.scale_run.steps = 2;
    s.medium_run.train.model = model_config_by_name("gpt2-355m");
    s.medium_run.train.batch = 16;
    s.medium_run.train.seq = 1024;
    s.medium_run.device = memory::parse_device("meta");
    s.medium_run.steps = 1;
  }

  // Every bad value named before the first run starts.
  train::validate(s.run.train);
  if (s.scale) train::validate(s.scale_run.train);

  // Made before any work: an --out-dir that cannot be a folder is named before the lesson runs.
  const fs::path out_dir = workbook::prepare_out_dir(o.out_dir, "07");
  lesson07::Lesson lesson;
  try {
    lesson = lesson07::run_lesson(s, o.json ? nullptr : workbook::print_progress);
  } catch (const memory::OutOfMemoryError& e) {
    std::fprintf(stderr, "%s\n\nlesson 07: a run does not fit %s. Try:\n  %s\n", e.what(),
                 s.run.device.name().c_str(),
                 lesson_command("--device sim:a100-80g   # a larger simulated GPU").c_str());
    return kExitFailure;
  }
  const lesson07::FigurePaths figures = lesson07::write_figures(lesson, out_dir.string());
  const std::vector<lesson07::ExerciseResult> exercises = lesson07::exercise_results(lesson);
  if (o.json) {
    nlohmann::json j = lesson07::to_json(lesson);
    j["exercises"] = workbook::exercise_results_json(exercises);
    j["figures"] = {{"per_module_svg", figures.per_module_svg},
                    {"timeline_html", figures.timeline_html},
                    {"trace_html", figures.trace_html},
                    {"baseline_profile", figures.baseline_dir},
                    {"recompute_profile", figures.recompute_dir}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::fputs(lesson07::render_text(lesson, report::use_colour(stdout)).c_str(), stdout);
  std::fputs(
      ("\n" + workbook::render_exercise_results(exercises, lesson07::kExercisesHeading)).c_str(),
      stdout);
  std::printf("\nFigures in %s: %s, %s, %s\n", workbook::out_dir_shown(out_dir).c_str(),
              fs::path(figures.per_module_svg).filename().c_str(),
              fs::relative(figures.timeline_html, out_dir).c_str(),
              fs::path(figures.trace_html).filename().c_str());
  std::printf(
      "Profiles (snapshot.pickle for pytorch.org/memory_viz, trace.json for "
      "ui.perfetto.dev, ops.txt): %s, %s\n",
      fs::path(figures.baseline_dir).filename().c_str(),
      fs::path(figures.recompute_dir).filename().c_str());
  std::printf("Next:\n  %s   # checkpoint every other layer\n",
              lesson_command("--recompute every:2").c_str());
  std::printf("  vramlab train --model gpt2-tiny --steps 3 --profile /tmp/prof   # any run\n");
  std::printf("  vramlab profile /tmp/prof/snapshot.pickle   # the peak and its owners\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  CLI::App app{
      "Lesson 07: memory profiling. A few training steps recorded with every allocation's "
      "module, phase and C++ stack: the peak and its owner, memory per module, the per-op table, "
      "checkpointing compared, a planted leak found from two snapshots, Llama 2 7B on meta.",
      "lesson07_profiling"};
  app.add_option("--model", o.model, "Model to profile (default gpt2-tiny: L=4, C=256, V=4096)");
  app.add_option("--batch", o.batch, "Sequences per step B (default 4)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 128)");
  app.add_option("--steps", o.steps,
                 "Steps recorded per configuration (default 3; >= 2: the first creates AdamW's "
                 "states)");
  app.add_option("--device", o.device,
                 "Where the training runs: cpu | sim[:preset|:size] | meta (default sim)");
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  plan::Plan defaults;
  defaults.recompute = plan::parse_recompute_spec("full");  // the second configuration's
  const plan::PlanFlags plan_flags(app, defaults, {plan::PlanFlag::recompute});
  app.add_option("--leak-after", o.leak_after, "First snapshot after this step (default 2)");
  app.add_option("--leak-steps", o.leak_steps, "Steps between the two snapshots (default 3)");
  app.add_option("--top", o.top, "Rows of the allocation and per-op tables (default 10)");
  app.add_flag("--no-stacks", o.no_stacks, "Record without C++ call stacks");
  app.add_flag("--no-overhead", o.no_overhead, "Skip timing the steps without recording");
  app.add_option("--scale-model", o.scale_model, "Model profiled on meta (default llama2-7b)");
  app.add_option("--scale-batch", o.scale_batch, "Its batch (default 1)");
  app.add_option("--scale-seq", o.scale_seq, "Its sequence length (default 4096)");
  app.add_flag("--no-scale", o.no_scale, "Skip the runs on meta");
  app.add_flag("--json", o.json, "One JSON object instead of the tables");
  app.add_option("--out-dir", o.out_dir,
                 "Where the figures and profiles go (default: lesson-output/07 in the build "
                 "directory)");
  return workbook::run_lesson_main(app, argc, argv, "lesson07_profiling",
                                   [&] { return run(o, plan_flags.plan()); });
}
