// Lesson 09's runs, tables and JSON (see optimizer_report.h).
#include "lessons/09-optimizer-memory/optimizer_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/core.h>

#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/report/typed_table.h"
#include "common/train/synthetic_tokens.h"
#include "common/train/trainer.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;
using nlohmann::json;
using report::TypedColumn;
using report::TypedColumns;
using report::Unit;
using report::wrap_note;

std::string name_of(Optimizer o) {
  return std::string(estimate::optimizer_name(o));
}

std::string precision_text(amp::Precision p) {
  return std::string(amp::precision_name(p));
}

std::string lr_text(float lr) {
  return fmt::format("{:g}", static_cast<double>(lr));
}

std::string model_text(const ModelConfig& m) {
  return fmt::format("{} (L={}, C={}, H={}, V={})", m.name, m.layers, m.hidden, m.heads, m.vocab);
}

// What each optimizer keeps, after its last step: the bytes table and its JSON objects.
const TypedColumns<OptimizerRun>& bytes_columns() {
  using R = OptimizerRun;
  static const TypedColumns<OptimizerRun> columns = {
      {{"name", "optimizer"}, [](const R& r) { return name_of(r.optimizer); }},
      {{"precision", "precision"}, [](const R& r) { return precision_text(r.precision); }},
      {{"parameter_count", ""}, [](const R& r) { return r.bytes.parameter_count; }},
      {{"state_bytes", "state_bytes()", Unit::bytes},
       [](const R& r) { return r.bytes.state_bytes; }},
      {{"allocator_requested_bytes", "allocator", Unit::bytes},
       [](const R& r) { return r.bytes.allocator_requested; }},
      {{"estimator_bytes", "estimator", Unit::bytes},
       [](const R& r) { return r.bytes.estimate.optimizer_states(); }},
      {{"master_bytes", "master", Unit::bytes}, [](const R& r) { return r.bytes.master_bytes; }},
      {{"absmax_bytes", "absmax", Unit::bytes}, [](const R& r) { return r.bytes.absmax_bytes; }},
      {{"bytes_per_param", "states B/param", Unit::per_param},
       [](const R& r) { return r.bytes.state_bytes_per_param(); }},
      {{"model_state_bytes_per_param", "all B/param", Unit::per_param},
       [](const R& r) { return r.bytes.model_state_bytes_per_param(); }},
      {{"", "= estimator"},
       [](const R& r) { return r.bytes.equals_estimate() ? "yes, to the byte" : "NO"; }},
      {{"equals_estimator", ""}, [](const R& r) { return r.bytes.equals_estimate(); }},
      {{"allocator_allocated_bytes", ""}, [](const R& r) { return r.bytes.allocator_allocated; }},
      {{"allocator_blocks", ""}, [](const R& r) { return r.bytes.allocator_blocks; }},
      {{"parameter_bytes", ""}, [](const R& r) { return r.bytes.parameter_bytes; }},
      {{"gradient_bytes", ""}, [](const R& r) { return r.bytes.gradient_bytes; }},
      {{"moment_bytes", ""}, [](const R& r) { return r.bytes.moment_bytes; }},
      {{"estimator_master_bytes", ""}, [](const R& r) { return r.bytes.estimate.master_weights; }},
      {{"estimator_moment_bytes", ""},
       [](const R& r) { return r.bytes.estimate.optimizer_moments; }},
      {{"estimator_absmax_bytes", ""}, [](const R& r) { return r.bytes.estimate_absmax_bytes; }},
      {{"estimator_parameter_bytes", ""}, [](const R& r) { return r.bytes.estimate.parameters; }},
      {{"estimator_gradient_bytes", ""}, [](const R& r) { return r.bytes.estimate.gradients; }},
  };
  return columns;
}

// How each optimizer trained: the first table, and what "optimizers" adds to the bytes.
TypedColumns<OptimizerRun> training_columns(const Lesson& lesson) {
  using R = OptimizerRun;
  return {
      {{"", "optimizer"}, [](const R& r) { return name_of(r.optimizer); }},
      {{"learning_rate", "lr", Unit::general}, [](const R& r) { return r.learning_rate; }},
      {{"", "loss step 1", Unit::fixed, 4},
       [](const R& r) { return r.losses.empty() ? report::Value() : r.losses.front(); }},
      {{"final_loss", "final loss", Unit::fixed, 4},
       [](const R& r) { return final_loss(r.losses); }},
      {{"final_loss_vs_adamw", "vs adamw", Unit::signed_percent, 1},
       [&lesson](const R& r) { return final_loss_gap(lesson, r.optimizer); }},
      {{"", "states", Unit::bytes}, [](const R& r) { return r.bytes.state_bytes; }},
      {{"", "B/param", Unit::per_param},
       [](const R& r) { return r.bytes.state_bytes_per_param(); }},
      {{"seconds", "time", Unit::seconds}, [](const R& r) { return r.seconds; }},
  };
}

// 8-bit AdamW's moments against fp32's, every --quantization-every steps.
const TypedColumns<QuantizationPoint>& quantization_columns() {
  using Q = QuantizationPoint;
  static const TypedColumns<QuantizationPoint> columns = {
      {{"step", "step", Unit::integer}, [](const Q& q) { return q.step; }},
      {{"m_error", "m", Unit::percent}, [](const Q& q) { return q.m_error; }},
      {{"m_rounding", "m, one rounding", Unit::percent}, [](const Q& q) { return q.m_rounding; }},
      {{"v_error", "v", Unit::percent}, [](const Q& q) { return q.v_error; }},
      {{"v_rounding", "v, one rounding", Unit::percent}, [](const Q& q) { return q.v_rounding; }},
      {{"update_error", "update m̂/(√v̂+ε)", Unit::percent},
       [](const Q& q) { return q.update_error; }},
  };
  return columns;
}

void validate_settings(const LessonSettings& s) {
  if (s.optimizers.empty()) throw UsageError("--optimizers must name at least one optimizer");
  if (s.train.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(s.train.steps));
  if (s.train.quantization_every < 0)
    throw UsageError("--quantization-every must be >= 0, got " +
                     std::to_string(s.train.quantization_every));
  if (s.train.eight_bit.block_size < 1)
    throw UsageError("--block-size must be >= 1, got " +
                     std::to_string(s.train.eight_bit.block_size));
  if (s.train.eight_bit.min_8bit_size < 0)
    throw UsageError("--min-8bit-size must be >= 0, got " +
                     std::to_string(s.train.eight_bit.min_8bit_size));
  for (const Optimizer o : s.optimizers) {
    const float lr = learning_rate(s.rates, o);
    if (!(lr > 0.0f) || !std::isfinite(lr))
      throw UsageError("the learning rate of " + name_of(o) + " must be a finite number > 0, got " +
                       lr_text(lr));
  }
  train::TrainOptions options;
  options.model = s.train.model;
  options.batch = s.train.batch;
  options.seq = s.train.seq;
  options.plan.amp.precision = s.train.precision;
  train::validate(options);
}

}  // namespace

const OptimizerRun* find_training(const Lesson& lesson, Optimizer optimizer) {
  for (const OptimizerRun& r : lesson.training)
    if (r.optimizer == optimizer) return &r;
  return nullptr;
}

const OptimizerRun* find_scale(const Lesson& lesson, const std::string& model,
                               amp::Precision precision, Optimizer optimizer) {
  for (const ScaleRun& s : lesson.scale)
    if (s.model == model && s.run.precision == precision && s.run.optimizer == optimizer)
      return &s.run;
  return nullptr;
}

double final_loss_gap(const Lesson& lesson, Optimizer optimizer) {
  const OptimizerRun* adamw = find_training(lesson, Optimizer::adamw);
  const OptimizerRun* run = find_training(lesson, optimizer);
  if (!adamw || !run || adamw->losses.empty()) return NAN;
  const double reference = final_loss(adamw->losses);
  return (final_loss(run->losses) - reference) / reference;
}

Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&)) {
  validate_settings(settings);
  Lesson lesson;
  lesson.settings = settings;
  {
    const train::SyntheticTokenStream data(
        settings.train.model.vocab,
        std::min<int64_t>(train::TrainOptions{}.branching, settings.train.model.vocab),
        settings.train.seed);
    lesson.entropy_rate_nats = data.entropy_rate_nats();
    lesson.unigram_entropy_nats = data.unigram_entropy_nats();
  }
  for (const Optimizer o : settings.optimizers) {
    const float lr = learning_rate(settings.rates, o);
    if (progress)
      progress("training " + std::to_string(settings.train.steps) + " steps, --optimizer " +
               name_of(o) + " --lr " + lr_text(lr));
    lesson.training.push_back(run_optimizer(settings.train, o, lr));
  }
  if (settings.compare_precision != settings.train.precision) {
    RunSettings one = settings.train;
    one.precision = settings.compare_precision;
    one.steps = 1;
    one.quantization_every = 0;
    for (const Optimizer o : settings.optimizers) {
      if (progress) progress("one step, " + precision_text(one.precision) + ", " + name_of(o));
      lesson.compared.push_back(run_optimizer(one, o, learning_rate(settings.rates, o)));
    }
  }
  if (settings.scale) {
    for (const ModelConfig& model : settings.scale_models) {
      if (progress) progress("at scale on meta: " + model.name);
      RunSettings one;
      one.model = model;
      one.batch = 1;
      one.seq = std::min<int64_t>(128, model.max_seq);
      one.device = memory::parse_device("meta");
      one.seed = settings.train.seed;
      one.steps = 1;
      one.eight_bit = settings.train.eight_bit;
      for (const amp::Precision p : settings.scale_precisions) {
        one.precision = p;
        for (const Optimizer o : settings.optimizers)
          lesson.scale.push_back(
              {model.name, run_optimizer(one, o, learning_rate(settings.rates, o))});
      }
    }
  }
  return lesson;
}

json to_json(const Lesson& lesson) {
  const LessonSettings& s = lesson.settings;
  json j;
  j["lesson"] = "09";
  const ModelConfig& m = s.train.model;
  j["model"] = {{"name", m.name},
                {"layers", m.layers},
                {"hidden", m.hidden},
                {"heads", m.heads},
                {"vocab", m.vocab},
                {"parameter_count", m.parameter_count()},
                {"batch", s.train.batch},
                {"seq", s.train.seq},
                {"steps", s.train.steps},
                {"precision", precision_text(s.train.precision)},
                {"device", s.train.device.name()},
                {"seed", s.train.seed}};
  j["entropy_rate_nats"] = lesson.entropy_rate_nats;
  j["unigram_entropy_nats"] = lesson.unigram_entropy_nats;
  j["learning_rates"] = {{"adamw", s.rates.adamw},
                         {"adamw-8bit", s.rates.adamw},
                         {"adam-mini", s.rates.adamw},
                         {"lion", s.rates.lion},
                         {"adafactor", s.rates.adafactor},
                         {"sgd", s.rates.sgd},
                         {"sgd-momentum", s.rates.sgd_momentum}};
  j["eight_bit"] = {{"block_size", s.train.eight_bit.block_size},
                    {"min_8bit_size", s.train.eight_bit.min_8bit_size},
                    {"fp32_embeddings", s.train.eight_bit.fp32_embeddings}};
  j["final_loss_tolerance"] = kFinalLossTolerance;
  j["optimizers"] = json::array();
  const TypedColumns<OptimizerRun> training = training_columns(lesson);
  for (const OptimizerRun& r : lesson.training) {
    json o = report::record_json(bytes_columns(), r);
    o.update(report::record_json(training, r));
    o["losses"] = r.losses;
    j["optimizers"].push_back(std::move(o));
  }
  j["compared_precision"] = report::table_of(bytes_columns(), lesson.compared).json();
  j["quantization"] = json::array();
  for (const OptimizerRun& r : lesson.training)
    for (const json& point : report::table_of(quantization_columns(), r.quantization).json())
      j["quantization"].push_back(point);
  j["scale"] = json::array();
  for (const ScaleRun& r : lesson.scale) {
    json o = report::record_json(bytes_columns(), r.run);
    o["model"] = r.model;
    j["scale"].push_back(std::move(o));
  }
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  const ModelConfig& m = s.train.model;
  const std::string psi = report::format_count(m.parameter_count());
  std::string out = report::style::bold("Lesson 09: optimizer memory", colour) + "\n\n";

  out += fmt::format("Training {}, Ψ = {} parameters, B={}, T={}, {} steps, {}, on {}\n",
                     model_text(m), psi, s.train.batch, s.train.seq, s.train.steps,
                     precision_text(s.train.precision), s.train.device.name());
  out += report::table_of(training_columns(lesson), lesson.training).render(colour);
  out += wrap_note(fmt::format(
      "final loss: the mean of the last tenth of the steps (the entropy rate of the token stream, "
      "the floor no model beats, is {:.4f} nats; ignoring the context gives {:.4f}). lr: AdamW's "
      "{} for the three optimizers built on its moments (8-bit AdamW, Adam-mini); Lion's {}, 3x "
      "smaller, because its update is a sign (±1 per element) where AdamW's is m̂/√v̂ (about ±1 "
      "only early on); Adafactor's {} is a relative step, min(ρ, 1/√t) times the RMS of each "
      "tensor; SGD's {} and with momentum 0.9 a tenth of it ({}), since momentum sums the steps "
      "to 10x. states: Optimizer::state_bytes() after the last step.",
      lesson.entropy_rate_nats, lesson.unigram_entropy_nats, lr_text(s.rates.adamw),
      lr_text(s.rates.lion), lr_text(s.rates.adafactor), lr_text(s.rates.sgd),
      lr_text(s.rates.sgd_momentum)));

  // The bytes, measured three ways, in both precisions.
  out += fmt::format("\nWhat each optimizer keeps: {}, Ψ = {}, after its last step\n", m.name, psi);
  report::TypedTable bytes = report::table_of(bytes_columns(), lesson.training);
  for (const OptimizerRun& r : lesson.compared) report::add_row(bytes, bytes_columns(), r);
  out += bytes.render(colour);
  int64_t allocated = 0, requested = 0, blocks = 0;
  for (const OptimizerRun& r : lesson.training) {
    allocated += r.bytes.allocator_allocated;
    requested += r.bytes.allocator_requested;
    blocks += r.bytes.allocator_blocks;
  }
  out += wrap_note(fmt::format(
      "allocator: the requested bytes of its live optimizer_state blocks (the snapshot, as "
      "torch.cuda.memory_snapshot() lists them); its optimizer_state category counts their "
      "rounded sizes, {} B more over the {} state tensors of the training runs (each rounded up "
      "to 512 B). estimator: `vramlab estimate` for the same model, precision and optimizer. "
      "master: the fp32 copy of mixed precision. all: weights + gradients + states. \"yes\": "
      "state_bytes(), the allocator and the estimator agree to the byte, and so do the weights, "
      "the gradients, the master and the absmax. 8-bit AdamW keeps fp32 moments for tensors under "
      "--min-8bit-size {} elements (bitsandbytes' min_8bit_size): in a model this small that is "
      "many of them.",
      allocated - requested, blocks, s.train.eight_bit.min_8bit_size));

  // 8-bit AdamW's moments against fp32's.
  for (const OptimizerRun& r : lesson.training) {
    if (r.quantization.empty()) continue;
    out += fmt::format(
        "\n8-bit AdamW (block {}) against fp32 AdamW's moments on the same gradients: ‖8-bit − "
        "fp32‖ / ‖fp32‖\n",
        s.train.eight_bit.block_size);
    out += report::table_of(quantization_columns(), r.quantization).render(colour);
    out += wrap_note(
        "fp32: m and v computed beside the run in double from the very gradients the 8-bit "
        "optimizer used (AdamW's moments depend on nothing else). m, v: the dequantised 8-bit "
        "states against them. one rounding: the fp32 states quantised once with the same "
        "blocks and maps, the error of storing them in 8 bits at all; when m and v stay near it, "
        "the rounding errors of the steps do not pile up. update: the step direction the "
        "kernel applied, m̂/(√v̂+ε) from the stored states dequantised with this step's "
        "gradient mixed in (before the learning rate), against fp32 AdamW's.");
  }

  // At scale: one row per optimizer, one column per precision.
  const auto bytes_and_per_param = [](int64_t n, double per_param) {
    return report::format_bytes_or_zero(n) + " (" + report::format_per_param(per_param) + ")";
  };
  for (const ModelConfig& model : s.scale_models) {
    if (lesson.scale.empty()) break;
    const OptimizerRun* any =
        find_scale(lesson, model.name, s.scale_precisions.front(), s.optimizers.front());
    if (!any) continue;
    out += fmt::format(
        "\nAt scale on meta: {}, Ψ = {}, one training step: optimizer states (B/param)\n",
        model.name, report::format_count(any->bytes.parameter_count));
    std::vector<report::Field> fields = {{"", "optimizer"}};
    for (const amp::Precision p : s.scale_precisions)
      fields.push_back({"", precision_text(p), Unit::fixed});
    fields.push_back({"", "mixed-bf16 all", Unit::fixed});
    fields.push_back({"", "= estimator"});
    report::TypedTable table(std::move(fields));
    for (const Optimizer o : s.optimizers) {
      std::vector<report::Value> row = {name_of(o)};
      bool equal = true;
      const OptimizerRun* mixed = nullptr;
      for (const amp::Precision p : s.scale_precisions) {
        const OptimizerRun* r = find_scale(lesson, model.name, p, o);
        if (!r) {
          row.emplace_back();
          continue;
        }
        equal = equal && r->bytes.equals_estimate();
        if (p == amp::Precision::mixed_bf16) mixed = r;
        row.emplace_back(
            bytes_and_per_param(r->bytes.state_bytes, r->bytes.state_bytes_per_param()));
      }
      if (mixed)
        row.emplace_back(bytes_and_per_param(
            mixed->bytes.parameter_bytes + mixed->bytes.gradient_bytes + mixed->bytes.state_bytes,
            mixed->bytes.model_state_bytes_per_param()));
      else
        row.emplace_back();
      row.emplace_back(equal ? "yes, to the byte" : "NO");
      table.add_row(std::move(row));
    }
    out += table.render(colour);
  }
  if (!lesson.scale.empty())
    out += wrap_note(
        "states: what the allocator holds in optimizer_state after one step on meta (the "
        "master included); bf16: pure bf16, where the states take the parameters' type; "
        "mixed-bf16 all: bf16 weights and gradients plus the fp32 master and the states (ZeRO's "
        "2Ψ + 2Ψ + KΨ). \"yes\": every precision's bytes equal the estimator's to the byte.");
  return out;
}

}  // namespace vramlab::lesson09
