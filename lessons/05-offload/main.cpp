// Lesson 05, offload: ZeRO-Offload (the optimizer's states and update on the host, 16-bit
// gradients streamed down during the backward, 16-bit parameters copied back) on a small model
// on a simulated GPU, with the overlap on and off; the host link swept on meta beside
// ZeRO-Infinity's efficiency model; 13B on one 32 GB device and 7B's memory saved and time lost;
// the delayed parameter update's time saved and loss curve; the seeds' claims.
//
//   build/bin/lesson05_offload                          everything, about 10 s on 2 cores
//   build/bin/lesson05_offload --links 1,4,16 --no-scale
//   build/bin/lesson05_offload --json --out-dir /tmp/l05
//   build/bin/vramlab run 05
//
// The figures go to <build>/lesson-output/05 unless --out-dir says otherwise.
//
// Exit codes: 0 success, 1 out of memory or another run-time failure, 2 bad input.
#include <string>
#include <tuple>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/platform/blas.h"
#include "common/platform/errors.h"
#include "common/storage/nvme_tier.h"
#include "common/workbook/lesson_main.h"
#include "lessons/05-offload/claims_file.h"
#include "lessons/05-offload/exercise_results.h"
#include "lessons/05-offload/offload_report.h"

namespace {

using namespace vramlab;

struct Options {
  std::string model = "gpt2-tiny";
  int64_t batch = 4, seq = 64, steps = 3;
  std::string device = "sim:a100-40g";
  uint64_t seed = 1;
  std::string sweep_model = "llama2-7b";
  std::string sweep_device = "meta:a100-80g";
  int64_t sweep_seq = 4096;
  std::vector<double> links = {4, 8, 16, 32, 64, 128};
  double timeline_gbps = 16;
  int64_t dpu_steps = 40;
  std::vector<int64_t> dpu_from = {5, 20};
  bool no_scale = false;
  std::string nvme_path;
};

workbook::LessonOutput run(const Options& o, workbook::LessonRun& run) {
  lesson05::LessonSettings s;
  s.model = model_config_by_name(o.model);
  s.batch = o.batch;
  s.seq = o.seq;
  s.steps = o.steps;
  s.device = memory::parse_device(o.device);
  if (s.device.kind == memory::DeviceKind::meta)
    throw UsageError(
        "--device '" + o.device +
        "': the small model trains on numbers (cpu or sim); meta is for --sweep-device");
  s.seed = o.seed;
  s.sweep_model = model_config_by_name(o.sweep_model);
  s.sweep_device = memory::parse_device(o.sweep_device);
  if (s.sweep_device.kind != memory::DeviceKind::meta || s.sweep_device.spec.peak_flops.fp32 <= 0)
    throw UsageError("--sweep-device '" + o.sweep_device +
                     "' must be a meta preset (e.g. meta:a100-80g): the sweep needs its roofline "
                     "and its peak");
  s.sweep_seq = o.sweep_seq;
  // Checked before anything runs, so a bad value is the only line printed.
  for (const auto& [flag, seq, model] : {std::tuple{"--seq", o.seq, &s.model},
                                         std::tuple{"--sweep-seq", o.sweep_seq, &s.sweep_model}})
    if (seq > model->max_seq)
      throw UsageError(std::string(flag) + " " + std::to_string(seq) + " is longer than " +
                       model->name + "'s context, " + std::to_string(model->max_seq) + " tokens");
  s.links_gbps = o.links;
  s.timeline_link_gbps = o.timeline_gbps;
  s.scale = !o.no_scale;
  s.dpu_steps = o.dpu_steps;
  s.dpu_from = o.dpu_from;
  s.nvme_path = o.nvme_path;
  // The tier's own checks (a writable directory), before anything runs.
  if (!s.nvme_path.empty()) (void)storage::NvmeTier(storage::NvmeOptions{s.nvme_path});

  run.on_out_of_memory(s.device.name(), "--device sim:a100-80g", "a larger simulated GPU");
  const lesson05::Lesson lesson = lesson05::run_lesson(s, run.progress_function());
  workbook::LessonOutput out;
  out.json = lesson05::to_json(lesson);
  out.text = lesson05::render_text(lesson, run.colour());
  const lesson05::FigurePaths figures = lesson05::write_figures(lesson, run.out_dir().string());
  out.figures = {{"link_sweep_svg", figures.sweep_svg},
                 {"streams_timeline_html", figures.timeline_html},
                 {"dpu_losses_svg", figures.dpu_svg}};
  out.figures_note = "(open the .html in a browser: one lane per stream)";
  out.claims_file = lesson05::files::claims_json();
  out.exercises = {std::string(lesson05::kExercisesHeading), lesson05::exercise_results(lesson)};
  out.next = {{run.command("--links 1,2,4 --no-scale"), "slower links: where overlap stops hiding"},
              {"vramlab train --model gpt2-tiny --device sim:a100-40g --offload optimizer "
               "--offload-overlap off --link-gbps 2 --steps 3",
               "one run by hand"},
              {"vramlab estimate --model llama2-7b --batch 4 --seq 4096 --attention flash "
               "--precision mixed-bf16 --offload-activations on --recompute full",
               "what offloading the checkpoints leaves on the device and pins on the host"},
              {"vramlab estimate --model llama2-13b --precision mixed-fp16 --zero 2 --offload "
               "optimizer --deepspeed",
               "the estimator's bytes beside DeepSpeed's"}};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "05", "lesson05_offload",
      "Lesson 05: offload. ZeRO-Offload measured on a small model (bytes on the device and the "
      "host, bytes over the link, overlap on and off), the link swept beside ZeRO-Infinity's "
      "model, 13B on one 32 GB device.",
      "offload_link_sweep.svg, offload_streams.html and offload_dpu_losses.svg");
  CLI::App& app = lesson.app();
  app.add_option("--model", o.model, "The small model trained on numbers (default gpt2-tiny)");
  app.add_option("--batch", o.batch, "Its sequences per step B (default 4)")
      ->check(workbook::at_least(1));
  app.add_option("--seq", o.seq, "Its tokens per sequence T (default 64)")
      ->check(workbook::at_least(1));
  app.add_option("--steps", o.steps, "Its steps per run; the last is measured (default 3)")
      ->check(workbook::at_least(2));
  app.add_option("--device", o.device,
                 "Where it trains: cpu | sim[:preset] (default sim:a100-40g, PCIe 4.0 x16)");
  app.add_option("--seed", o.seed, "Seed of the weights and tokens (default 1)");
  app.add_option("--sweep-model", o.sweep_model, "The link sweep's model (default llama2-7b)");
  app.add_option("--sweep-device", o.sweep_device,
                 "The link sweep's meta preset (default meta:a100-80g)");
  app.add_option("--sweep-seq", o.sweep_seq, "The sweep's tokens per sequence (default 4096)")
      ->check(workbook::at_least(1));
  app.add_option("--links", o.links, "The sweep's link bandwidths in GB/s (default 4,...,128)")
      ->delimiter(',')
      ->check(workbook::positive_finite());
  app.add_option("--timeline-gbps", o.timeline_gbps,
                 "The link of the one-step timeline, GB/s (default 16)")
      ->check(workbook::positive_finite());
  app.add_option("--dpu-steps", o.dpu_steps,
                 "Steps of the delayed update's loss curves (default 40)")
      ->check(workbook::at_least(2));
  app.add_option("--dpu-from", o.dpu_from,
                 "Their first delayed steps, each below --dpu-steps (default 5,20)")
      ->delimiter(',')
      ->check(workbook::at_least(1));
  app.add_flag("--no-scale", o.no_scale, "Skip the large models on meta");
  app.add_option("--nvme-path", o.nvme_path,
                 "Where the run with the optimizer's states on NVMe writes its files (default: a "
                 "directory of its own in the system's temporary directory, removed after)");
  return lesson.run(argc, argv, [&](workbook::LessonRun& r) { return run(o, r); });
}
