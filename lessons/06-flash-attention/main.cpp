// Lesson 06, flash attention: the causal attention op alone, forward + backward, naive (the
// (B, H, T, T) probabilities saved, a (B, H, T, T) score gradient in backward) against flash
// (tiles, online softmax, only the (B, H, T) log-sum-exp saved, scores recomputed in backward)
// for T = 512 … 8192: peak and saved bytes, CPU time, the largest differences of out, dq, dk, dv;
// then a small model trained with each kernel (same losses, saved bytes = the estimator's), one
// layer's saved bytes of Llama 2 7B at long T on meta, the tiling figure and the seeds' claims.
//
//   build/bin/lesson06_flash_attention                        the sweep on sim, about 20 s
//   build/bin/lesson06_flash_attention --naive-max-seq 4096    naive only up to 4096 (faster,
//                                                              and 4 GiB less host memory)
//   build/bin/lesson06_flash_attention --json --out-dir /tmp/l06
//   build/bin/vramlab run 06
//
// The figures go to <build>/lesson-output/06 unless --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <CLI/CLI.hpp>
#include <algorithm>
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
#include "lessons/06-flash-attention/flash_report.h"

namespace {

using namespace vramlab;
namespace fs = std::filesystem;

struct Options {
  std::vector<int64_t> seqs = {512, 1024, 2048, 4096, 8192};
  int64_t batch = 1, heads = 8, head_dim = 64;
  int64_t kv_heads = 0;  // 0: as many as heads
  std::string device = "sim";
  int64_t naive_max_seq = 8192;
  uint64_t seed = 1;
  std::string train_model;  // empty: the lesson's small model
  int64_t train_batch = 4, train_seq = 128, steps = 20;
  std::string scale_model = "llama2-7b";
  std::vector<int64_t> scale_seqs = {4096, 8192, 32768};
  int64_t tiling_seq = 256, tile_query_rows = 64, tile_key_rows = 64;
  bool no_training = false, no_scale = false, json = false;
  std::string out_dir;
};

std::string lesson_command(const std::string& flags) {
  return workbook::lesson_command("06", workbook::lesson_runs_mine(), flags);
}

int run(const Options& o, const plan::Plan& plan) {
  lesson06::LessonSettings s;
  s.seqs = o.seqs;
  std::sort(s.seqs.begin(), s.seqs.end());
  s.seqs.erase(std::unique(s.seqs.begin(), s.seqs.end()), s.seqs.end());
  s.shape = {o.batch, o.heads, o.kv_heads == 0 ? o.heads : o.kv_heads, o.head_dim};
  s.device = memory::parse_device(o.device);
  if (o.naive_max_seq < 0)
    throw UsageError("--naive-max-seq must be >= 0, got " + std::to_string(o.naive_max_seq));
  s.naive_max_seq = o.naive_max_seq;
  s.seed = o.seed;
  s.training = !o.no_training;
  if (s.training) {
    if (o.train_batch < 1)
      throw UsageError("--train-batch must be >= 1, got " + std::to_string(o.train_batch));
    if (o.train_seq < 1)
      throw UsageError("--train-seq must be >= 1, got " + std::to_string(o.train_seq));
    if (o.steps < 1) throw UsageError("--steps must be >= 1, got " + std::to_string(o.steps));
    ModelFlags model;
    model.name = o.train_model;
    s.train.model = lesson_small_model(model, o.train_seq);
    s.train.batch = o.train_batch;
    s.train.seq = o.train_seq;
    s.train.device = s.device;
    s.train.seed = o.seed;
    s.train.steps = o.steps;
    s.train.learning_rate = plan.optimizer.learning_rate;
  }
  s.scale = !o.no_scale;
  s.scale_model = model_config_by_name(o.scale_model);
  for (const int64_t t : o.scale_seqs)
    if (t < 1)
      throw UsageError("--scale-seqs: a sequence length must be >= 1, got " + std::to_string(t));
  s.scale_seqs = o.scale_seqs;
  if (o.tile_query_rows < 1 || o.tile_key_rows < 1)
    throw UsageError("--tile-query-rows and --tile-key-rows must be >= 1, got " +
                     std::to_string(o.tile_query_rows) + " and " + std::to_string(o.tile_key_rows));
  s.tiling_seq = o.tiling_seq;
  s.tiles = {o.tile_query_rows, o.tile_key_rows};

  // Made before any work: an --out-dir that cannot be a folder is named before the lesson runs.
  const fs::path out_dir = workbook::prepare_out_dir(o.out_dir, "06");
  lesson06::Lesson lesson;
  try {
    lesson = lesson06::run_lesson(s, o.json ? nullptr : workbook::print_progress);
  } catch (const memory::OutOfMemoryError& e) {
    std::fprintf(stderr, "%s\n\nlesson 06: a run does not fit %s. Try:\n  %s\n", e.what(),
                 s.device.name().c_str(),
                 lesson_command("--device sim:a100-80g   # a larger simulated GPU").c_str());
    return kExitFailure;
  }
  const lesson06::FigurePaths figures = lesson06::write_figures(lesson, out_dir.string());
  if (o.json) {
    nlohmann::json j = lesson06::to_json(lesson);
    j["figures"] = {{"attention_memory_svg", figures.memory_svg},
                    {"flash_tiling_svg", figures.tiling_svg}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::fputs(lesson06::render_text(lesson, report::use_colour(stdout)).c_str(), stdout);
  std::printf("\nFigures in %s: %s, %s\n", workbook::out_dir_shown(out_dir).c_str(),
              fs::path(figures.memory_svg).filename().c_str(),
              fs::path(figures.tiling_svg).filename().c_str());
  std::printf(
      "Next:\n  %s   # Llama's grouped-query heads: k and v shrink, att does not\n",
      lesson_command("--heads 32 --kv-heads 8 --head-dim 128 --seqs 512,1024,2048").c_str());
  std::printf("  %s   # where does the memory go in a whole step?\n",
              "vramlab train --model gpt2-124m --seq 1024 --batch 1 --attention flash "
              "--device meta");
  std::printf(
      "  vramlab estimate --model llama2-7b --seq 4096 --attention flash   # the "
      "estimator's view\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  CLI::App app{
      "Lesson 06: flash attention against materialised attention, memory and time for T = 512 "
      "... 8192, training with each, and one layer at scale on meta.",
      "lesson06_flash_attention"};
  app.add_option("--seqs", o.seqs,
                 "Sequence lengths T of the sweep (default 512,1024,2048,4096,8192)")
      ->delimiter(',');
  app.add_option("--batch", o.batch, "Sequences B of the sweep (default 1)");
  app.add_option("--heads", o.heads, "Query heads H of the sweep (default 8, GPT-2's layout)");
  app.add_option("--kv-heads", o.kv_heads,
                 "Key/value heads (default: as many as --heads; fewer is grouped-query)");
  app.add_option("--head-dim", o.head_dim, "Head width D (default 64)");
  app.add_option("--device", o.device,
                 "Where the sweep and the training run compute: cpu | sim[:preset|:size] | meta "
                 "(default sim)");
  app.add_option("--naive-max-seq", o.naive_max_seq,
                 "Longest T at which naive attention is computed and timed; above it its memory "
                 "is measured on meta (default 8192)");
  app.add_option("--seed", o.seed, "Seed of the inputs and weights (default 1)");
  app.add_option("--train-model", o.train_model,
                 "Model of the training comparison (default: a 2-layer GPT-2, C=64, 4 heads)");
  app.add_option("--train-batch", o.train_batch, "Its B (default 4)");
  app.add_option("--train-seq", o.train_seq, "Its T (default 128)");
  app.add_option("--steps", o.steps, "Its training steps per kernel (default 20)");
  plan::Plan defaults;
  defaults.optimizer.learning_rate = 3e-3f;  // the training comparison's AdamW
  const plan::PlanFlags plan_flags(app, defaults, {plan::PlanFlag::learning_rate});
  app.add_option("--scale-model", o.scale_model,
                 "Model of the at-scale table on meta (default llama2-7b)");
  app.add_option("--scale-seqs", o.scale_seqs, "Its T (default 4096,8192,32768; B = 1)")
      ->delimiter(',');
  app.add_option("--tiling-seq", o.tiling_seq, "T of the tiling figure (default 256)");
  app.add_option("--tile-query-rows", o.tile_query_rows, "Its query rows per tile (default 64)");
  app.add_option("--tile-key-rows", o.tile_key_rows, "Its key rows per tile (default 64)");
  app.add_flag("--no-training", o.no_training, "Skip the training comparison");
  app.add_flag("--no-scale", o.no_scale, "Skip the at-scale table on meta");
  app.add_flag("--json", o.json, "One JSON object instead of the tables");
  app.add_option("--out-dir", o.out_dir,
                 "Where attention_memory.svg and flash_tiling.svg go (default: lesson-output/06 "
                 "in the build directory)");
  return workbook::run_lesson_main(app, argc, argv, "lesson06_flash_attention",
                                   [&] { return run(o, plan_flags.plan()); });
}
