// Lesson 05's runs, tables, JSON and figures (see offload_report.h).
#include "lessons/05-offload/offload_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include <fmt/core.h>

#include "common/estimate/zero_infinity.h"
#include "common/platform/errors.h"
#include "common/profile/chrome_trace.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/report/trace_html.h"
#include "common/report/typed_table.h"

namespace vramlab::lesson05 {

namespace {

using nlohmann::json;
using report::TypedColumns;
using report::Unit;
using report::wrap_note;

std::string precision_text(amp::Precision p) {
  return std::string(amp::precision_name(p));
}

std::string link_text(const memory::Device& d) {
  const double gbps = d.spec.host_to_device_bytes_per_s / 1e9;
  return d.spec.host_link_name.empty()
             ? fmt::format("{:.1f} GB/s", gbps)
             : fmt::format("{}, {:.1f} GB/s", d.spec.host_link_name, gbps);
}

// What a run held and moved: the rows of the small model's table and of the scale table, and
// (with its JSON keys) the records of "runs" and "scale".
const TypedColumns<RunResult>& memory_columns() {
  using R = RunResult;
  static const TypedColumns<RunResult> columns = {
      {{"label", "run"}, [](const R& r) { return r.label; }},
      {{"device", ""}, [](const R& r) { return r.device_name; }},
      {{"offload", ""},
       [](const R& r) { return std::string(plan::offload_name(r.options.plan.offload)); }},
      {{"overlap", ""},
       [](const R& r) { return r.offload ? report::Value(r.overlap) : report::Value(); }},
      {{"fits", ""}, [](const R& r) { return r.fits; }},
      {{"device_parameter_bytes", "params", Unit::bytes},
       [](const R& r) { return r.fits ? report::Value(r.device.parameters) : report::Value(); }},
      {{"device_gradient_bytes", "grads", Unit::bytes},
       [](const R& r) { return r.fits ? report::Value(r.device.gradients) : report::Value(); }},
      {{"device_optimizer_state_bytes", "states", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.device.optimizer_states) : report::Value();
       }},
      {{"device_peak_bytes", "device peak", Unit::bytes},
       [](const R& r) { return r.fits ? report::Value(r.device_peak_bytes) : report::Value(); }},
      {{"host_optimizer_state_bytes", "host: states", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.host.optimizer_states) : report::Value();
       }},
      {{"host_staged_bytes", "grads+params", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.host.gradients + r.host.parameters) : report::Value();
       }},
      {{"pinned_model_state_bytes", "of host pinned", Unit::bytes},
       [](const R& r) {
         return r.fits && r.pinned_model_state_blocks > 0
                    ? report::Value(r.pinned_model_state_blocks)
                    : report::Value();
       }},
      {{"nvme_file_bytes", "NVMe", Unit::bytes},
       [](const R& r) {
         return r.fits && r.nvme_bytes > 0 ? report::Value(r.nvme_bytes) : report::Value();
       }},
      {{"equals_estimator", "= estimator"},
       [](const R& r) { return r.fits ? report::Value(r.equals_estimate()) : report::Value(); }},
      {{"out_of_memory", ""}, [](const R& r) { return r.out_of_memory; }},
  };
  return columns;
}

// A step on the clock: the small model's second table, the sweep's records.
const TypedColumns<RunResult>& clock_columns() {
  using R = RunResult;
  static const TypedColumns<RunResult> columns = {
      {{"", "run"}, [](const R& r) { return r.label; }},
      {{"device_to_host_bytes", "to host", Unit::bytes},
       [](const R& r) { return r.device_to_host_bytes; }},
      {{"host_to_device_bytes", "to device", Unit::bytes},
       [](const R& r) { return r.host_to_device_bytes; }},
      {{"copy_seconds", "copies", Unit::seconds, 4}, [](const R& r) { return r.copy_seconds; }},
      {{"compute_seconds", "compute", Unit::seconds, 4},
       [](const R& r) { return r.compute_seconds(); }},
      {{"host_update_seconds", "host update", Unit::seconds, 4},
       [](const R& r) { return r.host_update_seconds; }},
      {{"nvme_seconds", "NVMe", Unit::seconds, 4},
       [](const R& r) {
         return r.nvme_bytes > 0 ? report::Value(r.nvme_seconds) : report::Value();
       }},
      {{"exposed_copy_seconds", "exposed", Unit::seconds, 4},
       [](const R& r) { return r.exposed_copy_seconds; }},
      {{"step_seconds", "step", Unit::seconds, 4}, [](const R& r) { return r.step_seconds; }},
  };
  return columns;
}

// compute / (compute + exposed copies): the fraction of the step the link did not take, leaving
// the host's update aside as ZeRO-Infinity's model does.
double link_efficiency(const RunResult& r) {
  const double compute = r.compute_seconds();
  return compute / (compute + r.exposed_copy_seconds);
}

const TypedColumns<SweepPoint>& sweep_columns() {
  using P = SweepPoint;
  static const TypedColumns<SweepPoint> columns = {
      {{"link_gbps", "link GB/s", Unit::general}, [](const P& p) { return p.link_gbps; }},
      {{"copy_seconds", "copies", Unit::seconds, 3}, [](const P& p) { return p.on.copy_seconds; }},
      {{"compute_seconds", "compute", Unit::seconds, 3},
       [](const P& p) { return p.on.compute_seconds(); }},
      {{"host_update_seconds", "host update", Unit::seconds, 3},
       [](const P& p) { return p.on.host_update_seconds; }},
      {{"exposed_on_seconds", "exposed on", Unit::seconds, 3},
       [](const P& p) { return p.on.exposed_copy_seconds; }},
      {{"exposed_off_seconds", "exposed off", Unit::seconds, 3},
       [](const P& p) { return p.off.exposed_copy_seconds; }},
      {{"step_on_seconds", "step on", Unit::seconds, 3},
       [](const P& p) { return p.on.step_seconds; }},
      {{"step_off_seconds", "step off", Unit::seconds, 3},
       [](const P& p) { return p.off.step_seconds; }},
      {{"step_tiled_seconds", "step tiled", Unit::seconds, 3},
       [](const P& p) { return p.tiled.step_seconds; }},
      {{"step_delayed_seconds", "step delayed", Unit::seconds, 3},
       [](const P& p) { return p.delayed_on.step_seconds; }},
      {{"efficiency_on", "efficiency on", Unit::percent, 1},
       [](const P& p) { return link_efficiency(p.on); }},
      {{"efficiency_off", "off", Unit::percent, 1},
       [](const P& p) { return link_efficiency(p.off); }},
      {{"efficiency_model", "ZeRO-Infinity model", Unit::percent, 1},
       [](const P& p) { return p.model_efficiency; }},
  };
  return columns;
}

// Of the last step's copies (every stream but the compute stream), the seconds that ran while the
// compute stream was busy: the copy time the overlap hid, read off the lanes of the trace.
double hidden_copy_seconds(const RunResult& r) {
  std::vector<std::pair<double, double>> compute;  // the compute stream's busy intervals, in order
  for (const stream::Span& span : r.last_step_spans)
    if (span.stream == stream::Clock::compute_stream()) {
      if (!compute.empty() && span.start <= compute.back().second)
        compute.back().second = std::max(compute.back().second, span.end);
      else
        compute.emplace_back(span.start, span.end);
    }
  double hidden = 0.0;
  for (const stream::Span& span : r.last_step_spans) {
    if (span.stream == stream::Clock::compute_stream()) continue;
    for (const auto& [start, end] : compute)
      hidden += std::max(0.0, std::min(end, span.end) - std::max(start, span.start));
  }
  return hidden;
}

const TypedColumns<RunResult>& timeline_columns() {
  using R = RunResult;
  static const TypedColumns<RunResult> columns = {
      {{"label", "run"}, [](const R& r) { return r.label; }},
      {{"copy_seconds", "copies", Unit::seconds, 3},
       [](const R& r) {
         // The copy streams' work (the batch's own copy runs on the compute stream).
         double seconds = 0.0;
         for (const stream::Span& span : r.last_step_spans)
           if (span.stream != stream::Clock::compute_stream()) seconds += span.end - span.start;
         return seconds;
       }},
      {{"hidden_copy_seconds", "beside compute", Unit::seconds, 3},
       [](const R& r) { return hidden_copy_seconds(r); }},
      {{"exposed_copy_seconds", "exposed", Unit::seconds, 3},
       [](const R& r) { return r.exposed_copy_seconds; }},
      {{"host_update_seconds", "host update", Unit::seconds, 3},
       [](const R& r) { return r.host_update_seconds; }},
      {{"step_seconds", "step", Unit::seconds, 3}, [](const R& r) { return r.step_seconds; }},
  };
  return columns;
}

// The record of one run: bytes by place, bytes moved by link, the step's times.
json run_record(const RunResult& r, const RunResult* no_overlap) {
  json j = report::record_json(memory_columns(), r);
  j.update(report::record_json(clock_columns(), r));
  // pinned: the pool's peak in blocks (the batch's staging, offloaded activations, and the
  // optimizer's pinned buffers); pageable: the rest of the host's model states.
  j["host_bytes"] = {{"pinned", r.pinned_peak_bytes},
                     {"pinned_model_states", r.pinned_model_state_blocks},
                     {"pageable", r.host.total() - r.pinned_model_state_requested},
                     // The RAM the model states take: the pageable bytes and the pinned blocks.
                     {"model_states_ram", r.host.total() - r.pinned_model_state_requested +
                                              r.pinned_model_state_blocks}};
  j["nvme_bytes"] = r.nvme_bytes;
  j["bytes_moved"] = {{"h2d", r.host_to_device_bytes},
                      {"d2h", r.device_to_host_bytes},
                      {"nvme_read", r.nvme_read_bytes},
                      {"nvme_write", r.nvme_write_bytes}};
  if (r.nvme_read_bytes_per_s > 0.0)
    j["nvme_measured_gbps"] = {{"read", r.nvme_read_bytes_per_s / 1e9},
                               {"write", r.nvme_write_bytes_per_s / 1e9}};
  j["step_seconds_no_overlap"] = no_overlap ? json(no_overlap->step_seconds) : json(nullptr);
  j["estimate"] = {
      {"device_parameter_bytes", r.estimate.parameters.bytes},
      {"device_gradient_bytes", r.estimate.gradients.bytes},
      {"device_optimizer_state_bytes", r.estimate.optimizer_states.bytes},
      {"host_optimizer_state_bytes", r.estimate.host_optimizer_state_bytes},
      {"host_gradient_bytes", r.estimate.host_gradient_bytes},
      {"host_parameter_bytes", r.estimate.host_parameter_bytes},
      {"nvme_bytes", r.estimate.nvme_optimizer_state_bytes + r.estimate.nvme_parameter_bytes},
      {"host_pinned_bytes", r.estimate.host_pinned_bytes}};
  j["losses"] = r.losses;
  return j;
}

train::TrainOptions options_for(const ModelConfig& model, int64_t batch, int64_t seq,
                                amp::Precision precision, uint64_t seed) {
  train::TrainOptions o;
  o.model = model;
  o.batch = batch;
  o.seq = seq;
  o.seed = seed;
  o.plan.amp.precision = precision;
  return o;
}

RunSpec offloaded(RunSpec spec, bool overlap, std::string label) {
  spec.label = std::move(label);
  spec.train.plan.offload.optimizer = true;
  spec.train.plan.offload.overlap = overlap;
  return spec;
}

// \p spec (the optimizer offloaded) under ZeRO-3 with the parameters on the host too, each
// block fetched one ahead (--zero 3 --offload both --prefetch).
RunSpec infinity(RunSpec spec, std::string label) {
  spec.label = std::move(label);
  spec.train.plan.parallel.zero = plan::ZeroStage::parameters;
  spec.train.plan.parallel.prefetch = true;
  spec.train.plan.offload.parameters = true;
  return spec;
}

void say(void (*progress)(const std::string&), const std::string& text) {
  if (progress) progress(text);
}

const ScaleRun* find_scale(const Lesson& lesson, std::string_view id) {
  for (const ScaleRun& s : lesson.scale)
    if (s.id == id) return &s;
  return nullptr;
}

// The larger batch of the sweep model's runs with the states on NVMe.
constexpr int64_t kNvmeWideBatch = 8;

// The sizes the scale runs use: the tutorials' 13B on one 32 GB device (the ZeRO-Offload paper's
// V100) and on a 24 GB one, and 7B's cost on an A100 80GB.
void run_scale(const LessonSettings& s, Lesson& lesson, void (*progress)(const std::string&)) {
  // Llama 2 13B in mixed fp16 (the paper's V100 has no bf16), the forward recomputed, B=1, T=1024.
  const ModelConfig l13 = model_config_by_name("llama2-13b");
  RunSpec big{"llama2-13b, no offload",
              options_for(l13, 1, 1024, amp::Precision::mixed_fp16, s.seed),
              memory::parse_device("meta:32GiB"), 2};
  big.train.plan.recompute = recompute::parse_recompute_spec("full");
  big.train.plan.parallel.zero = plan::ZeroStage::gradients;
  say(progress, "at scale: llama2-13b on meta:32GiB and meta:rtx4090-24g");
  lesson.scale.push_back({"13b-none-32gib", l13.name, run(big)});
  lesson.scale.push_back(
      {"13b-offload-32gib", l13.name, run(offloaded(big, true, "llama2-13b, ZeRO-Offload"))});
  RunSpec small_device = offloaded(big, true, "llama2-13b, ZeRO-Offload");
  small_device.device = memory::parse_device("meta:rtx4090-24g");
  lesson.scale.push_back({"13b-offload-24gb", l13.name, run(small_device)});
  lesson.scale.push_back(
      {"13b-infinity-24gb", l13.name, run(infinity(small_device, "llama2-13b, ZeRO-Infinity"))});

  // 7B on the sweep's device at its own link: what offload saves and what it costs. Without
  // offload it needs more than 80 GB, so that run gets the same device with room for it: the same
  // kernels and link, a capacity no A100 has.
  RunSpec seven{
      s.sweep_model.name + ", no offload",
      options_for(s.sweep_model, s.sweep_batch, s.sweep_seq, amp::Precision::mixed_bf16, s.seed),
      s.sweep_device, 2};
  seven.train.plan.recompute = recompute::parse_recompute_spec("full");
  seven.train.plan.parallel.zero = plan::ZeroStage::gradients;
  seven.device.spec.capacity_bytes = 4 * seven.device.spec.capacity_bytes;
  say(progress, "at scale: " + s.sweep_model.name + " on " + s.sweep_device.name());
  lesson.scale.push_back({"sweep-model-none-roomy", s.sweep_model.name, run(seven)});
  seven.device = s.sweep_device;
  lesson.scale.push_back({"sweep-model-offload", s.sweep_model.name,
                          run(offloaded(seven, true, s.sweep_model.name + ", ZeRO-Offload"))});
  lesson.scale.push_back(
      {"sweep-model-infinity", s.sweep_model.name,
       run(infinity(offloaded(seven, true, ""), s.sweep_model.name + ", ZeRO-Infinity"))});
  // The states on NVMe: the first step reads nothing and its writes run into the second's, so
  // the third is the one measured.
  RunSpec drive = on_nvme(seven, s.sweep_model.name + ", ZeRO-Infinity, states on NVMe");
  drive.steps = 3;
  lesson.scale.push_back({"sweep-model-nvme", s.sweep_model.name, run(drive)});
  // The drive's time per step is fixed by Ψ; the compute grows with the tokens: the same two
  // runs at a larger batch.
  RunSpec wide = seven;
  wide.train.batch = kNvmeWideBatch;
  wide.device.spec.capacity_bytes = 4 * s.sweep_device.spec.capacity_bytes;
  wide.label = fmt::format("{}, no offload, B={}", s.sweep_model.name, kNvmeWideBatch);
  lesson.scale.push_back({"sweep-model-none-roomy-wide", s.sweep_model.name, run(wide)});
  RunSpec wide_drive = drive;
  wide_drive.train.batch = kNvmeWideBatch;
  wide_drive.label = fmt::format("{}, B={}", drive.label, kNvmeWideBatch);
  lesson.scale.push_back({"sweep-model-nvme-wide", s.sweep_model.name, run(wide_drive)});

  // 70B on one device of the sweep's kind, as ZeRO-Infinity's paper puts it: the parameters on
  // the host, the optimizer's states in host memory or on NVMe. What the host must hold.
  const ModelConfig l70 = model_config_by_name("llama2-70b");
  RunSpec seventy{"", options_for(l70, 1, s.sweep_seq, amp::Precision::mixed_bf16, s.seed),
                  s.sweep_device, 2};
  seventy.train.plan.recompute = recompute::parse_recompute_spec("full");
  say(progress, "at scale: llama2-70b on " + s.sweep_device.name());
  lesson.scale.push_back(
      {"70b-infinity", l70.name,
       run(infinity(offloaded(seventy, true, ""), "llama2-70b, ZeRO-Infinity"))});
  RunSpec seventy_drive = on_nvme(seventy, "llama2-70b, ZeRO-Infinity, states on NVMe");
  seventy_drive.steps = 3;
  lesson.scale.push_back({"70b-nvme", l70.name, run(seventy_drive)});
  // And the parameters too: the host keeps one unit's 16-bit shard instead of all 140 GB.
  RunSpec all_drive = seventy_drive;
  all_drive.train.plan.offload.param_device = plan::OffloadDevice::nvme;
  all_drive.label = "llama2-70b, ZeRO-Infinity, states and parameters on NVMe";
  lesson.scale.push_back({"70b-all-nvme", l70.name, run(all_drive)});
}

RunSpec delayed(RunSpec spec, int64_t first, std::string label) {
  spec.label = std::move(label);
  spec.train.plan.offload.delay_update_from = first;
  return spec;
}

// The delayed parameter update: the small model's loss curve with and without it, and its time
// on the sweep's model (delayed from step 2, so that the last of 4 steps is a steady one).
void run_delayed_update(const LessonSettings& s, const RunSpec& small, const RunSpec& sweep,
                        DelayedUpdate& dpu, void (*progress)(const std::string&)) {
  say(progress,
      fmt::format("the delayed parameter update: {} for {} steps", s.model.name, s.dpu_steps));
  RunSpec curve = offloaded(small, true, "updated at once");
  curve.steps = s.dpu_steps;
  dpu.at_once = run(curve);
  for (const int64_t first : s.dpu_from)
    dpu.delayed.push_back(run(delayed(curve, first, fmt::format("delayed from step {}", first))));
  say(progress, fmt::format("the delayed parameter update: {} at {:g} GB/s", s.sweep_model.name,
                            s.dpu_link_gbps));
  RunSpec timed = offloaded(sweep, true, s.sweep_model.name + ", updated at once");
  timed.steps = 4;
  timed.device.spec.host_to_device_bytes_per_s = s.dpu_link_gbps * 1e9;
  timed.device.spec.device_to_host_bytes_per_s = s.dpu_link_gbps * 1e9;
  dpu.time_at_once = run(timed);
  dpu.time_delayed = run(delayed(timed, 2, s.sweep_model.name + ", delayed"));
}

// Activation offload: the small model kept and offloaded, then the sweep's model at a batch whose
// activations do not fit beside its parameters, kept, recomputed, offloaded, and both (the
// checkpoints offloaded), its optimizer offloaded under ZeRO-2 as ZeRO-Offload runs it.
void run_activation_offload(const LessonSettings& s, const RunSpec& small,
                            ActivationOffload& activations, void (*progress)(const std::string&)) {
  say(progress, "activation offload: " + s.model.name + " on " + s.device.name());
  RunSpec kept = small;
  kept.label = "activations kept";
  activations.small.push_back(run(kept));
  RunSpec moved = small;
  moved.label = "activations offloaded";
  moved.train.plan.activations.offload = true;
  activations.small.push_back(run(moved));

  say(progress, fmt::format("activation offload: {} at B={}, {:g} GB/s", s.sweep_model.name,
                            s.activation_batch, s.activation_link_gbps));
  RunSpec large{"",
                options_for(s.sweep_model, s.activation_batch, s.sweep_seq,
                            amp::Precision::mixed_bf16, s.seed),
                s.sweep_device, 2};
  large.train.plan.attention = plan::AttentionKind::flash;
  large.train.plan.parallel.zero = plan::ZeroStage::gradients;
  large.train.plan.offload.optimizer = true;
  large.device.spec.host_to_device_bytes_per_s = s.activation_link_gbps * 1e9;
  large.device.spec.device_to_host_bytes_per_s = s.activation_link_gbps * 1e9;
  for (const bool recomputed : {false, true}) {
    for (const bool offloaded_activations : {false, true}) {
      RunSpec r = large;
      r.train.plan.recompute = recompute::parse_recompute_spec(recomputed ? "full" : "none");
      r.train.plan.activations.offload = offloaded_activations;
      r.label = std::string(recomputed ? "recomputed" : "kept") +
                (offloaded_activations ? ", offloaded" : "");
      activations.large.push_back(run(r));
    }
  }
}

// Activation offload's table: where the saved activations were and what moving them cost.
const TypedColumns<RunResult>& activation_columns() {
  using R = RunResult;
  static const TypedColumns<RunResult> columns = {
      {{"label", "activations"}, [](const R& r) { return r.label; }},
      {{"fits", ""}, [](const R& r) { return r.fits; }},
      {{"device_peak_bytes", "device peak", Unit::bytes},
       [](const R& r) { return r.fits ? report::Value(r.device_peak_bytes) : report::Value(); }},
      {{"activation_peak_bytes", "saved: peak", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.activation_peak_bytes) : report::Value();
       }},
      {{"activation_bytes_after_forward", "after fwd", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.activation_bytes_after_forward) : report::Value();
       }},
      {{"pinned_activation_bytes", "pinned host", Unit::bytes},
       [](const R& r) {
         return r.fits ? report::Value(r.pinned_activation_bytes) : report::Value();
       }},
      {{"equals_estimator", "= estimator"},
       [](const R& r) {
         return r.fits ? report::Value(r.activations_equal_estimate()) : report::Value();
       }},
      {{"device_to_host_bytes", "to host", Unit::bytes},
       [](const R& r) { return r.fits ? report::Value(r.device_to_host_bytes) : report::Value(); }},
      {{"compute_seconds", "compute", Unit::seconds, 3},
       [](const R& r) { return r.fits ? report::Value(r.compute_seconds()) : report::Value(); }},
      {{"exposed_copy_seconds", "exposed", Unit::seconds, 3},
       [](const R& r) { return r.fits ? report::Value(r.exposed_copy_seconds) : report::Value(); }},
      {{"step_seconds", "step", Unit::seconds, 3},
       [](const R& r) { return r.fits ? report::Value(r.step_seconds) : report::Value(); }},
  };
  return columns;
}

// The loss table's rows: the first step and every second one (the heading says so); the JSON
// and the figure have every step.
constexpr int64_t kLossRowStride = 2;

// The delayed update's time: the last step of each run.
const TypedColumns<RunResult>& dpu_time_columns() {
  using R = RunResult;
  static const TypedColumns<RunResult> columns = {
      {{"label", "run"}, [](const R& r) { return r.label; }},
      {{"compute_seconds", "compute", Unit::seconds, 3},
       [](const R& r) { return r.compute_seconds(); }},
      {{"host_update_seconds", "host update", Unit::seconds, 3},
       [](const R& r) { return r.host_update_seconds; }},
      {{"delayed_update_seconds", "beside next step", Unit::seconds, 3},
       [](const R& r) { return r.delayed_update_seconds; }},
      {{"exposed_copy_seconds", "exposed", Unit::seconds, 3},
       [](const R& r) { return r.exposed_copy_seconds; }},
      {{"step_seconds", "step", Unit::seconds, 3}, [](const R& r) { return r.step_seconds; }},
  };
  return columns;
}

// The loss curves side by side, one row per step: at once, then each delayed run.
struct LossRow {
  int64_t step = 0;
  std::vector<double> losses;  // (1 + delayed runs) nats
};
TypedColumns<LossRow> dpu_loss_columns(const LessonSettings& s) {
  TypedColumns<LossRow> columns = {
      {{"step", "step", Unit::count}, [](const LossRow& r) { return r.step; }},
      {{"loss_at_once", "loss, at once", Unit::general, 4},
       [](const LossRow& r) { return r.losses.at(0); }}};
  for (size_t i = 0; i < s.dpu_from.size(); ++i)
    columns.push_back({{fmt::format("loss_delayed_from_{}", s.dpu_from[i]),
                        fmt::format("delayed from {}", s.dpu_from[i]), Unit::general, 4},
                       [i](const LossRow& r) { return r.losses.at(i + 1); }});
  return columns;
}
std::vector<LossRow> loss_rows(const DelayedUpdate& dpu) {
  std::vector<LossRow> rows;
  for (size_t step = 0; step < dpu.at_once.losses.size(); ++step) {
    LossRow row{static_cast<int64_t>(step) + 1, {dpu.at_once.losses[step]}};
    for (const RunResult& r : dpu.delayed) row.losses.push_back(r.losses.at(step));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

Lesson run_lesson(const LessonSettings& s, void (*progress)(const std::string&)) {
  if (s.steps < 2) throw UsageError("--steps must be >= 2, got " + std::to_string(s.steps));
  if (s.dpu_from.empty()) throw UsageError("--dpu-from must name at least one step");
  for (const int64_t first : s.dpu_from)
    if (first < 1 || first >= s.dpu_steps)
      throw UsageError(fmt::format(
          "--dpu-from {} must be >= 1 and below --dpu-steps {}, so that some step is delayed",
          first, s.dpu_steps));
  if (s.links_gbps.empty()) throw UsageError("--links must name at least one bandwidth");
  Lesson lesson;
  lesson.settings = s;

  say(progress, "ZeRO-Offload on " + s.device.name() + ": " + s.model.name);
  const RunSpec none{"no offload", options_for(s.model, s.batch, s.seq, s.precision, s.seed),
                     s.device, s.steps};
  lesson.runs.push_back(run(none));
  lesson.runs.push_back(run(offloaded(none, true, "ZeRO-Offload, overlap on")));
  lesson.runs.push_back(run(offloaded(none, false, "ZeRO-Offload, overlap off")));
  RunSpec drive = on_nvme(none, "ZeRO-Infinity, states on NVMe");
  drive.train.nvme.files.path = s.nvme_path;
  lesson.runs.push_back(run(drive));

  RunSpec sweep{
      "",
      options_for(s.sweep_model, s.sweep_batch, s.sweep_seq, amp::Precision::mixed_bf16, s.seed),
      s.sweep_device, 2};
  sweep.train.plan.recompute = recompute::parse_recompute_spec("full");
  const double ait =
      estimate::zero_infinity::offloaded_optimizer_intensity(s.sweep_batch, s.sweep_seq, true);
  for (const double gbps : s.links_gbps) {
    say(progress, fmt::format("the link at {:g} GB/s: {} on {}", gbps, s.sweep_model.name,
                              s.sweep_device.name()));
    RunSpec at = sweep;
    at.device.spec.host_to_device_bytes_per_s = gbps * 1e9;
    at.device.spec.device_to_host_bytes_per_s = gbps * 1e9;
    SweepPoint p;
    p.link_gbps = gbps;
    p.on = run(offloaded(at, true, "overlap on"));
    p.off = run(offloaded(at, false, "overlap off"));
    RunSpec late = delayed(at, 2, "");
    late.steps = 3;
    p.delayed_on = run(offloaded(late, true, "delayed, overlap on"));
    p.delayed_off = run(offloaded(late, false, "delayed, overlap off"));
    RunSpec tiles = offloaded(at, true, "tiled copy back");
    tiles.train.plan.offload.tiled_copy_back = true;
    p.tiled = run(tiles);
    p.model_efficiency = estimate::zero_infinity::efficiency(
        ait, gbps * 1e9, s.sweep_device.spec.peak_flops.bf16_tensor);
    lesson.sweep.push_back(std::move(p));
  }
  say(progress, fmt::format("the timeline at {:g} GB/s", s.timeline_link_gbps));
  RunSpec traced = sweep;
  traced.keep_spans = true;
  traced.device.spec.host_to_device_bytes_per_s = s.timeline_link_gbps * 1e9;
  traced.device.spec.device_to_host_bytes_per_s = s.timeline_link_gbps * 1e9;
  lesson.timeline.link_gbps = s.timeline_link_gbps;
  lesson.timeline.on = run(offloaded(traced, true, "overlap on"));
  lesson.timeline.off = run(offloaded(traced, false, "overlap off"));
  lesson.timeline_fetched = run(infinity(offloaded(traced, true, ""), "ZeRO-Infinity, prefetched"));
  if (s.scale) run_scale(s, lesson, progress);
  run_delayed_update(s, none, sweep, lesson.dpu, progress);
  run_activation_offload(s, none, lesson.activations, progress);
  return lesson;
}

namespace {

// The timeline's steps: overlap on, overlap off, and ZeRO-Infinity when it ran.
std::vector<RunResult> timeline_rows(const Lesson& lesson) {
  std::vector<RunResult> rows{lesson.timeline.on, lesson.timeline.off};
  if (!lesson.timeline_fetched.last_step_spans.empty()) rows.push_back(lesson.timeline_fetched);
  return rows;
}

}  // namespace

json to_json(const Lesson& lesson) {
  const LessonSettings& s = lesson.settings;
  json j;
  j["lesson"] = "05";
  const ModelConfig& m = s.model;
  j["model"] = {{"name", m.name},
                {"parameter_count", m.parameter_count()},
                {"batch", s.batch},
                {"seq", s.seq},
                {"steps", s.steps},
                {"precision", precision_text(s.precision)},
                {"device", s.device.name()},
                {"link_gbps", s.device.spec.host_to_device_bytes_per_s / 1e9},
                {"seed", s.seed}};
  j["runs"] = json::array();
  for (const RunResult& r : lesson.runs) {
    const RunResult* off = nullptr;
    if (r.offload && r.overlap)
      for (const RunResult& o : lesson.runs)
        if (o.offload && !o.overlap) off = &o;
    json record = run_record(r, off);
    record["losses_equal_no_offload"] = r.losses == lesson.runs.front().losses;
    j["runs"].push_back(std::move(record));
  }
  j["sweep"] = {{"model", s.sweep_model.name},
                {"parameter_count", s.sweep_model.parameter_count()},
                {"device", s.sweep_device.name()},
                {"batch", s.sweep_batch},
                {"seq", s.sweep_seq},
                {"peak_flops", s.sweep_device.spec.peak_flops.bf16_tensor},
                {"intensity_flops_per_byte", estimate::zero_infinity::offloaded_optimizer_intensity(
                                                 s.sweep_batch, s.sweep_seq, true)},
                {"points", report::table_of(sweep_columns(), lesson.sweep).json()}};
  j["timeline"] = {{"link_gbps", lesson.timeline.link_gbps},
                   {"steps", report::table_of(timeline_columns(), timeline_rows(lesson)).json()}};
  j["scale"] = json::array();
  for (const ScaleRun& r : lesson.scale) {
    json record = run_record(r.run, nullptr);
    record["id"] = r.id;
    record["model"] = r.model;
    j["scale"].push_back(std::move(record));
  }
  const DelayedUpdate& dpu = lesson.dpu;
  j["delayed_update"] = {
      {"first_delayed_steps", s.dpu_from},
      {"losses", report::table_of(dpu_loss_columns(s), loss_rows(dpu)).json()},
      {"link_gbps", s.dpu_link_gbps},
      {"time", report::table_of(dpu_time_columns(),
                                std::vector<RunResult>{dpu.time_at_once, dpu.time_delayed})
                   .json()},
      {"speedup", dpu.time_at_once.step_seconds / dpu.time_delayed.step_seconds}};
  const ActivationOffload& acts = lesson.activations;
  j["activation_offload"] = {
      {"small", report::table_of(activation_columns(), acts.small).json()},
      {"small_losses_equal",
       acts.small.size() == 2 && acts.small[0].losses == acts.small[1].losses},
      {"large",
       {{"model", s.sweep_model.name},
        {"batch", s.activation_batch},
        {"seq", s.sweep_seq},
        {"link_gbps", s.activation_link_gbps},
        {"runs", report::table_of(activation_columns(), acts.large).json()}}}};
  // What the claims compare: the sweep model's device peak saved and its step's slowdown.
  const ScaleRun* none = find_scale(lesson, "sweep-model-none-roomy");
  const ScaleRun* off = find_scale(lesson, "sweep-model-offload");
  if (none && off && none->run.fits && off->run.fits)
    j["offload_cost"] = {
        {"model", s.sweep_model.name},
        {"device_peak_saved", 1.0 - static_cast<double>(off->run.device_peak_bytes) /
                                        static_cast<double>(none->run.device_peak_bytes)},
        {"model_state_saved", 1.0 - static_cast<double>(off->run.device.total()) /
                                        static_cast<double>(none->run.device.total())},
        {"slowdown", off->run.step_seconds / none->run.step_seconds}};
  const ScaleRun* params = find_scale(lesson, "sweep-model-infinity");
  if (j.contains("offload_cost") && params && params->run.fits)
    j["offload_cost"]["parameters"] = {
        {"device_peak_saved", 1.0 - static_cast<double>(params->run.device_peak_bytes) /
                                        static_cast<double>(none->run.device_peak_bytes)},
        {"slowdown", params->run.step_seconds / none->run.step_seconds},
        {"slowdown_over_optimizer_offload", params->run.step_seconds / off->run.step_seconds}};
  const ScaleRun* nvme = find_scale(lesson, "sweep-model-nvme");
  if (j.contains("offload_cost") && nvme && nvme->run.fits)
    j["offload_cost"]["nvme"] = {
        {"device_peak_saved", 1.0 - static_cast<double>(nvme->run.device_peak_bytes) /
                                        static_cast<double>(none->run.device_peak_bytes)},
        {"slowdown", nvme->run.step_seconds / none->run.step_seconds},
        {"nvme_seconds", nvme->run.nvme_seconds},
        {"wide_batch", kNvmeWideBatch},
        {"slowdown_over_host_memory", params && params->run.fits
                                          ? json(nvme->run.step_seconds / params->run.step_seconds)
                                          : json(nullptr)}};
  const ScaleRun* wide = find_scale(lesson, "sweep-model-none-roomy-wide");
  const ScaleRun* wide_nvme = find_scale(lesson, "sweep-model-nvme-wide");
  if (j.contains("offload_cost") && j["offload_cost"].contains("nvme") && wide && wide_nvme &&
      wide->run.fits && wide_nvme->run.fits)
    j["offload_cost"]["nvme"]["wide_slowdown"] =
        wide_nvme->run.step_seconds / wide->run.step_seconds;
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  const ModelConfig& m = s.model;
  std::string out = report::style::bold("Lesson 05: offload", colour) + "\n\n";

  out += fmt::format(
      "ZeRO-Offload on {} (host link {}): {}, Ψ = {}, {}, B={}, T={}, one rank, the last of {} "
      "steps\n",
      s.device.name(), link_text(s.device), m.name, report::format_count(m.parameter_count()),
      precision_text(s.precision), s.batch, s.seq, s.steps);
  out += report::table_of(memory_columns(), lesson.runs).render(colour);
  bool same_losses = true;
  for (const RunResult& r : lesson.runs)
    same_losses = same_losses && r.losses == lesson.runs.front().losses;
  out += wrap_note(fmt::format(
      "params, grads, states: the model states the device's allocator holds after the last step "
      "(requested bytes); host: the fp32 master weights, m and v the host's AdamW keeps, and the "
      "16-bit gradients and parameters it reads and writes; of host pinned: the blocks of the "
      "staged gradients and parameters and the fp32 master, page-locked as DeepSpeed's "
      "pin_memory does it (--offload-pin-memory on), each rounded up to a power of two. "
      "\"yes\": device, host and pinned bytes equal `vramlab estimate --offload optimizer`'s to "
      "the byte. ZeRO-Infinity, states on NVMe: "
      "ZeRO-3 on one rank with the parameters on the host too and the optimizer's states (fp32 "
      "master, m, v) in real files (--offload-optimizer-device nvme), one per state and unit; "
      "host: states is then the two units' states the host stages, NVMe the files, each rounded "
      "up to 4096 bytes, both as the estimator says. The losses of the {} runs are {}.",
      lesson.runs.size(),
      same_losses ? "bitwise the same: the host runs the same update on the same numbers"
                  : "NOT the same"));
  out += "\nThe last step on the device's clock\n";
  out += report::table_of(clock_columns(), lesson.runs).render(colour);
  out += wrap_note(
      "to host: the 16-bit gradients; to device: the updated 16-bit parameters, 2Ψ bytes each "
      "way, ZeRO-Offload's 4Ψ a step. copies: their time on the link. compute: the compute "
      "stream's kernels; host update: AdamW on the host while the device waits; NVMe: the "
      "drive's busy time, every state read and written once at a typical drive's 7 GB/s and "
      "5 GB/s (the clock's, not this disk's: the files really move, and the JSON has the "
      "bandwidth the tier measured); exposed: copy and drive time nothing hid. On sim the kernels "
      "run at this CPU's speed, far slower than the GPU "
      "they stand for, so a real link hides behind them: the sweep below puts the step on a "
      "GPU's roofline.");

  if (!lesson.sweep.empty()) {
    out += fmt::format(
        "\nThe link swept on {}: {}, Ψ = {}, mixed-bf16, B={}, T={}, the forward recomputed\n",
        s.sweep_device.name(), s.sweep_model.name,
        report::format_count(s.sweep_model.parameter_count()), s.sweep_batch, s.sweep_seq);
    out += report::table_of(sweep_columns(), lesson.sweep).render(colour);
    const double ait =
        estimate::zero_infinity::offloaded_optimizer_intensity(s.sweep_batch, s.sweep_seq, true);
    const double peak = s.sweep_device.spec.peak_flops.bf16_tensor;
    out += wrap_note(fmt::format(
        "efficiency: compute / (compute + exposed), the host's update left aside as the model "
        "leaves it. ZeRO-Infinity's model (Rajbhandari et al., SC21, §4): ait·bw / (ait·bw + "
        "peak) with ait = 8·B·T·Ψ FLOPs over 4Ψ bytes = {:g} FLOPs per byte and peak = {:g} "
        "TFLOPS (bf16): it overlaps nothing and runs at peak, so it needs {:.0f} GB/s for 90%. "
        "The roofline's kernels run below peak, which gives the link more time to hide in; "
        "overlap hides the gradients too. What stays: the parameters' copy back and the host's "
        "update, which the step waits for. step tiled: overlap on with the copy back tiled as "
        "ZeRO-Offload's CPU-Adam does it (each 128 Mi parameters go back while the host updates "
        "the next ones, --offload-copy-back tiled); step delayed: overlap on with its delayed "
        "parameter update (below), the update beside the next step.",
        ait, peak / 1e12, estimate::zero_infinity::bandwidth_for_efficiency(ait, peak, 0.9) / 1e9));
  }

  if (!lesson.timeline.on.last_step_spans.empty()) {
    out +=
        fmt::format("\nOne step on the stream clock's lanes at {:g} GB/s (offload_streams.html)\n",
                    lesson.timeline.link_gbps);
    out += report::table_of(timeline_columns(), timeline_rows(lesson)).render(colour);
    out += wrap_note(
        "copies: the copy streams' spans; beside compute: their time that overlaps a kernel "
        "on the compute stream, read off the trace's lanes. With one copy stream the rest of the "
        "copies' time, copies − beside compute, is the exposed time the clock reports: the trace "
        "and the clock's bookkeeping agree. ZeRO-Infinity, prefetched: the same step under ZeRO-3 "
        "with the parameters on the host too (--zero 3 --offload both --prefetch); its parameter "
        "fetches go up on a lane of their own while the gradients go down, two copies at once, so "
        "its copies can exceed beside compute plus exposed. The trace page draws every step, one "
        "lane per stream.");
  }

  {
    const DelayedUpdate& dpu = lesson.dpu;
    out += fmt::format(
        "\nThe delayed parameter update (--offload-dpu N): {} at {:g} GB/s, the last of 4 steps, "
        "delayed from step 2\n",
        s.sweep_model.name, s.dpu_link_gbps);
    out += report::table_of(dpu_time_columns(),
                            std::vector<RunResult>{dpu.time_at_once, dpu.time_delayed})
               .render(colour);
    out += wrap_note(fmt::format(
        "host update: the host's AdamW while the device waits; beside next step: the same "
        "update, delayed, on a host thread while the next step's forward and backward run on the "
        "parameters one update behind, so its time leaves the step: {:.2f}x the steps per "
        "second. ZeRO-Offload (Ren et al., ATC 2021, §5.2) measured 1.12-1.59x at micro-batch 8.",
        dpu.time_at_once.step_seconds / dpu.time_delayed.step_seconds));
    out += fmt::format("\nIts loss curves: {} on {}, {} steps (the first and every second)\n",
                       s.model.name, s.device.name(), s.dpu_steps);
    const std::vector<LossRow> rows = loss_rows(dpu);
    std::vector<LossRow> shown;
    for (const LossRow& r : rows)
      if (r.step % kLossRowStride == 0 || r.step == 1) shown.push_back(r);
    out += report::table_of(dpu_loss_columns(s), shown).render(colour);
    std::string note =
        "Up to its first delayed step N each run is the same numbers as the run updated at once; "
        "step N + 1 uses the parameters step N did (the first delayed update reaches the device "
        "one step late), and from then on each forward runs one update behind. After N, ";
    for (size_t i = 0; i < dpu.delayed.size(); ++i) {
      double largest = 0.0;
      int64_t at = 0;
      for (const LossRow& r : rows) {
        const double d = r.losses[i + 1] - r.losses[0];
        if (r.step > s.dpu_from[i] && std::abs(d) > std::abs(largest)) largest = d, at = r.step;
      }
      note +=
          fmt::format("{}delayed from step {} the loss differs by at most {:+.3f} nats (step {})",
                      i == 0 ? "" : "; ", s.dpu_from[i], largest, at);
    }
    note +=
        " (offload_dpu_losses.svg). Early in training the gradient changes fast from one step to "
        "the next, and an update one step old can overshoot; ZeRO-Offload runs its first steps "
        "without the delay for this reason (40 in its experiments).";
    out += wrap_note(note);
  }

  const ActivationOffload& acts = lesson.activations;
  if (acts.small.size() == 2) {
    out += fmt::format("\nActivation offload (--offload-activations on): {} on {}\n", s.model.name,
                       s.device.name());
    out += report::table_of(activation_columns(), acts.small).render(colour);
    out += wrap_note(fmt::format(
        "saved: the tensors the layers keep for their backward, on the device (peak, and when the "
        "forward ends); pinned host: the blocks that held them, each rounded up to a power of two "
        "({} asked for); = estimator: both equal vramlab estimate --offload-activations on. The "
        "losses are {} the same: the backward reads the bytes the forward saved.",
        report::format_bytes(
            static_cast<uint64_t>(acts.small[1].pinned_activation_requested_bytes)),
        acts.small[0].losses == acts.small[1].losses ? "bitwise" : "NOT"));
  }
  if (!acts.large.empty()) {
    out += fmt::format(
        "\n{} at B={}, T={} on {}, flash attention, ZeRO-Offload, the link at {:g} GB/s\n",
        s.sweep_model.name, s.activation_batch, s.sweep_seq, s.sweep_device.name(),
        s.activation_link_gbps);
    out += report::table_of(activation_columns(), acts.large).render(colour);
    std::string note =
        "kept: every saved tensor stays on the device until its backward; recomputed: each layer "
        "keeps its input and runs its forward again in the backward (--recompute full); "
        "offloaded: each layer's tensors go to the host after its forward and come back one layer "
        "ahead of its backward; recomputed, offloaded: only the layer inputs (the checkpoints) "
        "travel. exposed: copy time the compute did not hide, the gradients' copies included; the "
        "step adds the host's update. An empty row did not fit: ";
    for (const RunResult& r : acts.large)
      if (!r.fits) note += r.label + " (" + r.out_of_memory + "); ";
    out += wrap_note(note);
  }

  if (!lesson.scale.empty()) {
    out +=
        "\nAt scale on meta: one rank, ZeRO-2 (ZeRO-Infinity: ZeRO-3 with the parameters "
        "offloaded too, prefetched), the forward recomputed\n";
    std::vector<RunResult> rows;
    for (const ScaleRun& r : lesson.scale) rows.push_back(r.run);
    TypedColumns<RunResult> columns = memory_columns();
    columns.insert(columns.begin() + 1,
                   {{"", "device"}, [](const RunResult& r) { return r.device_name; }});
    columns.push_back({{"", "step", Unit::seconds, 3}, [](const RunResult& r) {
                         return r.fits ? report::Value(r.step_seconds) : report::Value();
                       }});
    out += report::table_of(columns, rows).render(colour);
    std::string note =
        "llama2-13b in mixed fp16 (the ZeRO-Offload paper's V100 has no bf16), B=1, T=1024; a "
        "32GiB device has no link on the clock "
        "(memory only). An empty row did not fit: ";
    for (const ScaleRun& r : lesson.scale)
      if (!r.run.fits)
        note += r.run.label + " on " + r.run.device_name + " (" + r.run.out_of_memory + "); ";
    note += fmt::format(
        "{} in mixed bf16 at B={}, T={} on {}; without offload it ran on the same device with "
        "room for it (its capacity times 4: the same kernels and link). ZeRO-Infinity keeps no "
        "model state on the device: each step fetches every unit's 16-bit shard for the forward, "
        "again for the recomputed forward and for the backward (3 x 2 bytes a parameter up, "
        "against ZeRO-Offload's 2), each block while the one before computes.",
        s.sweep_model.name, s.sweep_batch, s.sweep_seq, s.sweep_device.name());
    out += wrap_note(note);
  }
  return out;
}

report::SvgFigure sweep_figure(const Lesson& lesson) {
  report::LinePlot plot;
  const LessonSettings& s = lesson.settings;
  plot.title = fmt::format("ZeRO-Offload's link: {} on {}, B={}, T={}", s.sweep_model.name,
                           s.sweep_device.name(), s.sweep_batch, s.sweep_seq);
  plot.x_label = "host link, GB/s each way";
  plot.y_label = "compute / (compute + exposed copies)";
  plot.log_x = true;
  plot.log_x_base = 2.0;
  report::LineSeries on{"overlap on (measured)", {}, {}, "", false};
  report::LineSeries off{"overlap off (measured)", {}, {}, "", false};
  report::LineSeries model{"ZeRO-Infinity's model (no overlap, at peak)", {}, {}, "#555555", true};
  for (const SweepPoint& p : lesson.sweep) {
    on.x.push_back(p.link_gbps);
    on.y.push_back(link_efficiency(p.on));
    off.x.push_back(p.link_gbps);
    off.y.push_back(link_efficiency(p.off));
    model.x.push_back(p.link_gbps);
    model.y.push_back(p.model_efficiency);
  }
  plot.series = {on, off, model};
  return report::plot_line(plot);
}

report::SvgFigure dpu_loss_figure(const Lesson& lesson) {
  report::LinePlot plot;
  const LessonSettings& s = lesson.settings;
  plot.title = fmt::format("Delayed parameter update: {} on {}", s.model.name, s.device.name());
  plot.x_label = "step";
  plot.y_label = "loss, nats";
  // The delayed runs first and the run updated at once last, drawn over them: where a dashed
  // line disappears under the solid one the two runs are the same numbers.
  for (const int64_t first : s.dpu_from)
    plot.series.push_back({fmt::format("delayed from step {}", first), {}, {}, "", true});
  plot.series.push_back({"updated at once", {}, {}, "#222222", false});
  for (const LossRow& r : loss_rows(lesson.dpu))
    for (size_t i = 0; i < plot.series.size(); ++i) {
      plot.series[i].x.push_back(static_cast<double>(r.step));
      // LossRow holds the run at once first.
      plot.series[i].y.push_back(r.losses.at((i + 1) % plot.series.size()));
    }
  return report::plot_line(plot);
}

json timeline_trace(const Lesson& lesson) {
  json events = json::array();
  int process = 0;
  for (const RunResult& step : timeline_rows(lesson)) {
    const RunResult* r = &step;
    const std::string name = fmt::format(
        "{}: step {:.3f} s on the clock, {:.3f} s of copies exposed, {:.3f} s of host update",
        r->label, r->step_seconds, r->exposed_copy_seconds, r->host_update_seconds);
    for (json& e : profile::stream_lanes(r->last_step_spans, r->stream_names, process++, name,
                                         r->last_step_start_seconds))
      events.push_back(std::move(e));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

FigurePaths write_figures(const Lesson& lesson, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const std::filesystem::path dir(out_dir);
  const FigurePaths paths{(dir / "offload_link_sweep.svg").string(),
                          (dir / "offload_streams.html").string(),
                          (dir / "offload_dpu_losses.svg").string()};
  report::write_text_file(paths.sweep_svg, sweep_figure(lesson).svg);
  report::write_text_file(paths.dpu_svg, dpu_loss_figure(lesson).svg);
  const LessonSettings& s = lesson.settings;
  report::write_text_file(
      paths.timeline_html,
      report::render_trace_html(
          timeline_trace(lesson),
          fmt::format("Offload's streams: one step of {} on {}, B={}, T={}, link {:g} GB/s",
                      s.sweep_model.name, s.sweep_device.name(), s.sweep_batch, s.sweep_seq,
                      s.timeline_link_gbps)));
  return paths;
}

}  // namespace vramlab::lesson05
