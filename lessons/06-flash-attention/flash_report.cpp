// Lesson 06's runs, tables and JSON (see flash_report.h).
#include "lessons/06-flash-attention/flash_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/platform/errors.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/train/trainer.h"

namespace vramlab::lesson06 {

namespace {

using report::Align;
using report::wrap_note;

std::string scientific(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.2e", value);
  return text;
}

std::string ratio(double value) {
  return report::format_fixed(value, value < 100.0 ? 1 : 0) + "x";
}

std::string seconds_text(double s) {
  return s < 0.0 ? "-" : report::format_fixed(s, s < 1.0 ? 3 : 2) + " s";
}

// "1.2e-06 (3% of tol.)": the difference, and how close it came to the tolerance.
std::string diff_text(double diff, double scale, double tolerance) {
  const double allowed = tolerance * std::max(1.0, scale);
  return scientific(diff) + " (" + report::format_fixed(100.0 * diff / allowed, 0) + "% of tol.)";
}

memory::Device meta_device() {
  return memory::parse_device("meta");
}

TrainSettings scale_settings(const LessonSettings& s, int64_t seq) {
  TrainSettings t;
  t.model = s.scale_model;
  // RoPE models keep no position table: raising the context only lets the trainer accept T.
  t.model.max_seq = std::max(t.model.max_seq, seq);
  t.batch = 1;
  t.seq = seq;
  t.device = meta_device();
  t.seed = s.seed;
  t.steps = 1;
  return t;
}

std::string kind_name(AttentionKind kind) {
  return std::string(attention_kind_name(kind));
}

}  // namespace

double peak_ratio(const SeqRow& row) {
  return static_cast<double>(row.naive.peak_bytes) /
         static_cast<double>(std::max<int64_t>(1, row.flash.peak_bytes));
}

double extra_ratio(const SeqRow& row) {
  return static_cast<double>(row.naive.saved_bytes + row.naive.scratch_bytes) /
         static_cast<double>(std::max<int64_t>(1, row.flash.saved_bytes + row.flash.scratch_bytes));
}

const SeqRow* find_row(const Lesson& lesson, int64_t seq) {
  for (const SeqRow& row : lesson.rows)
    if (row.seq == seq) return &row;
  return nullptr;
}

Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&)) {
  validate(settings.shape);
  if (settings.seqs.empty()) throw UsageError("--seqs must name at least one length");
  for (const int64_t t : settings.seqs)
    if (t < 1) throw UsageError("--seqs: a sequence length must be >= 1, got " + std::to_string(t));
  if (settings.tiling_seq < 1)
    throw UsageError("--tiling-seq must be >= 1, got " + std::to_string(settings.tiling_seq));
  if (settings.training) {
    train::TrainOptions options;
    options.model = settings.train.model;
    options.batch = settings.train.batch;
    options.seq = settings.train.seq;
    options.plan.optimizer.learning_rate = settings.train.learning_rate;
    train::validate(options);
    if (settings.train.steps < 1)
      throw UsageError("--steps must be >= 1, got " + std::to_string(settings.train.steps));
  }
  Lesson lesson;
  lesson.settings = settings;
  const bool computes = settings.device.kind != memory::DeviceKind::meta;
  for (const int64_t t : settings.seqs) {
    SeqRow row;
    row.seq = t;
    const bool naive_computes = computes && t <= settings.naive_max_seq;
    if (progress) progress("attention core T=" + std::to_string(t) + ": flash");
    row.flash = run_attention_core(settings.device, AttentionKind::flash, t, settings.shape,
                                   settings.seed, naive_computes);
    if (progress)
      progress("attention core T=" + std::to_string(t) + ": naive" +
               (naive_computes ? "" : " (memory only, on meta)"));
    row.naive =
        run_attention_core(naive_computes ? settings.device : meta_device(), AttentionKind::naive,
                           t, settings.shape, settings.seed, naive_computes);
    if (naive_computes) {
      row.compared = true;
      row.max_abs_diff_out = max_abs_diff(row.flash.out, row.naive.out);
      row.max_abs_out = max_abs(row.naive.out);
      row.max_abs_diff_grads = std::max({max_abs_diff(row.flash.dq, row.naive.dq),
                                         max_abs_diff(row.flash.dk, row.naive.dk),
                                         max_abs_diff(row.flash.dv, row.naive.dv)});
      row.max_abs_grads =
          std::max({max_abs(row.naive.dq), max_abs(row.naive.dk), max_abs(row.naive.dv)});
      // The outputs served their comparison; the JSON and the tables need only the numbers.
      for (CoreRun* r : {&row.naive, &row.flash}) r->out = r->dq = r->dk = r->dv = {};
    }
    lesson.rows.push_back(std::move(row));
  }
  {
    CoreShape claim80{8, 16, 16, settings.shape.head_dim};
    lesson.claim80_att_bytes =
        run_attention_core(meta_device(), AttentionKind::naive, 4096, claim80, settings.seed, false)
            .saved_bytes;
  }
  if (settings.training) {
    for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::flash}) {
      if (progress)
        progress("training " + std::to_string(settings.train.steps) + " steps, --attention " +
                 kind_name(kind));
      lesson.training.push_back(run_training(settings.train, kind));
    }
  }
  if (settings.scale) {
    for (const int64_t t : settings.scale_seqs) {
      if (progress) progress(settings.scale_model.name + " on meta, T=" + std::to_string(t));
      const TrainSettings at = scale_settings(settings, t);
      lesson.scale.push_back(
          {t, run_training(at, AttentionKind::naive), run_training(at, AttentionKind::flash)});
    }
  }
  lesson.tiling = kernels::cpu::flash_tile_counts(settings.tiling_seq, settings.tiles);
  return lesson;
}

nlohmann::json to_json(const Lesson& lesson) {
  using nlohmann::json;
  const LessonSettings& s = lesson.settings;
  json j;
  j["shape"] = {{"batch", s.shape.batch},
                {"heads", s.shape.heads},
                {"kv_heads", s.shape.kv_heads},
                {"head_dim", s.shape.head_dim},
                {"dtype", "f32"},
                {"causal", true},
                {"device", s.device.name()},
                {"naive_max_seq", s.naive_max_seq},
                {"seed", s.seed}};
  j["tolerance"] = {{"out", kOutTolerance},
                    {"grads", kGradTolerance},
                    {"relative_to", "max(1, max |naive value|) of the same tensor"}};
  const auto optional_number = [](bool present, double value) {
    return present ? json(value) : json(nullptr);
  };
  j["rows"] = json::array();
  for (const SeqRow& r : lesson.rows)
    j["rows"].push_back(
        {{"seq", r.seq},
         {"naive_peak_bytes", r.naive.peak_bytes},
         {"flash_peak_bytes", r.flash.peak_bytes},
         {"naive_seconds", optional_number(r.naive.seconds >= 0.0, r.naive.seconds)},
         {"flash_seconds", optional_number(r.flash.seconds >= 0.0, r.flash.seconds)},
         {"max_abs_diff_out", optional_number(r.compared, r.max_abs_diff_out)},
         {"max_abs_diff_grads", optional_number(r.compared, r.max_abs_diff_grads)},
         {"max_abs_out", optional_number(r.compared, r.max_abs_out)},
         {"max_abs_grads", optional_number(r.compared, r.max_abs_grads)},
         {"naive_saved_bytes", r.naive.saved_bytes},
         {"flash_saved_bytes", r.flash.saved_bytes},
         {"naive_scratch_bytes", r.naive.scratch_bytes},
         {"flash_scratch_bytes", r.flash.scratch_bytes},
         {"naive_device", r.naive.device},
         {"flash_device", r.flash.device},
         {"peak_ratio", peak_ratio(r)},
         {"extra_ratio", extra_ratio(r)}});
  j["readme_ratios"] = json::array();
  for (const auto& [seq, claimed] : {std::pair<int64_t, double>{2048, 10.0}, {4096, 20.0}}) {
    const SeqRow* r = find_row(lesson, seq);
    if (!r) continue;
    j["readme_ratios"].push_back({{"seq", seq},
                                  {"readme", claimed},
                                  {"peak_ratio", peak_ratio(*r)},
                                  {"extra_ratio", extra_ratio(*r)}});
  }
  j["claim80_att_bytes"] = lesson.claim80_att_bytes;
  j["training"] = json::array();
  for (const TrainingRun& t : lesson.training)
    j["training"].push_back({{"attention", kind_name(t.attention)},
                             {"losses", t.losses},
                             {"layer_saved_bytes", t.layer_saved_bytes},
                             {"layer_saved_estimate", t.layer_saved_estimate},
                             {"layer_attention_saved_bytes", t.layer_attention_saved_bytes},
                             {"activation_peak_bytes", t.activation_peak_bytes},
                             {"seconds", t.seconds}});
  if (lesson.training.size() == 2)
    j["training_max_abs_diff_loss"] = max_loss_diff(lesson.training[0], lesson.training[1]);
  if (s.training)
    j["training_model"] = {{"name", s.train.model.name},
                           {"layers", s.train.model.layers},
                           {"hidden", s.train.model.hidden},
                           {"heads", s.train.model.heads},
                           {"vocab", s.train.model.vocab},
                           {"batch", s.train.batch},
                           {"seq", s.train.seq},
                           {"steps", s.train.steps},
                           {"device", s.train.device.name()}};
  j["scale"] = {{"model", s.scale_model.name}, {"batch", 1}, {"dtype", "f32"}};
  j["scale"]["rows"] = json::array();
  for (const ScaleRow& r : lesson.scale)
    j["scale"]["rows"].push_back({{"seq", r.seq},
                                  {"naive_layer_bytes", r.naive.layer_saved_bytes},
                                  {"naive_layer_estimate", r.naive.layer_saved_estimate},
                                  {"naive_att_bytes", r.naive.layer_attention_saved_bytes},
                                  {"flash_layer_bytes", r.flash.layer_saved_bytes},
                                  {"flash_layer_estimate", r.flash.layer_saved_estimate},
                                  {"flash_lse_bytes", r.flash.layer_attention_saved_bytes}});
  j["tiling"] = {{"seq", s.tiling_seq},
                 {"query_rows", s.tiles.query_rows},
                 {"key_rows", s.tiles.key_rows},
                 {"total", lesson.tiling.total},
                 {"full", lesson.tiling.full},
                 {"partial", lesson.tiling.partial},
                 {"skipped", lesson.tiling.skipped}};
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  std::string out;
  out += report::style::bold("Lesson 06: flash attention", colour) + "\n\n";
  out += "The attention core: causal attention forward + backward, B=" +
         std::to_string(s.shape.batch) + ", H=" + std::to_string(s.shape.heads) +
         (s.shape.kv_heads != s.shape.heads ? ", Hkv=" + std::to_string(s.shape.kv_heads) : "") +
         ", D=" + std::to_string(s.shape.head_dim) + " (a GPT-2 layer's heads: C = H·D), f32, on " +
         s.device.name() + "\n";
  report::Table t({{"T", Align::kRight},
                   {"naive peak", Align::kRight},
                   {"flash peak", Align::kRight},
                   {"ratio", Align::kRight},
                   {"att saved", Align::kRight},
                   {"lse saved", Align::kRight},
                   {"naive fwd+bwd", Align::kRight},
                   {"flash fwd+bwd", Align::kRight},
                   {"max|Δout|", Align::kRight},
                   {"max|Δdq,dk,dv|", Align::kRight}});
  bool any_meta = false;
  for (const SeqRow& r : lesson.rows) {
    any_meta = any_meta || !r.compared;
    t.add_row(
        {std::to_string(r.seq),
         report::format_bytes_or_zero(r.naive.peak_bytes) + (r.compared ? "" : "*"),
         report::format_bytes_or_zero(r.flash.peak_bytes), ratio(peak_ratio(r)),
         report::format_bytes_or_zero(r.naive.saved_bytes),
         report::format_bytes_or_zero(r.flash.saved_bytes), seconds_text(r.naive.seconds),
         seconds_text(r.flash.seconds),
         r.compared ? diff_text(r.max_abs_diff_out, r.max_abs_out, kOutTolerance) : "-",
         r.compared ? diff_text(r.max_abs_diff_grads, r.max_abs_grads, kGradTolerance) : "-"});
  }
  out += t.render(colour);
  std::string note =
      "peak: the allocator's allocated peak over forward + backward (expandable segments: the "
      "live tensors' sizes) — q, k, v, out, dout, dq, dk, dv, what the kernel saves (att (B,H,T,T) "
      "or lse (B,H,T)) and the backward's scratch (dpreatt (B,H,T,T) or delta (B,H,T)). "
      "fwd+bwd: wall time of the two kernel calls on this machine's CPU. Δ: flash − naive on the "
      "same N(0,1) inputs; tol. = " +
      scientific(kOutTolerance) + " (out) and " + scientific(kGradTolerance) +
      " (gradients) times max(1, max |naive|).";
  if (any_meta)
    note += " *: naive attention not computed at this T (above --naive-max-seq " +
            std::to_string(s.naive_max_seq) +
            "): its bytes come from the same calls on meta, which allocates the same tensors "
            "without running a kernel.";
  out += wrap_note(note);

  out +=
      "\nAgainst the FlashAttention README (\"10X memory savings at sequence length 2K, and "
      "20X at 4K\")\n";
  report::Table rt({{"T", Align::kRight},
                    {"README", Align::kRight},
                    {"ours: whole op", Align::kRight},
                    {"ours: beyond q,k,v,out,grads", Align::kRight}});
  for (const auto& [seq, claimed] : {std::pair<int64_t, double>{2048, 10.0}, {4096, 20.0}}) {
    if (const SeqRow* r = find_row(lesson, seq))
      rt.add_row(
          {std::to_string(seq), ratio(claimed), ratio(peak_ratio(*r)), ratio(extra_ratio(*r))});
  }
  out += rt.render(colour);
  out += wrap_note(
      "whole op: every tensor the op holds at its peak, as torch.cuda.max_memory_allocated() "
      "around one attention call would show; it grows about ∝ T once T ≫ D. beyond: only what "
      "the kernel adds to its inputs, outputs and their gradients — (B,H,T,T) twice against "
      "(B,H,T) twice — which is exactly T. The README's benchmark is fp16 on a GPU with other "
      "head sizes and batch, so only the trend, not the digit, carries over.");

  if (lesson.training.size() == 2) {
    const TrainingRun& naive = lesson.training[0];
    const TrainingRun& flash = lesson.training[1];
    const TrainSettings& tr = s.train;
    out += "\nTraining " + tr.model.name + " (L=" + std::to_string(tr.model.layers) +
           ", C=" + std::to_string(tr.model.hidden) + ", H=" + std::to_string(tr.model.heads) +
           ", V=" + std::to_string(tr.model.vocab) + "), B=" + std::to_string(tr.batch) +
           ", T=" + std::to_string(tr.seq) + ", " + std::to_string(tr.steps) + " steps, fp32, on " +
           tr.device.name() + "\n";
    report::Table tt({{"--attention"},
                      {"loss step 1", Align::kRight},
                      {"loss last step", Align::kRight},
                      {"block 0 saved", Align::kRight},
                      {"estimator", Align::kRight},
                      {"of which att/lse", Align::kRight},
                      {"time", Align::kRight}});
    for (const TrainingRun* r : {&naive, &flash})
      tt.add_row({kind_name(r->attention), report::format_fixed(r->losses.front(), 6),
                  report::format_fixed(r->losses.back(), 6),
                  report::format_bytes_or_zero(r->layer_saved_bytes) +
                      (r->layer_saved_bytes == r->layer_saved_estimate ? " =" : " ≠"),
                  report::format_bytes_or_zero(r->layer_saved_estimate),
                  report::format_bytes_or_zero(r->layer_attention_saved_bytes),
                  seconds_text(r->seconds)});
    out += tt.render(colour);
    out += wrap_note("max |Δloss| over the " + std::to_string(tr.steps) +
                     " steps: " + scientific(max_loss_diff(naive, flash)) +
                     ". block 0 saved: what the saved-activation store held for block 0 after "
                     "the forward (requested bytes), \"=\" when it equals "
                     "estimate::runtime_activation_bytes_per_layer to the byte.");
  }

  if (!lesson.scale.empty()) {
    out += "\nAt scale on meta: " + s.scale_model.name +
           ", B=1, fp32, one training step: the bytes one layer saves\n";
    report::Table st({{"T", Align::kRight},
                      {"naive layer", Align::kRight},
                      {"att", Align::kRight},
                      {"flash layer", Align::kRight},
                      {"lse", Align::kRight},
                      {"naive / flash", Align::kRight},
                      {"= estimator"}});
    for (const ScaleRow& r : lesson.scale) {
      const bool same = r.naive.layer_saved_bytes == r.naive.layer_saved_estimate &&
                        r.flash.layer_saved_bytes == r.flash.layer_saved_estimate;
      st.add_row({std::to_string(r.seq), report::format_bytes_or_zero(r.naive.layer_saved_bytes),
                  report::format_bytes_or_zero(r.naive.layer_attention_saved_bytes),
                  report::format_bytes_or_zero(r.flash.layer_saved_bytes),
                  report::format_bytes_or_zero(r.flash.layer_attention_saved_bytes),
                  ratio(static_cast<double>(r.naive.layer_saved_bytes) /
                        static_cast<double>(std::max<int64_t>(1, r.flash.layer_saved_bytes))),
                  same ? "yes, to the byte" : "NO"});
    }
    out += st.render(colour);
    out += wrap_note(
        "The naive layer's backward also allocates a (B,H,T,T) score gradient of the att's size "
        "as a temporary; flash replaces it by delta (B,H,T). The model's context is raised to T "
        "where it is shorter (RoPE keeps no position table).");
  }

  out += "\nTiling of one (batch, head) at T=" + std::to_string(s.tiling_seq) + " with " +
         std::to_string(s.tiles.query_rows) + "x" + std::to_string(s.tiles.key_rows) +
         " tiles: " + std::to_string(lesson.tiling.total) + " tiles, " +
         std::to_string(lesson.tiling.full) + " computed in full, " +
         std::to_string(lesson.tiling.partial) + " partial (on the diagonal, masked), " +
         std::to_string(lesson.tiling.skipped) + " skipped (above it)\n";
  return out;
}

}  // namespace vramlab::lesson06
