// Lesson 01, memory breakdown: runs ONE real training step (forward, backward, optimizer step) of
// a decoder-only transformer on a device and shows where every byte went, category by category,
// beside the published formulas (vramlab estimate), with the difference explained.
//
//   build/bin/lesson01_memory_breakdown                      gpt2-tiny on a simulated T4, seconds
//   build/bin/lesson01_memory_breakdown --model gpt2-1.5b --batch 1 --seq 1024 --device meta
//   build/bin/lesson01_memory_breakdown --model llama2-7b --batch 1 --seq 4096 --device meta
//   build/bin/lesson01_memory_breakdown --json --out-dir /tmp/l01
//   build/bin/vramlab run 01 [--mine] --model gpt2-mini    (with your exercise code: --mine)
//
// The figures go to <build>/lesson-output/01 unless --out-dir says otherwise: never into the
// current directory, which is usually the checkout, where git would see them.
//
// Exit codes (workbook::LessonMain): 0 success, 1 out of memory (PyTorch's message) or another
// run-time failure, 2 bad input or a step that needs more host RAM than this machine has for a sim
// or cpu device.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/host_memory.h"
#include "common/memory/trace_replay.h"
#include "common/model/model_flags.h"
#include "common/plan/plan_flags.h"
#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "common/workbook/lesson_binary.h"
#include "common/workbook/lesson_main.h"
#include "common/workbook/manifest.h"
#include "common/workbook/state.h"
#include "lessons/01-memory-breakdown/breakdown_report.h"
#include "lessons/01-memory-breakdown/claims_file.h"
#include "lessons/01-memory-breakdown/measure_scale.h"
#include "lessons/01-memory-breakdown/measure_step.h"

namespace {

using namespace vramlab;
namespace fs = std::filesystem;

struct Options {
  ModelFlags model;  // --model defaults to gpt2-tiny (set in main)
  std::optional<int64_t> batch, seq;
  std::string device = "sim:t4-16g";
  uint64_t seed = 1;
  bool no_scale = false;
};

// How to call vramlab from here, so that every suggested command works as printed: the vramlab
// beside this binary, relative to the current directory when it is below it.
std::string vramlab_command() {
  const fs::path bin = workbook::own_folder();
  if (bin.empty() || !fs::exists(bin / "vramlab")) return "vramlab";
  std::error_code error;
  const fs::path here = fs::current_path(error);
  if (!error) {
    const fs::path relative = (bin / "vramlab").lexically_relative(here);
    if (!relative.empty() && *relative.begin() != "..")
      return relative.has_parent_path() ? relative.string() : "./" + relative.string();
  }
  return (bin / "vramlab").string();
}

// The command that runs this lesson again with \p flags, the way it was run (--mine or not).
std::string lesson_command(const std::string& flags) {
  return vramlab_command() + " run 01" + (workbook::lesson_runs_mine() ? " --mine" : "") + " " +
         flags;
}

// The next exercise of lesson 01 from the learner's workbook state, as a command to run, or the
// news that all are done, from the same state file as vramlab's.
workbook::NextStep exercise_suggestion() {
  try {
    const fs::path root = build_info::kSourceDir;
    const workbook::Workbook book = workbook::load_workbook(root);
    const workbook::State state = workbook::load_state(workbook::state_file(root));
    for (const auto& ex : book.lesson("01").exercises)
      if (!state.is_done(ex.id))
        return {vramlab_command() + " check " + ex.id,
                "exercise " + ex.id + ", the first not done yet: " + ex.stub};
    return {vramlab_command() + " list", "every exercise of lesson 01 is done"};
  } catch (const std::exception&) {
    // A checkout without the workbook's files still runs the lesson.
    return {vramlab_command() + " list", "the exercises and which are done"};
  }
}

// What to run next; the step just measured is not suggested again.
std::vector<workbook::NextStep> next_commands(const lesson01::StepSettings& s) {
  struct Suggestion {
    std::string model, flags, why;
    memory::DeviceKind kind;
  };
  const std::vector<Suggestion> all = {
      {"gpt2-1.5b", "--model gpt2-1.5b --batch 1 --seq 1024 --device meta",
       "GPT-2 1.5B: sized on meta, nothing allocated", memory::DeviceKind::meta},
      {"llama2-7b", "--model llama2-7b --batch 1 --seq 4096 --device meta",
       "Llama 2 7B at its full context", memory::DeviceKind::meta},
      {"", "--model gpt2-tiny --device sim:64MiB", "an out-of-memory error on a small GPU",
       memory::DeviceKind::sim},
  };
  std::vector<workbook::NextStep> out;
  for (const auto& suggestion : all)
    if (suggestion.model != s.model.name || suggestion.kind != s.device.kind)
      out.push_back({lesson_command(suggestion.flags), suggestion.why});
  out.push_back(exercise_suggestion());
  return out;
}

// The smallest simulated GPU preset that holds \p bytes with a quarter to spare for the caching
// allocator's rounding and fragmentation, when this machine's RAM can back it; "" otherwise.
std::string larger_sim_device(int64_t bytes) {
  const auto wanted = static_cast<uint64_t>(bytes) + static_cast<uint64_t>(bytes) / 4;
  if (wanted > memory::resolve_host_memory_limit().bytes) return "";
  for (const memory::DevicePreset& preset : memory::device_presets())
    if (preset.capacity_bytes >= wanted) return "sim:" + std::string(preset.name);
  return "";
}

// What to say if the step does not fit: what it needs, and commands that do fit.
std::string out_of_memory_advice(const lesson01::StepSettings& settings, int64_t estimated_bytes) {
  const std::string model = "--model " + settings.model.name;
  const std::string shape =
      " --batch " + std::to_string(settings.batch) + " --seq " + std::to_string(settings.seq);
  std::string advice =
      "lesson 01: " + settings.model.name + " with B=" + std::to_string(settings.batch) +
      ", T=" + std::to_string(settings.seq) + " does not fit on " + settings.device.name() + " (" +
      report::format_bytes(settings.device.spec.capacity_bytes) +
      "). The estimate for the step is " +
      report::format_bytes(static_cast<uint64_t>(estimated_bytes)) +
      " (parameters + gradients + optimizer states + activations, fp32).\nTry:\n";
  advice += "  " + lesson_command(model + shape + " --device meta") +
            "   # the same step, measured with no memory at all\n";
  // A simulated GPU keeps its memory in this machine's RAM: a larger one is only worth suggesting
  // when the step fits there, else meta is the way to size it.
  if (const std::string larger = larger_sim_device(estimated_bytes); !larger.empty())
    advice += "  " + lesson_command(model + shape + " --device " + larger) +
              "   # a GPU large enough for this step\n";
  else
    advice +=
        "  (no larger simulated GPU: one that holds this step keeps it in this machine's "
        "RAM, which has " +
        report::format_bytes(memory::resolve_host_memory_limit().bytes) +
        " for it; meta measures it instead)\n";
  if (settings.batch > 1)
    advice += "  " +
              lesson_command(model + " --batch 1 --seq " + std::to_string(settings.seq) +
                             " --device " + settings.device.name()) +
              "   # activations scale with B x T\n";
  advice += "  " +
            lesson_command(model + shape + " --optimizer sgd-momentum --device " +
                           settings.device.name()) +
            "   # 4 bytes of optimizer state per parameter instead of 8 (sgd: none)\n";
  return advice;
}

workbook::LessonOutput run(const Options& o, const plan::Plan& plan, workbook::LessonRun& run) {
  lesson01::StepSettings settings;
  settings.model = o.model.build(o.seq);
  settings.batch = o.batch.value_or(8);
  settings.seq = o.seq.value_or(std::min<int64_t>(128, settings.model.max_seq));
  settings.optimizer = std::string(plan::optimizer_name(plan.optimizer.name));
  settings.seed = o.seed;
  settings.attention = plan.attention;
  settings.device = memory::parse_device(o.device);
  const estimate::Estimate before = lesson01::estimate_step(settings);
  run.on_out_of_memory(out_of_memory_advice(
      settings, before.total_bytes - before.activations.bytes + before.runtime_activation_bytes));
  const lesson01::Breakdown breakdown =
      lesson01::analyse(settings, lesson01::measure_training_step(settings));
  const lesson01::FigurePaths figures = lesson01::write_figures(breakdown, run.out_dir().string());
  workbook::LessonOutput out;
  out.json = lesson01::to_json(breakdown);
  out.text = lesson01::render_text(breakdown, run.colour());
  if (!o.no_scale) {
    const lesson01::Scale scale = lesson01::measure_scale(run.progress_function());
    out.json["scale"] = nlohmann::json(scale);
    out.text += lesson01::render_scale(scale, run.colour());
  }
  out.claims_file = lesson01::files::claims_json();
  out.figures = {{"breakdown_svg", figures.breakdown_svg},
                 {"measured_vs_estimated_svg", figures.measured_vs_estimated_svg},
                 {"timeline_html", figures.timeline_html}};
  out.figures_note = "(open the .html in a browser)";
  out.next = next_commands(settings);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  platform::select_blas_core_or_reexec(argc, argv);
  Options o;
  workbook::LessonMain lesson(
      "01", "lesson01_memory_breakdown",
      "Lesson 01: one real training step, measured category by category beside the published "
      "formulas.",
      "breakdown.svg, measured_vs_estimated.svg and timeline.html");
  CLI::App& app = lesson.app();
  o.model.name = "gpt2-tiny";
  add_model_options(app, o.model);
  app.add_option("--batch", o.batch, "Sequences per step B (default 8)");
  app.add_option("--seq", o.seq, "Tokens per sequence T (default min(128, the model's maximum))");
  app.add_option("--device", o.device,
                 "cpu | sim[:preset|:size] | meta (default sim:t4-16g; presets " +
                     memory::device_preset_names() + ")");
  app.add_option("--seed", o.seed, "Seed of the weights and the tokens (default 1)");
  const plan::PlanFlags plan_flags(app, plan::Plan{},
                                   {plan::PlanFlag::optimizer, plan::PlanFlag::attention});
  app.add_flag("--no-scale", o.no_scale,
               "Skip the tutorials' large models on meta (Llama 2 7B, a 1.3B GPT) and the "
               "estimator's 7B and 1B rows");
  return lesson.run(argc, argv,
                    [&](workbook::LessonRun& r) { return run(o, plan_flags.plan(), r); });
}
