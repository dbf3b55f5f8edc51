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
#include <algorithm>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/workbook/lesson_main.h"
#include "lessons/06-flash-attention/claims_file.h"
#include "lessons/06-flash-attention/flash_report.h"

namespace {

using namespace vramlab;

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
  bool no_training = false, no_scale = false;
};

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
  lesson06::LessonSettings s;
  s.seqs = o.seqs;
  std::sort(s.seqs.begin(), s.seqs.end());
  s.seqs.erase(std::unique(s.seqs.begin(), s.seqs.end()), s.seqs.end());
  s.shape = {o.batch, o.heads, o.kv_heads == 0 ? o.heads : o.kv_heads, o.head_dim};
  s.device = memory::parse_device(o.device);
  s.naive_max_seq = o.naive_max_seq;
  s.seed = o.seed;
  s.training = !o.no_training;
  if (s.training) {
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
  s.scale_seqs = o.scale_seqs;
  s.tiling_seq = o.tiling_seq;
  s.tiles = {o.tile_query_rows, o.tile_key_rows};

  run.on_out_of_memory(s.device.name(), "--device sim:a100-80g", "a larger simulated GPU");
  const lesson06::Lesson lesson = lesson06::run_lesson(s, run.progress_function());
  const lesson06::FigurePaths figures = lesson06::write_figures(lesson, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson06::to_json(lesson);
  out.text = lesson06::render_text(lesson, run.colour());
  out.figures = {{"attention_memory_svg", figures.memory_svg},
                 {"flash_tiling_svg", figures.tiling_svg}};
  out.claims_file = lesson06::files::claims_json();
  out.next = {
      {run.command("--heads 32 --kv-heads 8 --head-dim 128 --seqs 512,1024,2048"),
       "Llama's grouped-query heads: k and v shrink, att does not"},
      {"vramlab train --model gpt2-124m --seq 1024 --batch 1 --attention flash --device meta",
       "where does the memory go in a whole step?"},
      {"vramlab estimate --model llama2-7b --seq 4096 --attention flash", "the estimator's view"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "06", "lesson06_flash_attention",
      "Lesson 06: flash attention against materialised attention, memory and time for T = 512 "
      "... 8192, training with each, and one layer at scale on meta.",
      "attention_memory.svg and flash_tiling.svg");
  CLI::App& app = lesson.app();
  const auto positive = workbook::at_least(1);
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
                 "is measured on meta (default 8192)")
      ->check(workbook::at_least(0));
  app.add_option("--seed", o.seed, "Seed of the inputs and weights (default 1)");
  app.add_option("--train-model", o.train_model,
                 "Model of the training comparison (default: a 2-layer GPT-2, C=64, 4 heads)");
  app.add_option("--train-batch", o.train_batch, "Its B (default 4)")->check(positive);
  app.add_option("--train-seq", o.train_seq, "Its T (default 128)")->check(positive);
  app.add_option("--steps", o.steps, "Its training steps per kernel (default 20)")->check(positive);
  plan::Plan defaults;
  defaults.optimizer.learning_rate = 3e-3f;  // the training comparison's AdamW
  const plan::PlanFlags plan_flags(app, defaults, {plan::PlanFlag::learning_rate});
  app.add_option("--scale-model", o.scale_model,
                 "Model of the at-scale table on meta (default llama2-7b)");
  app.add_option("--scale-seqs", o.scale_seqs, "Its T (default 4096,8192,32768; B = 1)")
      ->delimiter(',')
      ->check(positive);
  app.add_option("--tiling-seq", o.tiling_seq, "T of the tiling figure (default 256)");
  app.add_option("--tile-query-rows", o.tile_query_rows, "Its query rows per tile (default 64)")
      ->check(positive);
  app.add_option("--tile-key-rows", o.tile_key_rows, "Its key rows per tile (default 64)")
      ->check(positive);
  app.add_flag("--no-training", o.no_training, "Skip the training comparison");
  app.add_flag("--no-scale", o.no_scale, "Skip the at-scale table on meta");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
