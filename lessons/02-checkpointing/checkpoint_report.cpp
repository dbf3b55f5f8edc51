// Lesson 02's runs, tables and JSON (see checkpoint_report.h).
#include "lessons/02-checkpointing/checkpoint_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/estimate/recompute_costs.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/optimal_schedule.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/train/trainer.h"

namespace vramlab::lesson02 {

namespace {

using report::Align;
using report::Column;
using report::format_bytes;

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", s);
  return text;
}

using report::wrap_note;

void tell(void (*progress)(const std::string&), const std::string& line) {
  if (progress != nullptr) progress(line);
}

int64_t planned_peak(const recompute::ChainCosts& chain, std::string_view spec) {
  return recompute::activation_peak_bytes(
      chain, recompute::make_schedule(recompute::parse_recompute_spec(spec), chain));
}

// Half-way between the sqrt and none peaks, rounded down to the largest binary unit (GiB, MiB,
// KiB) that keeps it at or above sqrt's: a budget that forces a real choice (none does not fit,
// sqrt is more than needed) with a name one can read ("budget:68MiB").
int64_t half_way_budget(const recompute::ChainCosts& chain) {
  const int64_t low = planned_peak(chain, "sqrt");
  const int64_t high = planned_peak(chain, "none");
  const int64_t mid = low + (high - low) / 2;
  for (const int64_t unit : {int64_t{1} << 30, int64_t{1} << 20, int64_t{1} << 10}) {
    const int64_t rounded = mid / unit * unit;
    if (rounded >= low && rounded > 0) return rounded;
  }
  return mid;
}

// The --recompute text of a budget, as the runtime names the schedule ("budget:68MiB").
std::string budget_spec(int64_t budget_bytes) {
  recompute::RecomputeSpec spec;
  spec.kind = recompute::RecomputeSpec::Kind::budget;
  spec.budget_bytes = budget_bytes;
  return recompute::to_string(spec);
}

std::string model_line(const ModelConfig& m) {
  return m.name + " (L=" + std::to_string(m.layers) + ", C=" + std::to_string(m.hidden) +
         ", H=" + std::to_string(m.heads) + ", V=" + std::to_string(m.vocab) + ")";
}

// The meta twin of a sim device: the same caching allocator under the same capacity, with
// virtual addresses and no kernels, so a step there allocates what it allocates on the sim
// device in a fraction of the time.
memory::Device meta_twin(const memory::Device& device) {
  return memory::parse_device("meta:" + std::to_string(device.spec.capacity_bytes) + "B");
}

double median_of(std::vector<double> values) {
  return values.empty() ? 0.0 : train::median(std::move(values));
}

}  // namespace

Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&)) {
  Lesson lesson;
  lesson.settings = settings;
  const RunSettings& run = settings.run;
  train::TrainOptions check;
  check.model = run.model;
  check.batch = run.batch;
  check.seq = run.seq;
  check.plan.dropout.p = run.dropout;
  train::validate(check);
  const recompute::ChainCosts chain =
      estimate::runtime_chain_costs(run.model, run.batch, run.seq, DType::f32, run.attention);
  lesson.least_activation_peak_bytes = recompute::least_activation_peak_bytes(chain);
  if (settings.budget_bytes) {
    lesson.budget_bytes = *settings.budget_bytes;
    lesson.budget_note = "given with --budget";
  } else {
    lesson.budget_bytes = half_way_budget(chain);
    lesson.budget_note =
        "half-way between the sqrt and none activation peaks the planner predicts at this B "
        "and T, rounded down to a whole binary unit";
  }

  std::vector<std::string> specs = settings.schedules;
  specs.push_back(budget_spec(lesson.budget_bytes));
  if (specs.empty() || specs.front() != "none")
    throw InternalError("lesson 02's schedule table must start with none");
  const bool computes = run.device.kind != memory::DeviceKind::meta;
  if (computes) {
    // The process's first step also pays for starting the thread pool and touching fresh memory:
    // untimed, so that none's step time is comparable with the others'.
    RunSettings warm_up = run;
    warm_up.steps = 1;
    warm_up.record_timeline = false;
    (void)run_policy(warm_up, recompute::parse_recompute_spec("none"));
  }
  for (const std::string& text : specs) {
    tell(progress, "schedule " + text);
    PolicyRow row;
    row.run = run_policy(run, recompute::parse_recompute_spec(text));
    row.step_seconds = median_of(row.run.step_seconds);
    if (computes) {
      const PolicyRun& none = lesson.policies.empty() ? row.run : lesson.policies.front().run;
      row.grads_bitwise_equal = bitwise_equal(row.run.gradients, none.gradients) &&
                                bitwise_equal(row.run.parameters, none.parameters);
    }
    lesson.policies.push_back(std::move(row));
  }

  if (settings.max_batch_device.spec.capacity_bytes > 0) {
    const memory::Device& device = settings.max_batch_device;
    const bool twin = device.kind == memory::DeviceKind::sim;
    const memory::Device search_on = twin ? meta_twin(device) : device;
    RunSettings quick = run;
    quick.record_timeline = false;
    for (const std::string& text : specs) {
      tell(progress, "largest batch on " + device.name() + ": " + text);
      const recompute::RecomputeSpec spec = recompute::parse_recompute_spec(text);
      MaxBatchRow row;
      row.name = text;
      row.batch = max_batch(quick, spec, search_on, settings.max_batch_limit);
      if (twin) {
        // The device decides: near its capacity, the order of a few frees (which differs between
        // the cpu kernels and meta's) changes how the segments fragment.
        row.meta_twin_batch = row.batch;
        while (row.batch > 0 && !step_fits(quick, spec, device, row.batch)) --row.batch;
        while (row.batch < settings.max_batch_limit &&
               step_fits(quick, spec, device, row.batch + 1))
          ++row.batch;
      }
      lesson.max_batch.push_back(row);
    }
  }

  if (settings.scale) {
    RunSettings big;
    big.model = settings.meta_model;
    big.batch = 1;
    big.seq = settings.meta_seq;
    big.device = memory::parse_device("meta");
    big.dropout = 0.0f;
    big.steps = 1;
    big.record_timeline = false;
    const recompute::ChainCosts big_chain =
        estimate::runtime_chain_costs(big.model, big.batch, big.seq, DType::f32, big.attention);
    std::vector<std::string> big_specs = settings.schedules;
    big_specs.push_back(budget_spec(half_way_budget(big_chain)));
    for (const std::string& text : big_specs) {
      tell(progress, "at scale on meta: " + text);
      lesson.meta.push_back(run_policy(big, recompute::parse_recompute_spec(text)));
    }
    // How the saved activations grow with the depth: linearly for none, with sqrt(L) spans for
    // sqrt, and for full by one block input per layer.
    RunSettings deep = run;
    deep.device = memory::parse_device("meta");
    deep.steps = 1;
    deep.record_timeline = false;
    for (const int64_t layers : settings.depths) {
      deep.model.layers = layers;
      tell(progress, "on meta at L=" + std::to_string(layers));
      for (const char* text : {"none", "sqrt", "full"})
        lesson.depth.push_back(
            {layers, text,
             run_policy(deep, recompute::parse_recompute_spec(text)).activation_peak_bytes});
    }
  }

  if (settings.compression && computes) {
    const PolicyRun& none = lesson.policies.front().run;
    auto fp32_of = [&](const std::string& schedule) -> const PolicyRun& {
      for (const PolicyRow& row : lesson.policies)
        if (row.run.name == schedule) return row.run;
      throw InternalError("no fp32 run of " + schedule);
    };
    const std::vector<std::pair<std::string, nn::ActivationCompression>> rows = {
        {"none", nn::ActivationCompression::int8},
        {"none", nn::ActivationCompression::int8_block},
        {"selective", nn::ActivationCompression::int8_block},
        {"full", nn::ActivationCompression::int8_block},
    };
    RunSettings quick = run;
    quick.record_timeline = false;
    for (const auto& [schedule, mode] : rows) {
      const std::string name =
          std::string(nn::compression_name(mode)) + (schedule == "none" ? "" : " + " + schedule);
      tell(progress, "activation compression: " + name);
      const PolicyRun compressed =
          run_policy(quick, recompute::parse_recompute_spec(schedule), mode);
      CompressionRow row;
      row.name = name;
      row.schedule = schedule;
      row.compression = compressed.compression;
      row.activation_peak_bytes = compressed.activation_peak_bytes;
      row.fp32_activation_peak_bytes = fp32_of(schedule).activation_peak_bytes;
      row.none_activation_peak_bytes = none.activation_peak_bytes;
      row.bytes_after_forward = compressed.bytes_after_forward;
      row.predicted_bytes_after_forward = compressed.predicted_bytes_after_forward;
      std::vector<double> errors;
      for (const ParameterRange& r : compressed.parameter_ranges) {
        const double e = relative_error(compressed.gradients, none.gradients, r.offset, r.numel);
        errors.push_back(e);
        if (e >= row.max_relative_grad_error) {
          row.max_relative_grad_error = e;
          row.worst_tensor = r.name;
        }
      }
      row.median_relative_grad_error = median_of(errors);
      row.loss = compressed.losses.back();
      row.fp32_loss = none.losses.back();
      lesson.compression.push_back(row);
    }
  }

  // The planner's cheapest schedule at budgets from the least peak to none's: the frontier.
  const int64_t low = lesson.least_activation_peak_bytes;
  const int64_t high = planned_peak(chain, "none");
  std::set<std::string> seen;
  // The planner's search grows faster than linearly with the layers (seconds per budget at 256
  // identical layers), so deep models get fewer budgets: 48 intervals up to 32 layers, 6 at 256.
  const int kBudgets = static_cast<int>(std::clamp<int64_t>(1536 / run.model.layers, 6, 48));
  for (int i = 0; i <= kBudgets; ++i) {
    const int64_t budget =
        low + static_cast<int64_t>(static_cast<double>(high - low) * i / kBudgets);
    const recompute::RecomputeSchedule s = recompute::optimal_schedule(chain, budget);
    if (!seen.insert(recompute::schedule_pattern(s)).second) continue;
    lesson.sweep.push_back(
        {"budget:" + std::to_string(budget), recompute::activation_peak_bytes(chain, s),
         estimate::recomputed_forward_fraction(run.model, run.batch, run.seq, s, run.attention)});
  }
  return lesson;
}

nlohmann::json to_json(const Lesson& lesson) {
  const LessonSettings& s = lesson.settings;
  nlohmann::json j;
  j["model"] = {{"name", s.run.model.name},
                {"layers", s.run.model.layers},
                {"hidden", s.run.model.hidden},
                {"heads", s.run.model.heads},
                {"vocab", s.run.model.vocab}};
  j["batch"] = s.run.batch;
  j["seq"] = s.run.seq;
  j["device"] = s.run.device.name();
  j["dropout"] = s.run.dropout;
  j["steps"] = s.run.steps;
  j["budget_bytes"] = lesson.budget_bytes;
  j["budget_note"] = lesson.budget_note;
  j["grads_bitwise_equal_compares"] =
      "step 1's gradients and the parameters after the last step, bit for bit, with none's";
  nlohmann::json policies = nlohmann::json::array();
  for (const PolicyRow& row : lesson.policies) {
    nlohmann::json p = {
        {"name", row.run.name},
        {"pattern", row.run.pattern},
        {"activation_peak_bytes", row.run.activation_peak_bytes},
        {"predicted_activation_peak_bytes", row.run.predicted_activation_peak_bytes},
        {"timeline_peak_bytes", row.run.timeline_peak_bytes},
        {"bytes_after_forward", row.run.bytes_after_forward},
        {"peak_bytes", row.run.peak_bytes},
        {"step_seconds", row.step_seconds},
        {"recomputed_forward_fraction", row.run.recomputed_forward_fraction},
        {"losses", row.run.losses},
        {"grads_bitwise_equal", nullptr}};
    if (row.grads_bitwise_equal) p["grads_bitwise_equal"] = *row.grads_bitwise_equal;
    nlohmann::json timeline = nlohmann::json::array();
    for (const PhaseSample& sample : row.run.timeline)
      timeline.push_back({{"phase", sample.label},
                          {"max_bytes", sample.max_bytes},
                          {"end_bytes", sample.end_bytes}});
    p["timeline"] = timeline;
    policies.push_back(p);
  }
  j["policies"] = policies;
  nlohmann::json max_batch = nlohmann::json::object();
  nlohmann::json max_batch_detail = nlohmann::json::array();
  for (const MaxBatchRow& row : lesson.max_batch) {
    max_batch[row.name] = row.batch;
    nlohmann::json d = {{"name", row.name}, {"batch", row.batch}, {"meta_twin_batch", nullptr}};
    if (row.meta_twin_batch) d["meta_twin_batch"] = *row.meta_twin_batch;
    max_batch_detail.push_back(d);
  }
  j["max_batch"] = max_batch;
  j["max_batch_device"] = s.max_batch_device.spec.capacity_bytes > 0
                              ? nlohmann::json(s.max_batch_device.name())
                              : nlohmann::json(nullptr);
  j["max_batch_detail"] = max_batch_detail;
  nlohmann::json meta = nlohmann::json::array();
  for (const PolicyRun& run : lesson.meta)
    meta.push_back({{"name", run.name},
                    {"pattern", run.pattern},
                    {"activation_peak_bytes", run.activation_peak_bytes},
                    {"predicted_activation_peak_bytes", run.predicted_activation_peak_bytes},
                    {"peak_bytes", run.peak_bytes},
                    {"recomputed_forward_fraction", run.recomputed_forward_fraction}});
  j["meta"] = {{"model", s.meta_model.name}, {"batch", 1}, {"seq", s.meta_seq}, {"rows", meta}};
  j["depth"] = nlohmann::json::array();
  for (const DepthPoint& d : lesson.depth)
    j["depth"].push_back({{"layers", d.layers},
                          {"schedule", d.schedule},
                          {"activation_peak_bytes", d.activation_peak_bytes}});
  nlohmann::json compression = nlohmann::json::array();
  for (const CompressionRow& row : lesson.compression)
    compression.push_back({{"name", row.name},
                           {"schedule", row.schedule},
                           {"compression", row.compression},
                           {"activation_peak_bytes", row.activation_peak_bytes},
                           {"fp32_activation_peak_bytes", row.fp32_activation_peak_bytes},
                           {"none_activation_peak_bytes", row.none_activation_peak_bytes},
                           {"bytes_after_forward", row.bytes_after_forward},
                           {"predicted_bytes_after_forward", row.predicted_bytes_after_forward},
                           {"max_relative_grad_error", row.max_relative_grad_error},
                           {"worst_tensor", row.worst_tensor},
                           {"median_relative_grad_error", row.median_relative_grad_error},
                           {"loss", row.loss},
                           {"fp32_loss", row.fp32_loss}});
  j["compression"] = compression;
  nlohmann::json sweep = nlohmann::json::array();
  for (const TradeoffPoint& p : lesson.sweep)
    sweep.push_back({{"name", p.name},
                     {"activation_peak_bytes", p.activation_peak_bytes},
                     {"recomputed_forward_fraction", p.recomputed_forward_fraction}});
  j["sweep"] = sweep;
  j["least_activation_peak_bytes"] = lesson.least_activation_peak_bytes;
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  std::string out;
  out += report::style::bold("Lesson 02: gradient checkpointing, measured", colour) + "\n";
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%.2g", static_cast<double>(s.run.dropout));
  out += "Model " + model_line(s.run.model) + ", B=" + std::to_string(s.run.batch) +
         ", T=" + std::to_string(s.run.seq) + ", fp32, dropout " + dropout + ", on " +
         s.run.device.name() + "; " + std::to_string(s.run.steps) +
         (s.run.steps == 1 ? " step" : " steps") + " per schedule on a fresh runtime.\n\n";

  const PolicyRun& none = lesson.policies.front().run;
  report::Table table({{"schedule"},
                       {"layers"},
                       {"activation peak", Align::kRight},
                       {"planner", Align::kRight},
                       {"vs none", Align::kRight},
                       {"total peak", Align::kRight},
                       {"step", Align::kRight},
                       {"recomputed fwd", Align::kRight},
                       {"grads = none"}});
  for (const PolicyRow& row : lesson.policies) {
    const PolicyRun& r = row.run;
    const bool agree = r.activation_peak_bytes == r.predicted_activation_peak_bytes;
    table.add_row(
        {r.name, r.pattern, report::format_bytes_or_zero(r.activation_peak_bytes),
         agree ? "same"
               : report::format_bytes_or_zero(r.predicted_activation_peak_bytes) + " (DIFFERS)",
         r.name == "none" ? ""
                          : "-" + report::format_percent(
                                      1.0 - static_cast<double>(r.activation_peak_bytes) /
                                                static_cast<double>(none.activation_peak_bytes),
                                      0),
         report::format_bytes_or_zero(r.peak_bytes), seconds(row.step_seconds),
         report::format_percent(r.recomputed_forward_fraction),
         !row.grads_bitwise_equal ? "n/a (meta)" : (*row.grads_bitwise_equal ? "bitwise" : "NO")},
        agree ? report::RowStyle::kNormal : report::RowStyle::kRed);
  }
  out += table.render(colour);
  out +=
      "\n  layers: one character per layer, '.' keeps everything, 's' recomputes its attention\n"
      "  probabilities, 'F' starts a checkpointed span (only its input is kept), 'f'\n"
      "  continues it. activation peak: the saved-activation store's most bytes at once\n"
      "  (requested bytes); planner: recompute::activation_peak_bytes() of the same\n"
      "  schedule, \"same\" when equal to the byte. total peak: the caching allocator's\n"
      "  allocated peak (everything: weights, gradients, AdamW states, temporaries). step:\n"
      "  median wall time. grads = none: step 1's gradients and the parameters after the\n"
      "  last step are bit for bit those of none (dropout masks replayed on recompute).\n";
  out += wrap_note(budget_spec(lesson.budget_bytes) + ": the planner's cheapest schedule under " +
                   report::format_bytes_or_zero(lesson.budget_bytes) + ", " + lesson.budget_note +
                   ". The least activation peak any schedule reaches: " +
                   report::format_bytes_or_zero(lesson.least_activation_peak_bytes) + ".");

  if (!lesson.max_batch.empty()) {
    out += "\n" +
           report::style::bold("The largest batch that fits " + s.max_batch_device.name() +
                                   " (T=" + std::to_string(s.run.seq) + "), found by running steps",
                               colour) +
           "\n";
    report::Table mb({{"schedule"},
                      {"largest B", Align::kRight},
                      {"vs none", Align::kRight},
                      {"meta twin's B", Align::kRight}});
    const int64_t base = lesson.max_batch.front().batch;
    for (const MaxBatchRow& row : lesson.max_batch) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2fx",
                    base > 0 ? static_cast<double>(row.batch) / static_cast<double>(base) : 0.0);
      mb.add_row({row.name, std::to_string(row.batch), ratio,
                  row.meta_twin_batch ? std::to_string(*row.meta_twin_batch) : "-"});
    }
    out += mb.render(colour);
    out +=
        "  One real training step per try on a fresh runtime; an out-of-memory error means\n"
        "  the batch does not fit. Doubling then bisection on the device's meta twin (the\n"
        "  same caching allocator and capacity, no kernels) gives a first answer in\n"
        "  milliseconds; steps on the device itself then move it until B fits and B+1\n"
        "  does not. Where the twin's B differs, fragmentation near the capacity decided.\n";
  }

  if (!lesson.meta.empty()) {
    out += "\n" +
           report::style::bold("At scale on meta: " + s.meta_model.name +
                                   ", B=1, T=" + std::to_string(s.meta_seq) + ", fp32",
                               colour) +
           "\n";
    report::Table mt({{"schedule"},
                      {"activation peak", Align::kRight},
                      {"planner", Align::kRight},
                      {"vs none", Align::kRight},
                      {"total peak", Align::kRight},
                      {"recomputed fwd", Align::kRight},
                      {"+ training FLOPs", Align::kRight}});
    const PolicyRun& base = lesson.meta.front();
    for (const PolicyRun& r : lesson.meta) {
      const bool agree = r.activation_peak_bytes == r.predicted_activation_peak_bytes;
      mt.add_row(
          {r.name, report::format_bytes_or_zero(r.activation_peak_bytes),
           agree ? "same"
                 : report::format_bytes_or_zero(r.predicted_activation_peak_bytes) + " (DIFFERS)",
           r.name == "none" ? ""
                            : "-" + report::format_percent(
                                        1.0 - static_cast<double>(r.activation_peak_bytes) /
                                                  static_cast<double>(base.activation_peak_bytes),
                                        0),
           report::format_bytes_or_zero(r.peak_bytes),
           report::format_percent(r.recomputed_forward_fraction),
           "+" + report::format_percent(r.recomputed_forward_fraction / 3.0)},
          agree ? report::RowStyle::kNormal : report::RowStyle::kRed);
    }
    out += mt.render(colour);
    out +=
        "  + training FLOPs: the recomputed forward share / 3 (a training step is about one\n"
        "  forward and a backward of twice its FLOPs). Korthikanti et al. 2022\n"
        "  (arXiv:2205.05198): selective recompute keeps ~70% less activation memory for\n"
        "  ~2.7% more FLOPs on GPT-3 175B; full recompute is one extra forward, ~33% of the\n"
        "  training FLOPs.\n";
  }

  if (!lesson.depth.empty()) {
    out += "\n" +
           report::style::bold("Saved-activation peak as the model deepens, on meta (" +
                                   s.run.model.name +
                                   " at L layers, B=" + std::to_string(s.run.batch) +
                                   ", T=" + std::to_string(s.run.seq) + ")",
                               colour) +
           "\n";
    report::Table dt({{"L", Align::kRight},
                      {"none", Align::kRight},
                      {"sqrt", Align::kRight},
                      {"full", Align::kRight}});
    for (size_t i = 0; i + 2 < lesson.depth.size(); i += 3)
      dt.add_row({std::to_string(lesson.depth[i].layers),
                  report::format_bytes_or_zero(lesson.depth[i].activation_peak_bytes),
                  report::format_bytes_or_zero(lesson.depth[i + 1].activation_peak_bytes),
                  report::format_bytes_or_zero(lesson.depth[i + 2].activation_peak_bytes)});
    out += dt.render(colour);
    out += wrap_note(
        "none keeps every layer's saved tensors: linear in L. sqrt checkpoints spans of "
        "ceil(sqrt(L)) layers and keeps one span's tensors plus the span inputs: O(sqrt(L)), "
        "Chen et al. 2016. full checkpoints every layer and keeps one input per layer: still "
        "O(L), with a small slope.");
  }

  if (!lesson.compression.empty()) {
    out += "\n" +
           report::style::bold(
               "Int8 activation compression (what the layers keep, once the "
               "forward is done with it)",
               colour) +
           "\n";
    report::Table ct({{"run"},
                      {"activation peak", Align::kRight},
                      {"vs fp32 same", Align::kRight},
                      {"vs none fp32", Align::kRight},
                      {"after forward", Align::kRight},
                      {"estimate", Align::kRight},
                      {"grad error max", Align::kRight},
                      {"median", Align::kRight},
                      {"loss", Align::kRight},
                      {"fp32 loss", Align::kRight}});
    for (const CompressionRow& row : lesson.compression) {
      char e1[32], e2[32], l1[32], l2[32];
      std::snprintf(e1, sizeof e1, "%.2e", row.max_relative_grad_error);
      std::snprintf(e2, sizeof e2, "%.2e", row.median_relative_grad_error);
      std::snprintf(l1, sizeof l1, "%.4f", row.loss);
      std::snprintf(l2, sizeof l2, "%.4f", row.fp32_loss);
      ct.add_row(
          {row.name, report::format_bytes_or_zero(row.activation_peak_bytes),
           "-" +
               report::format_percent(1.0 - static_cast<double>(row.activation_peak_bytes) /
                                                static_cast<double>(row.fp32_activation_peak_bytes),
                                      0),
           "-" +
               report::format_percent(1.0 - static_cast<double>(row.activation_peak_bytes) /
                                                static_cast<double>(row.none_activation_peak_bytes),
                                      0),
           report::format_bytes_or_zero(row.bytes_after_forward),
           row.bytes_after_forward == row.predicted_bytes_after_forward
               ? "same"
               : report::format_bytes_or_zero(row.predicted_bytes_after_forward) + " (DIFFERS)",
           e1, e2, l1, l2});
    }
    out += ct.render(colour);
    out +=
        "  grad error: ||g_int8 - g|| / ||g|| per parameter tensor at step 1 against none in\n"
        "  fp32 (max over tensors, and the median); loss after the last step. int8: one\n"
        "  absmax scale per tensor; int8-block: one per 256 values. The norms' statistics\n"
        "  stay fp32. after forward: the store when the forward ended; estimate: vramlab\n"
        "  estimate's bytes for it (estimate::runtime_bytes_after_forward). The peak comes\n"
        "  later, when backward decompresses a layer: the planner does not model that.\n";
  }
  return out;
}

}  // namespace vramlab::lesson02
