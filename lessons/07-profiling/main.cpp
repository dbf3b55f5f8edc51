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
#include <filesystem>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"
#include "common/workbook/lesson_main.h"
#include "lessons/07-profiling/claims_file.h"
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
  bool no_scale = false;
};

ModelConfig build_model(const std::string& name, int64_t seq) {
  ModelFlags flags;
  flags.name = name;
  return flags.build(seq);
}

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
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

  run.on_out_of_memory(s.run.device.name(), "--device sim:a100-80g", "a larger simulated GPU");
  const lesson07::Lesson lesson = lesson07::run_lesson(s, run.progress_function());
  const lesson07::FigurePaths figures = lesson07::write_figures(lesson, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson07::to_json(lesson);
  out.text = lesson07::render_text(lesson, run.colour());
  out.figures = {{"per_module_svg", figures.per_module_svg},
                 {"timeline_html", figures.timeline_html},
                 {"trace_html", figures.trace_html},
                 {"baseline_profile", figures.baseline_dir, false},
                 {"recompute_profile", figures.recompute_dir, false}};
  out.claims_file = lesson07::files::claims_json();
  out.after_figures =
      "Profiles (snapshot.pickle for pytorch.org/memory_viz, trace.json for ui.perfetto.dev, "
      "ops.txt): " +
      std::filesystem::path(figures.baseline_dir).filename().string() + ", " +
      std::filesystem::path(figures.recompute_dir).filename().string() + "\n";
  out.exercises = {std::string(lesson07::kExercisesHeading), lesson07::exercise_results(lesson)};
  out.next = {{run.command("--recompute every:2"), "checkpoint every other layer"},
              {"vramlab train --model gpt2-tiny --steps 3 --profile /tmp/prof", "any run"},
              {"vramlab profile /tmp/prof/snapshot.pickle", "the peak and its owners"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "07", "lesson07_profiling",
      "Lesson 07: memory profiling. A few training steps recorded with every allocation's "
      "module, phase and C++ stack: the peak and its owner, memory per module, the per-op table, "
      "checkpointing compared, a planted leak found from two snapshots, Llama 2 7B on meta.",
      "the figures and profiles");
  CLI::App& app = lesson.app();
  const auto positive = workbook::at_least(1);
  app.add_option("--model", o.model, "Model to profile (default gpt2-tiny: L=4, C=256, V=4096)");
  app.add_option("--batch", o.batch, "Sequences per step B (default 4)")->check(positive);
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 128)")->check(positive);
  app.add_option("--steps", o.steps,
                 "Steps recorded per configuration (default 3; >= 2: the first creates AdamW's "
                 "states)")
      ->check(workbook::at_least(2));
  app.add_option("--device", o.device,
                 "Where the training runs: cpu | sim[:preset|:size] | meta (default sim)");
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  plan::Plan defaults;
  defaults.recompute = plan::parse_recompute_spec("full");  // the second configuration's
  const plan::PlanFlags plan_flags(app, defaults, {plan::PlanFlag::recompute});
  app.add_option("--leak-after", o.leak_after, "First snapshot after this step (default 2)")
      ->check(positive);
  app.add_option("--leak-steps", o.leak_steps, "Steps between the two snapshots (default 3)")
      ->check(positive);
  app.add_option("--top", o.top, "Rows of the allocation and per-op tables (default 10)")
      ->check(positive);
  app.add_flag("--no-stacks", o.no_stacks, "Record without C++ call stacks");
  app.add_flag("--no-overhead", o.no_overhead, "Skip timing the steps without recording");
  app.add_option("--scale-model", o.scale_model, "Model profiled on meta (default llama2-7b)");
  app.add_option("--scale-batch", o.scale_batch, "Its batch (default 1)")->check(positive);
  app.add_option("--scale-seq", o.scale_seq, "Its sequence length (default 4096)")->check(positive);
  app.add_flag("--no-scale", o.no_scale, "Skip the runs on meta");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
