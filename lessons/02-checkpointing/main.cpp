// Lesson 02, gradient checkpointing: runs real training steps of one decoder-only transformer
// under every recompute schedule (none, full, every:K, sqrt, selective and the planner's cheapest
// schedule under a budget) and measures what each costs and saves, then searches the largest
// batch each fits on a small device by running it, sizes the same schedules at scale on meta and
// measures int8 activation compression.
//
//   build/bin/lesson02_checkpointing                       16 layers on a simulated T4, < 1 min
//   build/bin/lesson02_checkpointing --layers 64            the same model 4x deeper
//   build/bin/lesson02_checkpointing --json --out-dir /tmp/l02
//   build/bin/vramlab run 02 [--mine]
//
// The figures go to <build>/lesson-output/02 unless --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/workbook/lesson_main.h"
#include "lessons/02-checkpointing/checkpoint_report.h"
#include "lessons/02-checkpointing/claims_file.h"
#include "lessons/02-checkpointing/exercise_results.h"

namespace {

using namespace vramlab;

struct Options {
  ModelFlags model;  // empty: the lesson's 16-layer model (lesson_model())
  std::optional<int64_t> batch, seq;
  std::string device = "sim:t4-16g";
  std::string max_batch_device = "sim:128MiB";
  std::string meta_model = "llama2-7b";
  int64_t meta_seq = 4096;
  std::string budget;  // "" = half-way between sqrt and none
  int64_t steps = 3;
  uint64_t seed = 1;
  bool no_scale = false;
  bool no_compression = false;
};

// A GPT-2 shape deep enough that √L means something (16 blocks), small enough that seven
// schedules train three steps each in seconds on two cores: C = 64, 4 heads, gpt2-tiny's 4096
// tokens, T = 128. Without --model, the shape flags change this model (`--layers 64`); with
// --model they change the named one. Not gpt2-tiny's shape, so it is named as `vramlab train`
// names explicit shapes: "custom".
ModelConfig lesson_model(const ModelFlags& given, std::optional<int64_t> seq) {
  if (!given.name.empty()) return given.build(seq);
  ModelFlags flags = given;
  flags.name = "gpt2-tiny";
  if (!flags.layers) flags.layers = 16;
  if (!flags.hidden) flags.hidden = 64;
  if (!flags.heads) flags.heads = 4;
  if (!flags.max_seq) flags.max_seq = std::max<int64_t>(128, seq.value_or(128));
  ModelConfig model = flags.build(seq);
  model.name = "custom";
  return model;
}

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
  lesson02::LessonSettings s;
  s.run.model = lesson_model(o.model, o.seq);
  s.run.batch = o.batch.value_or(8);
  s.run.seq = o.seq.value_or(std::min<int64_t>(128, s.run.model.max_seq));
  s.run.device = memory::parse_device(o.device);
  s.run.dropout = plan.dropout.p;
  s.run.seed = o.seed;
  s.run.attention = plan.attention;
  s.run.steps = o.steps;
  if (!o.budget.empty()) {
    const recompute::RecomputeSpec spec = recompute::parse_recompute_spec("budget:" + o.budget);
    s.budget_bytes = spec.budget_bytes;
  }
  if (o.max_batch_device != "none") {
    s.max_batch_device = memory::parse_device(o.max_batch_device);
    if (s.max_batch_device.spec.capacity_bytes == 0)
      throw UsageError("--max-batch-device '" + o.max_batch_device +
                       "' has no capacity to fill: give a sim or meta device with a size, e.g. "
                       "sim:128MiB, or none");
  }
  s.scale = !o.no_scale;
  s.meta_model = model_config_by_name(o.meta_model);
  if (o.meta_seq < 1 || o.meta_seq > s.meta_model.max_seq)
    throw UsageError("--meta-seq " + std::to_string(o.meta_seq) + " outside [1, " +
                     std::to_string(s.meta_model.max_seq) + "] for '" + o.meta_model + "'");
  s.meta_seq = o.meta_seq;
  s.compression = !o.no_compression;

  run.on_out_of_memory(s.run.device.name(), "--device sim:t4-16g", "the default device",
                       "a schedule of the table");
  const lesson02::Lesson lesson = lesson02::run_lesson(s, run.progress_function());
  const lesson02::FigurePaths figures = lesson02::write_figures(lesson, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson02::to_json(lesson);
  out.text = lesson02::render_text(lesson, run.colour());
  out.figures = {{"memory_over_step_svg", figures.memory_over_step_svg},
                 {"tradeoff_svg", figures.tradeoff_svg}};
  out.claims_file = lesson02::files::claims_json();
  out.exercises = {std::string(lesson02::kExercisesHeading), lesson02::exercise_results(lesson)};
  const ModelConfig& m = s.run.model;
  const bool named = o.model.name == m.name && !o.model.layers && !o.model.hidden &&
                     !o.model.heads && !o.model.vocab && !o.model.ffn && !o.model.kv_heads;
  const std::string shape =
      !named ? "--layers " + std::to_string(m.layers) + " --hidden " + std::to_string(m.hidden) +
                   " --heads " + std::to_string(m.heads) + " --vocab " + std::to_string(m.vocab)
             : "--model " + m.name;
  out.next = {{run.command("--layers 64 --no-compression"),
               "O(N) or O(sqrt N)? the same schedules on 64 layers"},
              {run.command("--seq 512 --batch 2 --max-batch-device none"),
               "longer sequences: the attention probabilities grow with T^2"},
              {"vramlab train " + shape + " --recompute sqrt --dropout 0.1 --steps 20",
               "train with a schedule"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "02", "lesson02_checkpointing",
      "Lesson 02: gradient checkpointing and activation compression, measured schedule by "
      "schedule on real training steps.",
      "memory_over_step.svg and tradeoff.svg");
  CLI::App& app = lesson.app();
  add_model_options(app, o.model);
  app.add_option("--batch", o.batch, "Sequences per step B (default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default min(128, the model's maximum))");
  app.add_option("--device", o.device,
                 "Where the schedule table runs: cpu | sim[:preset|:size] | meta (default "
                 "sim:t4-16g)");
  app.add_option("--max-batch-device", o.max_batch_device,
                 "The device whose largest batch per schedule is searched, a sim or meta device "
                 "with a size, or none (default sim:128MiB)");
  app.add_option("--budget", o.budget,
                 "X of the budget:X row, bytes or a size such as 40MiB (default: half-way "
                 "between the sqrt and none activation peaks)");
  app.add_option("--steps", o.steps, "Training steps per schedule (default 3)")
      ->check(workbook::at_least(1));
  app.add_option("--seed", o.seed, "Seed of the weights, tokens and masks (default 1)");
  plan::Plan defaults;
  defaults.dropout.p = 0.1f;  // the masks are part of what a re-run forward must replay
  const plan::PlanFlags plan_flags(app, defaults,
                                   {plan::PlanFlag::dropout, plan::PlanFlag::attention});
  app.add_option("--meta-model", o.meta_model,
                 "The model of the at-scale table on meta (default llama2-7b)");
  app.add_option("--meta-seq", o.meta_seq, "Its T (default 4096; B = 1)");
  app.add_flag("--no-scale", o.no_scale, "Skip the at-scale table on meta");
  app.add_flag("--no-compression", o.no_compression, "Skip the int8 compression rows");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
