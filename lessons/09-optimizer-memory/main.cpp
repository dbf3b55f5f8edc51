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
#include <CLI/CLI.hpp>
#include <cmath>
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
#include "common/report/terminal.h"
#include "common/workbook/lesson_binary.h"
#include "lessons/09-optimizer-memory/exercise_results.h"
#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace {

using namespace vramlab;
namespace fs = std::filesystem;

struct Options {
  std::string model;  // empty: the lesson's small model
  int64_t batch = 8, seq = 64, steps = 300;
  std::string device = "sim";
  uint64_t seed = 1;
  std::vector<std::string> optimizers;  // empty: all
  lesson09::LearningRates rates;
  int64_t quantization_every = 50;
  std::vector<std::string> scale_models = {"llama2-7b", "llama2-70b"};
  bool no_scale = false, json = false;
  std::string out_dir;
};

// Lesson 03's small GPT-2 (L = 2, C = 64, 4 heads, V = 128): every optimizer trains it to near
// the token stream's floor in a few hundred steps, seven times over in well under a minute.
ModelConfig lesson_model(const std::string& name, int64_t seq) {
  ModelFlags flags;
  if (!name.empty()) {
    flags.name = name;
    return flags.build(seq);
  }
  flags.name = "gpt2-tiny";
  flags.layers = 2;
  flags.hidden = 64;
  flags.heads = 4;
  flags.vocab = 128;
  flags.max_seq = std::max<int64_t>(64, seq);
  ModelConfig model = flags.build(seq);
  model.name = "custom";
  return model;
}

std::string lesson_command(const std::string& flags) {
  return workbook::lesson_command("09", workbook::lesson_runs_mine(), flags);
}

void require_rate(const char* flag, float value) {
  if (!(value > 0.0f) || !std::isfinite(value))
    throw UsageError(std::string(flag) + " must be a finite number > 0, got " +
                     std::to_string(value));
}

int run(const Options& o, const plan::Plan& plan) {
  lesson09::LessonSettings s;
  if (o.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(o.batch));
  if (o.seq < 1) throw UsageError("--seq must be >= 1, got " + std::to_string(o.seq));
  if (o.steps < 1) throw UsageError("--steps must be >= 1, got " + std::to_string(o.steps));
  if (o.quantization_every < 0)
    throw UsageError("--quantization-every must be >= 0, got " +
                     std::to_string(o.quantization_every));
  require_rate("--lion-lr", o.rates.lion);
  require_rate("--adafactor-lr", o.rates.adafactor);
  require_rate("--sgd-lr", o.rates.sgd);
  require_rate("--sgd-momentum-lr", o.rates.sgd_momentum);
  s.train.model = lesson_model(o.model, o.seq);
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

  // Made before any work: an --out-dir that cannot be a folder is named before the lesson runs.
  const fs::path out_dir = workbook::prepare_out_dir(o.out_dir, "09");
  lesson09::Lesson lesson;
  try {
    lesson = lesson09::run_lesson(s, o.json ? nullptr : workbook::print_progress);
  } catch (const memory::OutOfMemoryError& e) {
    std::fprintf(stderr, "%s\n\nlesson 09: a run does not fit %s. Try:\n  %s\n", e.what(),
                 s.train.device.name().c_str(),
                 lesson_command("--device sim:a100-80g   # a larger simulated GPU").c_str());
    return kExitFailure;
  }
  const lesson09::FigurePaths figures = lesson09::write_figures(lesson, out_dir.string());
  const std::vector<lesson09::ExerciseResult> exercises = lesson09::exercise_results(lesson);
  if (o.json) {
    nlohmann::json j = lesson09::to_json(lesson);
    j["exercises"] = workbook::exercise_results_json(exercises);
    j["figures"] = {{"bytes_per_param_svg", figures.bytes_svg},
                    {"loss_curves_svg", figures.losses_svg}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::fputs(lesson09::render_text(lesson, report::use_colour(stdout)).c_str(), stdout);
  std::fputs(
      ("\n" + workbook::render_exercise_results(exercises, lesson09::kExercisesHeading)).c_str(),
      stdout);
  std::printf("\nFigures in %s: %s, %s\n", workbook::out_dir_shown(out_dir).c_str(),
              fs::path(figures.bytes_svg).filename().c_str(),
              fs::path(figures.losses_svg).filename().c_str());
  std::printf("Next:\n  %s   # embeddings in 32 bits, as bitsandbytes' StableEmbedding\n",
              lesson_command("--optimizers adamw,adamw-8bit --fp32-embeddings").c_str());
  std::printf("  %s   # the paper's block size: less absmax\n",
              lesson_command("--optimizers adamw-8bit --block-size 2048 --no-scale").c_str());
  std::printf(
      "  vramlab estimate --model llama2-7b --optimizer adam-mini --zero 3 --dp 8   # "
      "states sharded too\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  CLI::App app{
      "Lesson 09: optimizer memory. Every optimizer trained on a small model, the bytes each "
      "keeps measured beside the estimator, 8-bit AdamW's quantisation error, Llama 2 7B and 70B "
      "on meta.",
      "lesson09_optimizer_memory"};
  app.add_option("--model", o.model,
                 "Model to train (default: a 2-layer GPT-2, C=64, 4 heads, V=128)");
  app.add_option("--batch", o.batch, "Sequences per step B (default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default 64)");
  app.add_option("--steps", o.steps, "Training steps per optimizer (default 300)");
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
  app.add_option("--lion-lr", o.rates.lion, "Lion's (default 0.001, 3x smaller)");
  app.add_option("--adafactor-lr", o.rates.adafactor,
                 "Adafactor's relative step ρ (default 0.01, torch.optim.Adafactor's)");
  app.add_option("--sgd-lr", o.rates.sgd, "Plain SGD's (default 1)");
  app.add_option("--sgd-momentum-lr", o.rates.sgd_momentum,
                 "SGD with momentum 0.9's (default 0.1)");
  app.add_option("--quantization-every", o.quantization_every,
                 "Compare 8-bit AdamW's moments with fp32's every N steps (default 50; 0: never)");
  app.add_option("--scale-models", o.scale_models,
                 "Models measured on meta (default llama2-7b,llama2-70b)")
      ->delimiter(',');
  app.add_flag("--no-scale", o.no_scale, "Skip the large models on meta");
  app.add_flag("--json", o.json, "One JSON object instead of the tables");
  app.add_option("--out-dir", o.out_dir,
                 "Where optimizer_bytes_per_param.svg and optimizer_loss_curves.svg go (default: "
                 "lesson-output/09 in the build directory)");
  return workbook::run_lesson_main(app, argc, argv, "lesson09_optimizer_memory",
                                   [&] { return run(o, plan_flags.plan()); });
}
