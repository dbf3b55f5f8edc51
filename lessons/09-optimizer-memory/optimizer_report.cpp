// Lesson 09's runs, tables and JSON (see optimizer_report.h).
#include "lessons/09-optimizer-memory/optimizer_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/platform/errors.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/train/synthetic_tokens.h"
#include "common/train/trainer.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;
using nlohmann::json;
using report::Align;
using report::wrap_note;

std::string name_of(Optimizer o) {
  return std::string(estimate::optimizer_name(o));
}

std::string precision_text(amp::Precision p) {
  return std::string(amp::precision_name(p));
}

// "1,234,567": parameter counts read better grouped.
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string lr_text(float lr) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(lr));
  return text;
}

std::string model_text(const ModelConfig& m) {
  return m.name + " (L=" + std::to_string(m.layers) + ", C=" + std::to_string(m.hidden) +
         ", H=" + std::to_string(m.heads) + ", V=" + std::to_string(m.vocab) + ")";
}

json bytes_json(const OptimizerRun& r) {
  const StateBytes& b = r.bytes;
  return {{"name", name_of(r.optimizer)},
          {"precision", precision_text(r.precision)},
          {"parameter_count", b.parameter_count},
          {"state_bytes", b.state_bytes},
          {"bytes_per_param", b.state_bytes_per_param()},
          {"model_state_bytes_per_param", b.model_state_bytes_per_param()},
          {"allocator_requested_bytes", b.allocator_requested},
          {"allocator_allocated_bytes", b.allocator_allocated},
          {"allocator_blocks", b.allocator_blocks},
          {"parameter_bytes", b.parameter_bytes},
          {"gradient_bytes", b.gradient_bytes},
          {"master_bytes", b.master_bytes},
          {"absmax_bytes", b.absmax_bytes},
          {"moment_bytes", b.moment_bytes},
          {"estimator_bytes", b.estimate.optimizer_states()},
          {"estimator_master_bytes", b.estimate.master_weights},
          {"estimator_moment_bytes", b.estimate.optimizer_moments},
          {"estimator_absmax_bytes", b.estimate_absmax_bytes},
          {"estimator_parameter_bytes", b.estimate.parameters},
          {"estimator_gradient_bytes", b.estimate.gradients},
          {"equals_estimator", b.equals_estimate()}};
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

std::string per_param(double value) {
  return report::format_fixed(value, value > 0.0 && value < 0.1 ? 4 : 2);
}

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
  for (const OptimizerRun& r : lesson.training) {
    json o = bytes_json(r);
    o["learning_rate"] = r.learning_rate;
    o["final_loss"] = final_loss(r.losses);
    const double gap = final_loss_gap(lesson, r.optimizer);
    o["final_loss_vs_adamw"] = std::isfinite(gap) ? json(gap) : json(nullptr);
    o["losses"] = r.losses;
    o["seconds"] = r.seconds;
    j["optimizers"].push_back(std::move(o));
  }
  j["compared_precision"] = json::array();
  for (const OptimizerRun& r : lesson.compared) j["compared_precision"].push_back(bytes_json(r));
  j["quantization"] = json::array();
  for (const OptimizerRun& r : lesson.training)
    for (const QuantizationPoint& p : r.quantization)
      j["quantization"].push_back({{"step", p.step},
                                   {"m_error", p.m_error},
                                   {"v_error", p.v_error},
                                   {"m_rounding", p.m_rounding},
                                   {"v_rounding", p.v_rounding},
                                   {"update_error", p.update_error}});
  j["claims"] = json::array();
  for (const ClaimRow& c : claims(lesson))
    j["claims"].push_back(
        {{"id", c.id}, {"claim", c.claim}, {"measured", c.measured}, {"verdict", c.verdict}});
  j["scale"] = json::array();
  for (const ScaleRun& r : lesson.scale) {
    json o = bytes_json(r.run);
    o["model"] = r.model;
    j["scale"].push_back(std::move(o));
  }
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  const ModelConfig& m = s.train.model;
  std::string out;
  out += report::style::bold("Lesson 09: optimizer memory", colour) + "\n\n";

  out += "Training " + model_text(m) + ", Ψ = " + grouped(m.parameter_count()) +
         " parameters, B=" + std::to_string(s.train.batch) + ", T=" + std::to_string(s.train.seq) +
         ", " + std::to_string(s.train.steps) + " steps, " + precision_text(s.train.precision) +
         ", on " + s.train.device.name() + "\n";
  report::Table t({{"optimizer"},
                   {"lr", Align::kRight},
                   {"loss step 1", Align::kRight},
                   {"final loss", Align::kRight},
                   {"vs adamw", Align::kRight},
                   {"states", Align::kRight},
                   {"B/param", Align::kRight},
                   {"time", Align::kRight}});
  for (const OptimizerRun& r : lesson.training) {
    const double gap = final_loss_gap(lesson, r.optimizer);
    t.add_row({name_of(r.optimizer), lr_text(r.learning_rate),
               r.losses.empty() ? "-" : report::format_fixed(r.losses.front(), 4),
               report::format_fixed(final_loss(r.losses), 4),
               std::isfinite(gap) ? report::format_percent(gap, 1, true) : "-",
               report::format_bytes_or_zero(r.bytes.state_bytes),
               per_param(r.bytes.state_bytes_per_param()),
               report::format_fixed(r.seconds, 2) + " s"});
  }
  out += t.render(colour);
  out += wrap_note(
      "final loss: the mean of the last tenth of the steps (the entropy rate of the token stream, "
      "the floor no model beats, is " +
      report::format_fixed(lesson.entropy_rate_nats, 4) + " nats; ignoring the context gives " +
      report::format_fixed(lesson.unigram_entropy_nats, 4) + "). lr: AdamW's " +
      lr_text(s.rates.adamw) +
      " for the three optimizers built on its moments (8-bit AdamW, Adam-mini); Lion's " +
      lr_text(s.rates.lion) +
      ", 3x smaller, because its update is a sign (±1 per element) where AdamW's is m̂/√v̂ (about "
      "±1 only early on); Adafactor's " +
      lr_text(s.rates.adafactor) +
      " is a relative step, min(ρ, 1/√t) times the RMS of each tensor; SGD's " +
      lr_text(s.rates.sgd) + " and with momentum 0.9 a tenth of it (" +
      lr_text(s.rates.sgd_momentum) +
      "), since momentum sums the steps to 10x. states: "
      "Optimizer::state_bytes() after the last step.");

  // The bytes, measured three ways, in both precisions.
  out += "\nWhat each optimizer keeps: " + m.name + ", Ψ = " + grouped(m.parameter_count()) +
         ", after its last step\n";
  report::Table b({{"optimizer"},
                   {"precision"},
                   {"state_bytes()", Align::kRight},
                   {"allocator", Align::kRight},
                   {"estimator", Align::kRight},
                   {"master", Align::kRight},
                   {"absmax", Align::kRight},
                   {"states B/param", Align::kRight},
                   {"all B/param", Align::kRight},
                   {"= estimator"}});
  const auto add_bytes_row = [&](const OptimizerRun& r) {
    const StateBytes& x = r.bytes;
    b.add_row({name_of(r.optimizer), precision_text(r.precision),
               report::format_bytes_or_zero(x.state_bytes),
               report::format_bytes_or_zero(x.allocator_requested),
               report::format_bytes_or_zero(x.estimate.optimizer_states()),
               report::format_bytes_or_zero(x.master_bytes),
               report::format_bytes_or_zero(x.absmax_bytes), per_param(x.state_bytes_per_param()),
               per_param(x.model_state_bytes_per_param()),
               x.equals_estimate() ? "yes, to the byte" : "NO"});
  };
  for (const OptimizerRun& r : lesson.training) add_bytes_row(r);
  for (const OptimizerRun& r : lesson.compared) add_bytes_row(r);
  out += b.render(colour);
  int64_t allocated = 0, requested = 0, blocks = 0;
  for (const OptimizerRun& r : lesson.training) {
    allocated += r.bytes.allocator_allocated;
    requested += r.bytes.allocator_requested;
    blocks += r.bytes.allocator_blocks;
  }
  out += wrap_note(
      "allocator: the requested bytes of its live optimizer_state blocks (the snapshot, as "
      "torch.cuda.memory_snapshot() lists them); its optimizer_state category counts their "
      "rounded sizes, " +
      std::to_string(allocated - requested) + " B more over the " + std::to_string(blocks) +
      " state tensors of the training runs (each rounded up to 512 B). estimator: `vramlab "
      "estimate` for the same model, precision and optimizer. master: the fp32 copy of mixed "
      "precision. all: weights + gradients + states. \"yes\": state_bytes(), the allocator and "
      "the estimator agree to the byte, and so do the weights, the gradients, the master and "
      "the absmax. 8-bit AdamW keeps fp32 moments for tensors under --min-8bit-size " +
      std::to_string(s.train.eight_bit.min_8bit_size) +
      " elements (bitsandbytes' min_8bit_size): in a model this small that is many of them.");

  // 8-bit AdamW's moments against fp32's.
  for (const OptimizerRun& r : lesson.training) {
    if (r.quantization.empty()) continue;
    out += "\n8-bit AdamW (block " + std::to_string(s.train.eight_bit.block_size) +
           ") against fp32 AdamW's moments on the same gradients: ‖8-bit − fp32‖ / ‖fp32‖\n";
    report::Table q({{"step", Align::kRight},
                     {"m", Align::kRight},
                     {"m, one rounding", Align::kRight},
                     {"v", Align::kRight},
                     {"v, one rounding", Align::kRight},
                     {"update m̂/(√v̂+ε)", Align::kRight}});
    for (const QuantizationPoint& p : r.quantization)
      q.add_row({std::to_string(p.step), report::format_percent(p.m_error),
                 report::format_percent(p.m_rounding), report::format_percent(p.v_error),
                 report::format_percent(p.v_rounding), report::format_percent(p.update_error)});
    out += q.render(colour);
    out += wrap_note(
        "fp32: m and v computed beside the run in double from the very gradients the 8-bit "
        "optimizer used (AdamW's moments depend on nothing else). m, v: the dequantised 8-bit "
        "states against them. one rounding: the fp32 states quantised once with the same "
        "blocks and maps, the error of storing them in 8 bits at all; when m and v stay near it, "
        "the rounding errors of the steps do not pile up. update: the step direction the "
        "kernel applied, m̂/(√v̂+ε) from the stored states dequantised with this step's "
        "gradient mixed in (before the learning rate), against fp32 AdamW's.");
  }

  // At scale.
  for (const ModelConfig& model : s.scale_models) {
    if (lesson.scale.empty()) break;
    const OptimizerRun* any =
        find_scale(lesson, model.name, s.scale_precisions.front(), s.optimizers.front());
    if (!any) continue;
    out += "\nAt scale on meta: " + model.name + ", Ψ = " + grouped(any->bytes.parameter_count) +
           ", one training step: optimizer states (B/param)\n";
    std::vector<report::Column> columns = {{"optimizer"}};
    for (const amp::Precision p : s.scale_precisions)
      columns.push_back({precision_text(p), Align::kRight});
    columns.push_back({"mixed-bf16 all", Align::kRight});
    columns.push_back({"= estimator"});
    report::Table st(columns);
    for (const Optimizer o : s.optimizers) {
      std::vector<std::string> row = {name_of(o)};
      bool equal = true;
      const OptimizerRun* mixed = nullptr;
      for (const amp::Precision p : s.scale_precisions) {
        const OptimizerRun* r = find_scale(lesson, model.name, p, o);
        if (!r) {
          row.push_back("-");
          continue;
        }
        equal = equal && r->bytes.equals_estimate();
        if (p == amp::Precision::mixed_bf16) mixed = r;
        row.push_back(report::format_bytes_or_zero(r->bytes.state_bytes) + " (" +
                      per_param(r->bytes.state_bytes_per_param()) + ")");
      }
      row.push_back(mixed ? report::format_bytes_or_zero(mixed->bytes.parameter_bytes +
                                                         mixed->bytes.gradient_bytes +
                                                         mixed->bytes.state_bytes) +
                                " (" + per_param(mixed->bytes.model_state_bytes_per_param()) + ")"
                          : "-");
      row.push_back(equal ? "yes, to the byte" : "NO");
      st.add_row(row);
    }
    out += st.render(colour);
  }
  if (!lesson.scale.empty())
    out += wrap_note(
        "states: what the allocator holds in optimizer_state after one step on meta (the "
        "master included); bf16: pure bf16, where the states take the parameters' type; "
        "mixed-bf16 all: bf16 weights and gradients plus the fp32 master and the states (ZeRO's "
        "2Ψ + 2Ψ + KΨ). \"yes\": every precision's bytes equal the estimator's to the byte.");
  out += "\nThe seeds' claims, against these numbers\n";
  report::Table ct({{"#", Align::kRight}, {"claim"}, {"measured here"}, {"verdict"}});
  for (const ClaimRow& c : claims(lesson))
    ct.add_row({std::to_string(c.id), c.claim, c.measured, c.verdict});
  out += ct.render(colour);
  return out;
}

}  // namespace vramlab::lesson09
