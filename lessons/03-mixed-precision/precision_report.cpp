// Lesson 03's runs, tables and JSON (see precision_report.h).
#include "lessons/03-mixed-precision/precision_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/dtype/format_info.h"
#include "common/memory/device.h"
#include "common/platform/errors.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/train/micro_batches.h"
#include "common/train/synthetic_tokens.h"
#include "common/train/trainer.h"

namespace vramlab::lesson03 {

namespace {

using report::Align;
using report::Column;

std::string scientific(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.2e", value);
  return text;
}

// 65536 as "2^16": loss scales are powers of two unless a user picks another.
std::string power_of_two(double value) {
  const double e = std::log2(value);
  if (value > 0.0 && e == std::floor(e)) return "2^" + std::to_string(static_cast<int>(e));
  return report::format_fixed(value, 0);
}

std::string joined(const std::vector<int64_t>& sizes) {
  std::string text;
  for (const int64_t s : sizes) {
    if (!text.empty()) text += '+';
    text += std::to_string(s);
  }
  return text;
}

using report::wrap_note;

int64_t count(const std::vector<bool>& flags) {
  return std::count(flags.begin(), flags.end(), true);
}

const CategoryBytes* find_bytes(const ModeRun& run, const std::string& category) {
  for (const CategoryBytes& b : run.bytes)
    if (b.category == category) return &b;
  return nullptr;
}

int64_t model_state_bytes(const ModeRun& run) {
  int64_t total = 0;
  for (const char* c : {"parameter", "gradient", "optimizer_state"})
    if (const CategoryBytes* b = find_bytes(run, c)) total += b->measured;
  return total;
}

UnderflowView underflow_view(const std::string& run, const std::vector<float>& g, double scale,
                             double stored_scale) {
  // The gradients are multiplied by scale / stored_scale: values stored under a loss scale are
  // first brought back to what the scale divides out.
  std::vector<float> values(g.size());  // (numel)
  const double factor = scale / stored_scale;
  for (size_t i = 0; i < g.size(); ++i)
    values[i] = static_cast<float>(static_cast<double>(g[i]) * factor);
  UnderflowView v;
  v.run = run;
  v.scale = scale;
  v.histogram = exponent_histogram(values);
  v.flush_share = fp16_flush_share(values, 1.0);
  v.subnormal_share = fp16_subnormal_share(values, 1.0);
  return v;
}

}  // namespace

std::vector<ModeSpec> mode_specs(const LessonSettings& settings) {
  using amp::Precision;
  std::vector<ModeSpec> specs = {
      {"fp32", Precision::fp32, std::nullopt},
      {"bf16", Precision::bf16, std::nullopt},
      {"bf16, stochastic rounding", Precision::bf16, std::nullopt, true},
      {"mixed-bf16", Precision::mixed_bf16, std::nullopt},
      {"mixed-fp16", Precision::mixed_fp16, std::nullopt},
      {"mixed-fp16, no scaler", Precision::mixed_fp16,
       amp::LossScaleSpec{amp::LossScaleKind::none, 1.0}},
  };
  if (settings.overflow_scale > 0.0)
    specs.push_back({"mixed-fp16, static:" + power_of_two(settings.overflow_scale),
                     Precision::mixed_fp16,
                     amp::LossScaleSpec{amp::LossScaleKind::fixed, settings.overflow_scale}});
  if (settings.underflow_scale > 0.0)
    specs.push_back({"mixed-fp16, static:" + power_of_two(settings.underflow_scale),
                     Precision::mixed_fp16,
                     amp::LossScaleSpec{amp::LossScaleKind::fixed, settings.underflow_scale}});
  return specs;
}

Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&)) {
  Lesson lesson;
  lesson.settings = settings;
  const RunSettings& run = settings.run;
  {
    // Bad settings are reported before the first progress line, as the binary's one error line.
    train::TrainOptions options;
    options.model = run.model;
    options.batch = run.batch;
    options.seq = run.seq;
    options.plan.optimizer.learning_rate = run.learning_rate;
    train::validate(options);
    if (run.steps < 1) throw UsageError("--steps must be >= 1, got " + std::to_string(run.steps));
  }
  {
    const train::SyntheticTokenStream data(run.model.vocab, std::min<int64_t>(4, run.model.vocab),
                                           run.seed);
    lesson.entropy_rate_nats = data.entropy_rate_nats();
    lesson.unigram_entropy_nats = data.unigram_entropy_nats();
  }
  for (const ModeSpec& spec : mode_specs(settings)) {
    if (progress) progress(spec.label + ": " + std::to_string(run.steps) + " steps");
    lesson.runs.push_back(run_mode(run, spec));
  }
  const bool computes = run.device.kind != memory::DeviceKind::meta;
  if (computes) {
    const ModeRun& fp32 = lesson.runs[0];
    const ModeRun& fp16 = lesson.runs[3];
    const ModeRun& none = lesson.runs[4];
    lesson.underflow.push_back(underflow_view("fp32", fp32.last_gradients, 1.0, 1.0));
    lesson.underflow.push_back(underflow_view("fp32", fp32.last_gradients, 65536.0, 1.0));
    const double fp16_scale = fp16.loss_scale.back();
    lesson.underflow.push_back(
        underflow_view("mixed-fp16", fp16.last_gradients, fp16_scale, fp16_scale));
    lesson.fp32_zero_share = zero_share(fp32.last_gradients);
    lesson.fp16_unscaled_zero_share = zero_share(none.last_gradients);
  }
  if (settings.accumulation && computes) {
    std::vector<float> reference;
    for (const int64_t k : {1, 2, 4, 8}) {
      if (k > run.batch) break;
      if (progress) progress("accumulation K=" + std::to_string(k));
      const std::vector<int64_t> sizes = train::micro_batch_sizes(run.batch, k);
      lesson.accumulation.push_back(
          run_accumulation(run, sizes, reference, k == 1 ? &reference : nullptr));
    }
    if (run.batch >= 3) {
      if (progress) progress("accumulation, unequal micro-batches");
      lesson.accumulation.push_back(
          run_accumulation(run, train::micro_batch_sizes(run.batch, 3), reference));
    }
  }
  if (settings.scale) {
    RunSettings at = run;
    at.model = settings.meta_model;
    at.batch = 1;
    at.seq = settings.meta_seq;
    at.steps = 1;
    at.device = memory::parse_device("meta");
    for (const amp::Precision p : amp::kAllPrecisions) {
      const std::string name(amp::precision_name(p));
      if (progress) progress(settings.meta_model.name + " on meta, " + name);
      lesson.meta.push_back(run_mode(at, {name, p, std::nullopt}));
    }
  }
  lesson.round_trip = round_trip_errors(1 << 20, run.seed);
  return lesson;
}

nlohmann::json to_json(const Lesson& lesson) {
  using nlohmann::json;
  const RunSettings& r = lesson.settings.run;
  json j;
  j["model"] = {{"name", r.model.name},
                {"layers", r.model.layers},
                {"hidden", r.model.hidden},
                {"heads", r.model.heads},
                {"vocab", r.model.vocab},
                {"batch", r.batch},
                {"seq", r.seq},
                {"device", r.device.name()},
                {"steps", r.steps},
                {"learning_rate", r.learning_rate},
                {"seed", r.seed}};
  j["entropy_rate_nats"] = lesson.entropy_rate_nats;
  j["unigram_entropy_nats"] = lesson.unigram_entropy_nats;
  const auto run_json = [](const ModeRun& run) {
    json by_category = json::object(), estimated = json::object();
    for (const CategoryBytes& b : run.bytes) {
      by_category[b.category] = b.measured;
      if (b.estimated >= 0) estimated[b.category] = b.estimated;
    }
    std::vector<int> found_inf, skipped;
    for (const bool f : run.found_inf) found_inf.push_back(f ? 1 : 0);
    for (const bool s : run.skipped) skipped.push_back(s ? 1 : 0);
    return json{{"label", run.spec.label},
                {"precision", std::string(amp::precision_name(run.spec.precision))},
                {"stochastic_rounding", run.spec.stochastic_rounding},
                {"loss_scaling", run.loss_scale_name},
                {"peak_bytes",
                 {{"by_category", by_category},
                  {"estimated", estimated},
                  {"total", run.peak_bytes},
                  {"model_states", model_state_bytes(run)}}},
                {"activation_peak_bytes", run.activation_peak_bytes},
                {"final_loss", final_loss(run.losses)},
                {"losses", run.losses},
                {"median_step_seconds", train::median(run.step_seconds)},
                {"skipped_steps", count(run.skipped)},
                {"loss_scale", run.loss_scale},
                {"found_inf", found_inf},
                {"skipped", skipped}};
  };
  j["runs"] = json::array();
  for (const ModeRun& run : lesson.runs) j["runs"].push_back(run_json(run));
  j["underflow"] = json::array();
  for (const UnderflowView& v : lesson.underflow)
    j["underflow"].push_back({{"run", v.run},
                              {"scale", v.scale},
                              {"fp16_flush_share", v.flush_share},
                              {"fp16_subnormal_share", v.subnormal_share},
                              {"histogram",
                               {{"min_exponent", v.histogram.min_exponent},
                                {"counts", v.histogram.counts},
                                {"zeros", v.histogram.zeros},
                                {"total", v.histogram.total}}}});
  j["fp32_zero_share"] = lesson.fp32_zero_share;
  j["fp16_no_scaler_zero_share"] = lesson.fp16_unscaled_zero_share;
  j["accumulation"] = json::array();
  for (const AccumulationRow& a : lesson.accumulation)
    j["accumulation"].push_back({{"micro_batches", static_cast<int64_t>(a.micro_batches.size())},
                                 {"sizes", a.micro_batches},
                                 {"activation_peak_bytes", a.activation_peak_bytes},
                                 {"max_rel_diff_grads", a.max_rel_diff_grads},
                                 {"loss", a.loss}});
  j["meta"] = {{"model", lesson.settings.meta_model.name},
               {"parameters", lesson.settings.meta_model.parameter_count()},
               {"seq", lesson.settings.meta_seq},
               {"runs", json::array()}};
  for (const ModeRun& run : lesson.meta) j["meta"]["runs"].push_back(run_json(run));
  j["formats"] = json::array();
  for (const char* name : {"f32", "bf16", "f16"}) {
    const FloatFormatInfo* f = find_float_format(name);
    j["formats"].push_back({{"name", f->name},
                            {"exponent_bits", f->exponent_bits},
                            {"mantissa_bits", f->mantissa_bits},
                            {"max_finite", f->max_finite},
                            {"min_normal", f->min_normal},
                            {"min_subnormal", f->min_subnormal},
                            {"epsilon", f->epsilon}});
  }
  j["round_trip"] = json::array();
  for (const RoundTripError& e : lesson.round_trip)
    j["round_trip"].push_back({{"format", e.format}, {"max", e.max}, {"mean", e.mean}});
  j["op_table"] = json::array();
  for (const amp::OpPrecision& op : amp::op_precision_table())
    j["op_table"].push_back({{"op", op.op},
                             {"inputs", op.inputs},
                             {"compute", op.compute},
                             {"stores", op.stores},
                             {"why", op.why}});
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const RunSettings& r = lesson.settings.run;
  const ModelConfig& m = r.model;
  std::string out = report::style::bold(
                        "Lesson 03: mixed precision and gradient accumulation, measured", colour) +
                    "\n";
  out += "Model " + m.name + " (L=" + std::to_string(m.layers) + ", C=" + std::to_string(m.hidden) +
         ", H=" + std::to_string(m.heads) + ", V=" + std::to_string(m.vocab) +
         "), B=" + std::to_string(r.batch) + ", T=" + std::to_string(r.seq) + ", AdamW lr " +
         report::format_fixed(r.learning_rate, 4) + ", on " + r.device.name() + "; " +
         std::to_string(r.steps) + " steps per mode, the same seed and tokens.\n\n";

  const double fp32_final = lesson.runs.empty() ? 0.0 : final_loss(lesson.runs[0].losses);
  report::Table modes({{"mode"},
                       {"scaling"},
                       {"final loss", Align::kRight},
                       {"vs fp32", Align::kRight},
                       {"skipped", Align::kRight},
                       {"last scale", Align::kRight},
                       {"model states", Align::kRight},
                       {"activations", Align::kRight},
                       {"total peak", Align::kRight},
                       {"step", Align::kRight}});
  for (const ModeRun& run : lesson.runs) {
    const double fl = final_loss(run.losses);
    std::string versus;
    if (run.spec.label != "fp32") {
      if (fl >= fp32_final) versus = "+";
      versus += report::format_percent(fl / fp32_final - 1.0, 2);
    }
    modes.add_row({run.spec.label, run.loss_scale_name, report::format_fixed(fl, 4), versus,
                   std::to_string(count(run.skipped)),
                   power_of_two(run.loss_scale.empty() ? 1.0 : run.loss_scale.back()),
                   report::format_bytes_or_zero(model_state_bytes(run)),
                   report::format_bytes_or_zero(run.activation_peak_bytes),
                   report::format_bytes_or_zero(run.peak_bytes),
                   report::format_fixed(train::median(run.step_seconds), 4) + " s"});
  }
  out += modes.render(colour);
  out += wrap_note(
      "final loss: the mean of the last tenth of the steps (the per-batch loss is noisy); the "
      "chain's entropy rate, the least loss any model reaches, is " +
      report::format_fixed(lesson.entropy_rate_nats, 4) +
      " nats, a model ignoring context reaches " +
      report::format_fixed(lesson.unigram_entropy_nats, 4) +
      ". model states: parameters + gradients + optimizer states (with the fp32 master), the "
      "allocator's peaks. activations: the saved-activation store's peak. step: median wall "
      "time. skipped: optimizer steps skipped on an inf/NaN gradient.");

  out += "\nBytes per category, measured (allocator peak, expandable segments) / estimated\n";
  report::Table cats({{"mode"},
                      {"parameter", Align::kRight},
                      {"gradient", Align::kRight},
                      {"optimizer_state", Align::kRight},
                      {"activation", Align::kRight},
                      {"= estimate"}});
  const auto cell = [](const ModeRun& run, const char* c) {
    const CategoryBytes* b = find_bytes(run, c);
    return b ? report::format_bytes_or_zero(b->measured) : std::string("-");
  };
  // A run that skipped every step never made AdamW's states: nothing to compare them with.
  const auto verdict = [](const ModeRun& run) -> std::string {
    const bool never_stepped = count(run.skipped) == static_cast<int64_t>(run.skipped.size());
    for (const CategoryBytes& b : run.bytes) {
      if (b.estimated < 0 || (never_stepped && b.category == "optimizer_state")) continue;
      if (b.estimated != b.measured) return "DIFFERS: " + b.category;
    }
    return never_stepped ? "same; no step taken, no optimizer states" : "same, to the byte";
  };
  for (const ModeRun& run : lesson.runs)
    cats.add_row({run.spec.label, cell(run, "parameter"), cell(run, "gradient"),
                  cell(run, "optimizer_state"), cell(run, "activation"), verdict(run)});
  out += cats.render(colour);
  out += wrap_note(
      "With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set by the lesson on sim and meta "
      "devices) a category's peak is its tensors' own sizes (rounded to 512 B), so "
      "train::estimate_step()'s bytes for the same options can equal it to the byte; activation "
      "is the store's requested bytes against the estimator's runtime layout.");

  if (!lesson.underflow.empty()) {
    out +=
        "\nUnderflow: the last step's parameter gradients against fp16's range "
        "(subnormal from 2^-24, normal from 2^-14, max 65504)\n";
    report::Table u({{"gradients"},
                     {"scale", Align::kRight},
                     {"flush to 0 in fp16", Align::kRight},
                     {"fp16 subnormal", Align::kRight},
                     {"smallest binade", Align::kRight},
                     {"largest binade", Align::kRight}});
    for (const UnderflowView& v : lesson.underflow) {
      int lo = 0, hi = 0;
      bool any = false;
      for (size_t i = 0; i < v.histogram.counts.size(); ++i) {
        if (v.histogram.counts[i] == 0) continue;
        const int e = v.histogram.min_exponent + static_cast<int>(i);
        if (!any) lo = e;
        hi = e;
        any = true;
      }
      u.add_row({v.run, power_of_two(v.scale), report::format_percent(v.flush_share, 2),
                 report::format_percent(v.subnormal_share, 2),
                 any ? "2^" + std::to_string(lo) : "-", any ? "2^" + std::to_string(hi) : "-"});
    }
    out += u.render(colour);
    out += wrap_note(
        "flush to 0: nonzero values whose fp16 rounding is 0 (below 2^-25). mixed-fp16's row is "
        "its stored gradients, already multiplied by its loss scale. Exactly zero after the "
        "last step: " +
        report::format_percent(lesson.fp32_zero_share, 2) + " of fp32's gradients, " +
        report::format_percent(lesson.fp16_unscaled_zero_share, 2) +
        " of mixed-fp16's without a scaler (its backward flushed them in fp16).");
  }

  if (!lesson.accumulation.empty()) {
    out += "\nGradient accumulation: effective batch " + std::to_string(r.batch) +
           " sequences, fp32, step 1\n";
    report::Table a({{"micro-batches"},
                     {"K", Align::kRight},
                     {"activation peak", Align::kRight},
                     {"vs K=1", Align::kRight},
                     {"max rel diff of grads", Align::kRight},
                     {"loss", Align::kRight}});
    const int64_t base = lesson.accumulation.front().activation_peak_bytes;
    for (const AccumulationRow& row : lesson.accumulation)
      a.add_row(
          {joined(row.micro_batches), std::to_string(row.micro_batches.size()),
           report::format_bytes_or_zero(row.activation_peak_bytes),
           report::format_fixed(
               static_cast<double>(row.activation_peak_bytes) / static_cast<double>(base), 3) +
               "x",
           row.micro_batches.size() == 1 ? "-" : scientific(row.max_rel_diff_grads),
           report::format_fixed(row.loss, 6)});
    out += a.render(colour);
    out += wrap_note(
        "max rel diff: max |g_K - g_1| / max |g_1| over every gradient value before the "
        "optimizer step; each token's loss weighs 1/(all tokens of the step), so unequal "
        "micro-batches give the same gradient too. Not bitwise: the micro-batches are summed "
        "into the gradient one after another, fp32 addition is not associative.");
  }

  if (!lesson.meta.empty()) {
    const ModelConfig& mm = lesson.settings.meta_model;
    const double params = static_cast<double>(mm.parameter_count());
    out += "\nAt scale on meta: " + mm.name + " (" + report::format_fixed(params / 1e9, 2) +
           "B parameters), B=1, T=" + std::to_string(lesson.settings.meta_seq) + "\n";
    report::Table t({{"precision"},
                     {"parameters", Align::kRight},
                     {"gradients", Align::kRight},
                     {"optimizer", Align::kRight},
                     {"model states", Align::kRight},
                     {"B/param", Align::kRight},
                     {"activations", Align::kRight},
                     {"total peak", Align::kRight}});
    for (const ModeRun& run : lesson.meta) {
      const CategoryBytes* p = find_bytes(run, "parameter");
      const CategoryBytes* g = find_bytes(run, "gradient");
      const CategoryBytes* o = find_bytes(run, "optimizer_state");
      const int64_t states = model_state_bytes(run);
      t.add_row({run.spec.label, report::format_bytes_or_zero(p->measured),
                 report::format_bytes_or_zero(g->measured),
                 report::format_bytes_or_zero(o->measured), report::format_bytes_or_zero(states),
                 report::format_fixed(static_cast<double>(states) / params, 2),
                 report::format_bytes_or_zero(run.activation_peak_bytes),
                 report::format_bytes_or_zero(run.peak_bytes)});
    }
    out += t.render(colour);
    out += wrap_note(
        "Weights alone: fp32 " + report::format_bytes_decimal(static_cast<uint64_t>(4 * params)) +
        ", 16-bit " + report::format_bytes_decimal(static_cast<uint64_t>(2 * params)) +
        " (the tutorials' 28 GB / 14 GB). With AdamW the model states are 16 B/param in fp32 "
        "and in mixed precision (2 + 2 + 12: the fp32 master and both moments), 8 in pure bf16. "
        "fp8 is not a training mode of this runtime.");
  }

  out += "\nFormats (from their bit layouts) and the round trip of N(0,1) values\n";
  report::Table f({{"format"},
                   {"exp bits", Align::kRight},
                   {"mantissa", Align::kRight},
                   {"max", Align::kRight},
                   {"min normal", Align::kRight},
                   {"min subnormal", Align::kRight},
                   {"epsilon", Align::kRight},
                   {"round trip max", Align::kRight},
                   {"mean", Align::kRight}});
  for (const char* name : {"f32", "bf16", "f16"}) {
    const FloatFormatInfo* info = find_float_format(name);
    std::string max_err = "0", mean_err = "0";
    for (const RoundTripError& e : lesson.round_trip)
      if (e.format == name) {
        max_err = scientific(e.max) + " (2^" + report::format_fixed(std::log2(e.max), 1) + ")";
        mean_err = scientific(e.mean);
      }
    f.add_row({name, std::to_string(info->exponent_bits), std::to_string(info->mantissa_bits),
               scientific(info->max_finite), scientific(info->min_normal),
               scientific(info->min_subnormal), scientific(info->epsilon), max_err, mean_err});
  }
  out += f.render(colour);

  out += "\nThe op table of the 16-bit modes (what torch.autocast's lists decide in PyTorch)\n";
  report::Table ops({{"op"}, {"inputs"}, {"compute"}, {"stores"}, {"why"}});
  for (const amp::OpPrecision& op : amp::op_precision_table())
    ops.add_row({std::string(op.op), std::string(op.inputs), std::string(op.compute),
                 std::string(op.stores), std::string(op.why)});
  out += ops.render(colour);
  return out;
}

}  // namespace vramlab::lesson03
