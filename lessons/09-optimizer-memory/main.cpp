// Lesson 09, optimizer memory: one small model trained with every optimizer the runtime has
// (sgd, sgd-momentum, adamw, adamw-8bit, lion, adam-mini, adafactor), each with its family's
// learning rate; the bytes each keeps, measured by Optimizer::state_bytes() and by the allocator
// beside the estimator, in fp32 and mixed-bf16; the losses against AdamW's; how far 8-bit AdamW's
// moments drift from fp32's on the same gradients; Llama 2 7B and 70B on meta; the seeds' claims.
//
//   build/bin/lesson09_optimizer_memory                           every optimizer, about 20 s on
//                                                                 2 cores
//   build/bin/lesson09_optimizer_memory --optimizers adamw,lion --steps 100
//   build/bin/lesson09_optimizer_memory --json --out-dir /tmp/l09
//   build/bin/vramlab run 09
//
// The figures go to <build>/lesson-output/09 unless --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/workbook/lesson_main.h"
#include "lessons/09-optimizer-memory/claims_file.h"
#include "lessons/09-optimizer-memory/exercise_results.h"
#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace {

using namespace vramlab;

struct Options {
  std::string model;  // empty: the lesson's small model
  int64_t batch = 8, seq = 64, steps = 300;
  std::string device = "sim";
  uint64_t seed = 1;
  std::vector<std::string> optimizers;  // empty: all
  lesson09::LearningRates rates;
  int64_t quantization_every = 50;
  std::vector<std::string> scale_models = {"llama2-7b", "llama2-70b"};
  bool no_scale = false;
};

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
  lesson09::LessonSettings s;
  ModelFlags model;
  model.name = o.model;
  s.train.model = lesson_small_model(model, o.seq);
  s.train.batch = o.batch;
  s.train.seq = o.seq;
  s.train.device = memory::parse_device(o.device);
  s.train.seed = o.seed;
  s.train.steps = o.steps;
  s.train.precision = plan.amp.precision;
  s.train.eight_bit = plan.optimizer.eight_bit;
  s.train.quantization_every = o.quantization_every;
  s.rates = o.rates;
  s.rates.adamw = plan.optimizer.learning_rate;
  if (!o.optimizers.empty()) {
    s.optimizers.clear();
    for (const std::string& name : o.optimizers)
      s.optimizers.push_back(estimate::parse_optimizer(name));
  }
  s.scale = !o.no_scale;
  if (s.scale)
    for (const std::string& name : o.scale_models)
      s.scale_models.push_back(model_config_by_name(name));

  run.on_out_of_memory(s.train.device.name(), "--device sim:a100-80g", "a larger simulated GPU");
  const lesson09::Lesson lesson = lesson09::run_lesson(s, run.progress_function());
  const lesson09::FigurePaths figures = lesson09::write_figures(lesson, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson09::to_json(lesson);
  out.text = lesson09::render_text(lesson, run.colour());
  out.figures = {{"bytes_per_param_svg", figures.bytes_svg},
                 {"loss_curves_svg", figures.losses_svg}};
  out.claims_file = lesson09::files::claims_json();
  out.exercises = {std::string(lesson09::kExercisesHeading), lesson09::exercise_results(lesson)};
  out.next = {{run.command("--optimizers adamw,adamw-8bit --fp32-embeddings"),
               "embeddings in 32 bits, as bitsandbytes' StableEmbedding"},
              {run.command("--optimizers adamw-8bit --block-size 2048 --no-scale"),
               "the paper's block size: less absmax"},
              {"vramlab estimate --model llama2-7b --optimizer adam-mini --zero 3 --dp 8",
               "states sharded too"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "09", "lesson09_optimizer_memory",
      "Lesson 09: optimizer memory. Every optimizer trained on a small model, the bytes each "
      "keeps measured beside the estimator, 8-bit AdamW's quantisation error, Llama 2 7B and 70B "
      "on meta.",
      "optimizer_bytes_per_param.svg and optimizer_loss_curves.svg");
  CLI::App& app = lesson.app();
  app.add_option("--model", o.model,
                 "Model to train (default: a 2-layer GPT-2, C=64, 4 heads, V=128)");
  app.add_option("--batch", o.batch, "Sequences per step B (default 8)")
      ->check(workbook::at_least(1));
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 64)")
      ->check(workbook::at_least(1));
  app.add_option("--steps", o.steps, "Training steps per optimizer (default 300)")
      ->check(workbook::at_least(1));
  app.add_option("--device", o.device,
                 "Where the training runs: cpu | sim[:preset|:size] | meta (default sim)");
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  app.add_option("--optimizers", o.optimizers,
                 "Which optimizers (default all: sgd,sgd-momentum,adamw,adamw-8bit,lion,"
                 "adam-mini,adafactor)")
      ->delimiter(',');
  plan::Plan defaults;
  // AdamW's rate, also 8-bit AdamW's and Adam-mini's; the others have their own flags below.
  defaults.optimizer.learning_rate = o.rates.adamw;
  const plan::PlanFlags plan_flags(
      app, defaults,
      {plan::PlanFlag::precision, plan::PlanFlag::learning_rate, plan::PlanFlag::block_size,
       plan::PlanFlag::min_8bit_size, plan::PlanFlag::fp32_embeddings});
  app.add_option("--lion-lr", o.rates.lion, "Lion's (default 0.001, 3x smaller)")
      ->check(workbook::positive_finite());
  app.add_option("--adafactor-lr", o.rates.adafactor,
                 "Adafactor's relative step ρ (default 0.01, torch.optim.Adafactor's)")
      ->check(workbook::positive_finite());
  app.add_option("--sgd-lr", o.rates.sgd, "Plain SGD's (default 1)")
      ->check(workbook::positive_finite());
  app.add_option("--sgd-momentum-lr", o.rates.sgd_momentum, "SGD with momentum 0.9's (default 0.1)")
      ->check(workbook::positive_finite());
  app.add_option("--quantization-every", o.quantization_every,
                 "Compare 8-bit AdamW's moments with fp32's every N steps (default 50; 0: never)")
      ->check(workbook::at_least(0));
  app.add_option("--scale-models", o.scale_models,
                 "Models measured on meta (default llama2-7b,llama2-70b)")
      ->delimiter(',');
  app.add_flag("--no-scale", o.no_scale, "Skip the large models on meta");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
