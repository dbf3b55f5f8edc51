// Lesson 03, mixed precision and gradient accumulation: trains one small decoder-only transformer
// under every precision (fp32, pure bf16, mixed bf16, mixed fp16 with PyTorch's GradScaler, mixed
// fp16 without a scaler, and with a static scale that overflows), measures the loss, the loss
// scale, the skipped steps and the bytes per category beside the estimator's, shows the
// gradients' exponents against fp16's range, runs gradient accumulation against one large batch,
// and sizes every precision for Llama 2 7B on meta.
//
//   build/bin/lesson03_mixed_precision                    on a simulated T4
//   build/bin/lesson03_mixed_precision --steps 600         longer runs
//   build/bin/lesson03_mixed_precision --json --out-dir /tmp/l03
//   build/bin/vramlab run 03 [--mine]
//
// The figures go to <build>/lesson-output/03 unless --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>
#include <string>

#include "common/amp/loss_scale_spec.h"
#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/errors.h"
#include "common/workbook/lesson_main.h"
#include "lessons/03-mixed-precision/claims_file.h"
#include "lessons/03-mixed-precision/precision_report.h"

namespace {

using namespace vramlab;

struct Options {
  ModelFlags model;  // empty: the lesson's small model (lesson_small_model())
  std::optional<int64_t> batch, seq;
  std::string device = "sim:t4-16g";
  int64_t steps = 200;
  uint64_t seed = 1;
  std::string overflow_scale = "static:262144";
  std::string underflow_scale = "static:0.000244140625";
  std::string meta_model = "llama2-7b";
  int64_t meta_seq = 512;
  bool no_scale = false;
  bool no_accumulation = false;
};

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
  lesson03::LessonSettings s;
  // The small GPT-2 with a vocabulary small enough (128) that fp32 gets within a quarter nat of
  // the synthetic chain's entropy rate in 200 steps; six such runs take about a minute.
  s.run.model = lesson_small_model(o.model, o.seq);
  s.run.batch = o.batch.value_or(8);
  s.run.seq = o.seq.value_or(std::min<int64_t>(32, s.run.model.max_seq));
  s.run.device = memory::parse_device(o.device);
  s.run.seed = o.seed;
  s.run.attention = plan.attention;
  s.run.steps = o.steps;
  s.run.learning_rate = plan.optimizer.learning_rate;
  if (o.overflow_scale != "none") {
    const amp::LossScaleSpec spec = amp::parse_loss_scale(o.overflow_scale);
    if (spec.kind != amp::LossScaleKind::fixed)
      throw UsageError("--overflow-scale '" + o.overflow_scale +
                       "' must be static:S (a fixed scale) or none");
    s.overflow_scale = spec.value;
  }
  if (o.underflow_scale != "none") {
    const amp::LossScaleSpec spec = amp::parse_loss_scale(o.underflow_scale);
    if (spec.kind != amp::LossScaleKind::fixed || spec.value >= 1.0)
      throw UsageError("--underflow-scale '" + o.underflow_scale +
                       "' must be static:S with S < 1 (it shrinks the gradients) or none");
    s.underflow_scale = spec.value;
  }
  s.accumulation = !o.no_accumulation;
  s.scale = !o.no_scale;
  s.meta_model = model_config_by_name(o.meta_model);
  if (o.meta_seq < 1 || o.meta_seq > s.meta_model.max_seq)
    throw UsageError("--meta-seq " + std::to_string(o.meta_seq) + " outside [1, " +
                     std::to_string(s.meta_model.max_seq) + "] for '" + o.meta_model + "'");
  s.meta_seq = o.meta_seq;

  run.on_out_of_memory(s.run.device.name(), "--device sim:t4-16g", "the default device");
  const lesson03::Lesson lesson = lesson03::run_lesson(s, run.progress_function());
  const lesson03::FigurePaths figures = lesson03::write_figures(lesson, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson03::to_json(lesson);
  out.text = lesson03::render_text(lesson, run.colour());
  out.figures = {{"loss_curves_svg", figures.loss_curves_svg},
                 {"loss_scale_svg", figures.loss_scale_svg},
                 {"gradient_exponents_svg", figures.exponents_svg}};
  out.claims_file = lesson03::files::claims_json();
  out.next = {
      {run.command("--layers 6 --steps 200 --no-scale"),
       "a deeper model: do the 16-bit modes still follow fp32?"},
      {run.command("--meta-model llama2-13b --meta-seq 1024"), "the whole model state at scale"},
      {"vramlab estimate --model llama2-7b --precision mixed-bf16 --grad-accum 8",
       "the estimator's view"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "03", "lesson03_mixed_precision",
      "Lesson 03: mixed precision and gradient accumulation, every precision trained on the same "
      "model and measured.",
      "loss_curves.svg, loss_scale.svg and gradient_exponents.svg");
  CLI::App& app = lesson.app();
  add_model_options(app, o.model);
  app.add_option("--batch", o.batch,
                 "Sequences per step B, also the effective batch of the accumulation table "
                 "(default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default min(32, the model's maximum))");
  app.add_option("--device", o.device,
                 "Where the modes train: cpu | sim[:preset|:size] | meta | cuda[:N] (default "
                 "sim:t4-16g)");
  app.add_option("--steps", o.steps, "Training steps per mode (default 200)")
      ->check(workbook::at_least(1));
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  app.add_option("--overflow-scale", o.overflow_scale,
                 "The static loss scale of the overflow row, static:S or none (default "
                 "static:262144, 2^18: too large for this model's early gradients)");
  app.add_option("--underflow-scale", o.underflow_scale,
                 "The static loss scale below 1 of the underflow row, static:S or none (default "
                 "static:0.000244140625, 2^-12: gradients 4096 times smaller, which fp16 flushes)");
  plan::Plan defaults;
  defaults.optimizer.learning_rate = 3e-3f;  // 200 steps of a tiny model: a large step
  const plan::PlanFlags plan_flags(app, defaults,
                                   {plan::PlanFlag::learning_rate, plan::PlanFlag::attention});
  app.add_option("--meta-model", o.meta_model,
                 "The model of the at-scale table on meta (default llama2-7b)");
  app.add_option("--meta-seq", o.meta_seq, "Its T (default 512; B = 1)");
  app.add_flag("--no-scale", o.no_scale, "Skip the at-scale table on meta");
  app.add_flag("--no-accumulation", o.no_accumulation, "Skip the accumulation table");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
