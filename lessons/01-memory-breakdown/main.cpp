// Lesson 01, memory breakdown: runs ONE real training step (forward, backward, optimizer step) of
// a decoder-only transformer on a device and shows where every byte went, category by category,
// beside the published formulas (vramlab estimate), with the difference explained.
//
//   build/bin/lesson01_memory_breakdown                      gpt2-tiny on a simulated T4, seconds
//   build/bin/lesson01_memory_breakdown --model gpt2-1.5b --batch 1 --seq 1024 --device meta
//   build/bin/lesson01_memory_breakdown --model llama2-7b --batch 1 --seq 4096 --device meta
//   build/bin/lesson01_memory_breakdown --json --out-dir /tmp/l01
//   build/bin/vramlab run 01 [--mine] -- --model gpt2-mini    (with your exercise code: --mine)
//
// Exit codes: 0 success, 1 out of memory (PyTorch's message) or another run-time failure, 2 bad
// input or a step that needs more host RAM than this machine has for a sim or cpu device.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_flags.h"
#include "common/platform/blas.h"
#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "lessons/01-memory-breakdown/breakdown_report.h"
#include "lessons/01-memory-breakdown/measure_step.h"

namespace {

using namespace vramlab;

struct Options {
  ModelFlags model;  // --model defaults to gpt2-tiny (set in main)
  std::optional<int64_t> batch, seq;
  std::string device = "sim:t4-16g";
  std::string optimizer = "adamw";
  uint64_t seed = 1;
  bool json = false;
  std::string out_dir = "lesson01-figures";
};

void explain_out_of_memory(const memory::OutOfMemoryError& error,
                           const lesson01::StepSettings& settings, int64_t estimated_bytes) {
  std::fprintf(stderr, "%s\n\n", error.what());
  std::fprintf(stderr,
               "lesson 01: %s with B=%lld, T=%lld does not fit on %s (%s). The estimate for the "
               "step is %s (parameters + gradients + optimizer states + activations, fp32).\n"
               "Try: --device meta to measure the same step with no memory at all; a larger "
               "device such as --device sim:a100-80g; a smaller --batch or --seq (activations "
               "scale with B x T, the attention matrices with B x T^2); --optimizer sgd-momentum "
               "(4 bytes of state per parameter instead of 8) or sgd (none).\n",
               settings.model.name.c_str(), static_cast<long long>(settings.batch),
               static_cast<long long>(settings.seq), settings.device.name().c_str(),
               report::format_bytes(settings.device.spec.capacity_bytes).c_str(),
               report::format_bytes(static_cast<uint64_t>(estimated_bytes)).c_str());
}

int run(const Options& o) {
  lesson01::StepSettings settings;
  settings.model = o.model.build(o.seq);
  settings.batch = o.batch.value_or(8);
  settings.seq = o.seq.value_or(std::min<int64_t>(128, settings.model.max_seq));
  settings.optimizer = o.optimizer;
  settings.seed = o.seed;
  settings.device = memory::parse_device(o.device);
  const estimate::Estimate before = lesson01::estimate_step(settings);
  lesson01::StepMeasurement measurement;
  try {
    measurement = lesson01::measure_training_step(settings);
  } catch (const memory::OutOfMemoryError& e) {
    explain_out_of_memory(
        e, settings,
        before.total_bytes - before.activations.bytes + before.runtime_activation_bytes);
    return kExitFailure;
  }
  const lesson01::Breakdown breakdown = lesson01::analyse(settings, std::move(measurement));
  const lesson01::FigurePaths figures = lesson01::write_figures(breakdown, o.out_dir);
  if (o.json) {
    nlohmann::json j = lesson01::to_json(breakdown);
    j["figures"] = {{"breakdown_svg", figures.breakdown_svg},
                    {"measured_vs_estimated_svg", figures.measured_vs_estimated_svg},
                    {"timeline_html", figures.timeline_html}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const bool colour = report::use_colour(stdout);
  std::fputs(lesson01::render_text(breakdown, colour).c_str(), stdout);
  std::printf("\nFigures: %s, %s, %s (open the .html in a browser)\n",
              figures.breakdown_svg.c_str(), figures.measured_vs_estimated_svg.c_str(),
              figures.timeline_html.c_str());
  std::printf(
      "Next: --model gpt2-1.5b --batch 1 --seq 1024 --device meta; --model llama2-7b --batch 1 "
      "--seq 4096 --device meta; --device sim:64MiB to see an out-of-memory error; the exercises: "
      "vramlab check 01.1\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  CLI::App app{
      "Lesson 01: one real training step, measured category by category beside the published "
      "formulas.",
      "lesson01_memory_breakdown"};
  o.model.name = "gpt2-tiny";
  add_model_options(app, o.model);
  app.add_option("--batch", o.batch, "Sequences per step B (default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default min(128, the model's maximum))");
  app.add_option("--device", o.device,
                 "cpu | sim[:preset|:size] | meta (default sim:t4-16g; presets t4-16g, "
                 "rtx4090-24g, a100-40g, a100-80g, h100-80g, h200-141g)");
  app.add_option("--optimizer", o.optimizer,
                 "adamw | sgd-momentum (momentum 0.9) | sgd (no state) (default adamw)");
  app.add_option("--seed", o.seed, "Seed of the weights and the tokens (default 1)");
  app.add_flag("--json", o.json, "One JSON object instead of the tables");
  app.add_option("--out-dir", o.out_dir,
                 "Where breakdown.svg, measured_vs_estimated.svg and timeline.html go "
                 "(default lesson01-figures)");
  try {
    app.parse(argc, argv);
    return run(o);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "lesson01_memory_breakdown: error: %s\n", e.what());
    return kExitUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "lesson01_memory_breakdown: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson01_memory_breakdown: %s\n", e.what());
    return kExitFailure;
  }
}
