// `vramlab estimate`: the analytic training-memory estimator. Bytes per device for parameters,
// gradients, optimizer states and activations, each with the source of its formula (ZeRO,
// Korthikanti et al.), beside this runtime's own activation layout.
//
//   vramlab estimate --model gpt2-124m --batch 8
//   vramlab estimate --params 7.5B --precision mixed-fp16 --zero 1 --dp 64     (ZeRO Figure 1)
//   vramlab estimate --model llama2-70b --tp 8 --sp --recompute selective --zero 1 --dp 16
//   vramlab estimate --layers 4 --hidden 256 --heads 4 --vocab 4096 --seq 128 --json
//   vramlab estimate --model llama2-13b --precision mixed-bf16 --link-gbps 32 --peak-tflops
//   bf16=312
//       (ZeRO-Infinity's efficiency of each offloaded quantity over that link)
//
// Bad input (zero or negative sizes, heads not dividing hidden, --zero 4, overflow) exits 2.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/estimate/deepspeed_estimators.h"
#include "common/estimate/estimator.h"
#include "common/estimate/zero_infinity.h"
#include "common/memory/device.h"
#include "common/model/checked_int.h"
#include "common/model/model_config.h"
#include "common/model/model_flags.h"
#include "common/plan/plan.h"
#include "common/plan/plan_flags.h"
#include "common/platform/errors.h"
#include "common/platform/flag_checks.h"
#include "common/recompute/recompute_schedule.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {

namespace {

using nlohmann::json;

struct EstimateOptions {
  ModelFlags model;
  std::string params;
  std::optional<int64_t> seq;
  int64_t batch = 1;
  std::optional<double> link_gbps;
  std::optional<std::string> peak_tflops;
  bool json = false, list_models = false, deepspeed = false;
};

// DeepSpeed's own model-state estimators (estimate_zero2/3_model_states_mem_needs_all_live) for
// the same parameters on --dp GPUs of one node, beside this estimator's figures for the same stage
// and offload: what --deepspeed prints.
struct DeepSpeedView {
  int64_t parameters = 0, gpus = 0, largest_layer_params = 0;
  struct Row {
    int64_t stage = 0;
    plan::OffloadPlan offload;
    estimate::DeepSpeedEstimate deepspeed;
    int64_t our_device_bytes = 0;  // model states per device
    int64_t our_host_bytes = 0;    // offloaded bytes of the node's --dp devices
  };
  std::vector<Row> rows;
  std::vector<std::string> notes;
};

DeepSpeedView deepspeed_view(const estimate::EstimateInputs& in, const estimate::Estimate& e) {
  DeepSpeedView v;
  v.parameters = e.parameter_count;
  v.gpus = in.plan.parallel.data_parallel;
  // Without shapes there is no module to call the largest; DeepSpeed's ZeRO-3 rows need one.
  v.largest_layer_params = in.model ? estimate::deepspeed_largest_layer_params(*in.model) : 0;
  const std::vector<std::pair<int64_t, plan::OffloadPlan>> configurations = {{2, {false, false}},
                                                                             {2, {true, false}},
                                                                             {3, {false, false}},
                                                                             {3, {true, false}},
                                                                             {3, {true, true}}};
  for (const auto& [stage, offload] : configurations) {
    if (stage == 3 && !in.model) continue;
    DeepSpeedView::Row row{stage, offload, {}, 0, 0};
    row.deepspeed = stage == 2 ? estimate::deepspeed_zero2_model_states_mem_needs(
                                     v.parameters, v.gpus, 1, offload.optimizer)
                               : estimate::deepspeed_zero3_model_states_mem_needs(
                                     v.parameters, v.largest_layer_params, v.gpus, 1,
                                     offload.optimizer, offload.parameters);
    estimate::EstimateInputs ours = in;
    ours.plan.parallel.zero = static_cast<plan::ZeroStage>(stage);
    ours.plan.offload = offload;
    const estimate::Estimate o = estimate::estimate_memory(ours);
    row.our_device_bytes = o.parameters.bytes + o.gradients.bytes + o.optimizer_states.bytes;
    row.our_host_bytes = checked_mul(o.cpu_offload_bytes, v.gpus, "host bytes");
    v.rows.push_back(row);
  }
  const bool adam = in.plan.optimizer.name == estimate::Optimizer::adamw;
  const bool mixed = in.plan.amp.precision == plan::Precision::mixed_bf16 ||
                     in.plan.amp.precision == plan::Precision::mixed_fp16;
  if (!adam || !mixed)
    v.notes.push_back(
        "DeepSpeed's estimators assume mixed precision with Adam; this estimator's "
        "columns follow --precision " +
        std::string(estimate::precision_name(in.plan.amp.precision)) + " --optimizer " +
        std::string(estimate::optimizer_name(in.plan.optimizer.name)));
  if (in.plan.parallel.tensor_parallel > 1)
    v.notes.push_back(
        "DeepSpeed's estimators know no tensor parallelism; this estimator's columns "
        "are one of the --tp " +
        std::to_string(in.plan.parallel.tensor_parallel) + " ranks'");
  v.notes.push_back(
      "DeepSpeed counts 18 bytes per partitioned parameter (fp32 master, momentum and variance, "
      "an fp32 gradient partition, the 16-bit gradient); ZeRO's 2 + K = 14 has no fp32 gradient");
  if (in.model)
    v.notes.push_back("DeepSpeed's ZeRO-3 GPU figure adds 4 bytes x its largest layer (" +
                      report::format_count(v.largest_layer_params) +
                      " parameters: the module holding the most, usually the embedding) for the "
                      "fp16 parameters and gradients of the layer at work; this estimator "
                      "counts the model states a device keeps between uses, and a gathered "
                      "unit is working memory");
  v.notes.push_back(
      "with the optimizer offloaded DeepSpeed counts no 16-bit gradients on the GPU under ZeRO-2 "
      "and 2 bytes a partitioned parameter under ZeRO-3; this estimator counts none under "
      "either: each reduced shard goes to the host as the backward makes it");
  v.notes.push_back(
      "DeepSpeed's CPU figures are per node, times its buffer factor 1.5, and without offload "
      "are the fp32 model each process loads (4 bytes x parameters x GPUs; under ZeRO-3's "
      "zero.Init only the largest layer's); this estimator's host column is what the node's GPUs "
      "offload: their optimizer partitions, with the gradients and parameters staged for the "
      "host's step");
  return v;
}

std::string offload_text(const plan::OffloadPlan& offload) {
  return std::string(plan::offload_name(offload));
}

json to_json(const DeepSpeedView& v) {
  json rows = json::array();
  for (const auto& r : v.rows)
    rows.push_back({{"stage", r.stage},
                    {"offload", offload_text(r.offload)},
                    {"deepspeed_gpu_bytes", r.deepspeed.gpu_bytes},
                    {"deepspeed_cpu_bytes", r.deepspeed.cpu_bytes},
                    {"our_device_model_state_bytes", r.our_device_bytes},
                    {"our_host_bytes", r.our_host_bytes}});
  return {{"parameters", v.parameters},
          {"gpus_per_node", v.gpus},
          {"nodes", 1},
          {"largest_layer_params", v.largest_layer_params},
          {"source",
           "deepspeedai/DeepSpeed estimate_zero2_model_states_mem_needs (stage_1_and_2.py, after "
           "PR #5099) and estimate_zero3_model_states_mem_needs (stage3.py), "
           "additional_buffer_factor 1.5, zero_init on"},
          {"rows", rows},
          {"notes", v.notes}};
}

void print_human(const DeepSpeedView& v) {
  const bool colour = report::use_colour(stdout);
  using report::format_bytes;
  std::printf("\n  %s\n",
              report::style::bold("DeepSpeed's estimators for the same " +
                                      report::format_count(v.parameters) + " parameters on " +
                                      std::to_string(v.gpus) + " GPU(s) of one node",
                                  colour)
                  .c_str());
  std::printf(
      "  (estimate_zero2/3_model_states_mem_needs_all_live; model states only, no "
      "activations)\n");
  using report::Align;
  report::Table table({{"stage"},
                       {"offload"},
                       {"GPU: DeepSpeed", Align::kRight},
                       {"GPU: ours", Align::kRight},
                       {"CPU: DeepSpeed", Align::kRight},
                       {"host: ours", Align::kRight}});
  for (const auto& r : v.rows)
    table.add_row(
        {"ZeRO-" + std::to_string(r.stage), offload_text(r.offload),
         format_bytes(static_cast<uint64_t>(r.deepspeed.gpu_bytes)),
         format_bytes(static_cast<uint64_t>(r.our_device_bytes)),
         format_bytes(static_cast<uint64_t>(r.deepspeed.cpu_bytes)),
         r.our_host_bytes > 0 ? format_bytes(static_cast<uint64_t>(r.our_host_bytes)) : "-"});
  std::fputs(table.render(colour, 2).c_str(), stdout);
  if (v.largest_layer_params == 0)
    std::fputs(report::wrap_note("No ZeRO-3 rows: DeepSpeed's figure depends on the largest "
                                 "layer, which needs the shapes (--model or the shape flags).")
                   .c_str(),
               stdout);
  std::printf("  Why they differ:\n");
  for (const std::string& note : v.notes)
    std::fputs(report::wrap_note("- " + note).c_str(), stdout);
}

// ZeRO-Infinity's efficiency (Rajbhandari et al., SC21, §4) of each quantity an offload moves
// over the host link, at the run's micro-batch and sequence: what --link-gbps and --peak-tflops
// ask for.
struct OffloadEfficiency {
  double link_bytes_per_s = 0.0;
  double peak_flops = 0.0;
  std::string peak_dtype;  // the peak's dtype: the precision's matmul type
  struct Row {
    std::string quantity, ait_formula;
    double ait = 0.0, efficiency = 0.0, half_bytes_per_s = 0.0, ninety_bytes_per_s = 0.0;
  };
  std::vector<Row> rows;
};

// The peak a step's matmuls run at under \p precision: fp32 on the CUDA cores (PyTorch's TF32 is
// off by default), the 16-bit types on the tensor cores.
std::pair<double, std::string> matmul_peak(plan::Precision precision, const memory::PeakFlops& f) {
  switch (precision) {
    case plan::Precision::fp32:
      return {f.fp32, "fp32"};
    case plan::Precision::mixed_fp16:
      return {f.fp16_tensor, "fp16"};
    case plan::Precision::bf16:
    case plan::Precision::mixed_bf16:
      return {f.bf16_tensor, "bf16"};
  }
  return {0.0, ""};
}

std::optional<OffloadEfficiency> offload_efficiency(const EstimateOptions& o,
                                                    const estimate::EstimateInputs& in,
                                                    const estimate::Estimate& e) {
  if (!o.link_gbps && !o.peak_tflops) return std::nullopt;
  // Each value is checked before the pair, so a bad value is named whatever else is missing.
  OffloadEfficiency r;
  if (o.link_gbps) r.link_bytes_per_s = platform::bandwidth_flag("--link-gbps", *o.link_gbps);
  const memory::PeakFlops peaks =
      o.peak_tflops ? memory::parse_peak_tflops(*o.peak_tflops, {}) : memory::PeakFlops{};
  if (!o.link_gbps || !o.peak_tflops)
    throw UsageError(std::string(o.link_gbps ? "--link-gbps" : "--peak-tflops") + " needs " +
                     (o.link_gbps ? "--peak-tflops" : "--link-gbps") +
                     ": ZeRO-Infinity's efficiency weighs the link against the device's peak");
  if (!in.model)
    throw UsageError(
        "--link-gbps needs a model (--model or the shape flags), not --params: the offloaded "
        "data's arithmetic intensity depends on the sequence and the hidden size");
  std::tie(r.peak_flops, r.peak_dtype) = matmul_peak(in.plan.amp.precision, peaks);
  if (r.peak_flops <= 0.0)
    throw UsageError(
        "--peak-tflops: " + std::string(estimate::precision_name(in.plan.amp.precision)) +
        " runs its matmuls in " + r.peak_dtype + ", so give " + r.peak_dtype +
        "=T (e.g. --peak-tflops " + r.peak_dtype + "=312)");
  namespace zi = estimate::zero_infinity;
  const auto add = [&](std::string quantity, std::string formula, double ait) {
    r.rows.push_back({std::move(quantity), std::move(formula), ait,
                      zi::efficiency(ait, r.link_bytes_per_s, r.peak_flops),
                      zi::bandwidth_for_efficiency(ait, r.peak_flops, 0.5),
                      zi::bandwidth_for_efficiency(ait, r.peak_flops, 0.9)});
  };
  add("parameters + gradients", "seq·bsz", zi::parameter_gradient_intensity(in.micro_batch, e.seq));
  add("optimizer states", "seq·bsz/4", zi::optimizer_state_intensity(in.micro_batch, e.seq));
  add("activation checkpoints", "24·hd·ci, ci=1",
      zi::activation_checkpoint_intensity(in.model->hidden, 1));
  return r;
}

json to_json(const OffloadEfficiency& r) {
  json rows = json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"quantity", row.quantity},
                    {"arithmetic_intensity", row.ait},
                    {"arithmetic_intensity_formula", row.ait_formula},
                    {"efficiency", row.efficiency},
                    {"bytes_per_s_for_50_percent", row.half_bytes_per_s},
                    {"bytes_per_s_for_90_percent", row.ninety_bytes_per_s}});
  return {{"link_bytes_per_s", r.link_bytes_per_s},
          {"peak_flops", r.peak_flops},
          {"peak_dtype", r.peak_dtype},
          {"source",
           "Rajbhandari et al. 2021 (ZeRO-Infinity), section 4: efficiency = "
           "ait*bw / (ait*bw + peak), nothing overlapped"},
          {"rows", rows}};
}

std::string gbps_text(double bytes_per_s) {
  char text[48];
  const double gbps = bytes_per_s / 1e9;
  if (gbps >= 100.0)
    std::snprintf(text, sizeof text, "%s GB/s",
                  report::format_count(static_cast<int64_t>(std::llround(gbps))).c_str());
  else
    std::snprintf(text, sizeof text, "%.3g GB/s", gbps);
  return text;
}

void print_human(const OffloadEfficiency& r) {
  const bool colour = report::use_colour(stdout);
  std::printf("\n  %s\n", report::style::bold(
                              "Offloaded over a " + gbps_text(r.link_bytes_per_s) + " link", colour)
                              .c_str());
  std::printf(
      "  ZeRO-Infinity's efficiency (Rajbhandari et al. 2021, §4) at %.4g TFLOP/s (%s):\n"
      "  compute / (compute + transfer) when each step moves the data once, nothing "
      "overlapped\n",
      r.peak_flops / 1e12, r.peak_dtype.c_str());
  using report::Align;
  report::Table table({{"offloaded"},
                       {"FLOPs per byte", Align::kRight},
                       {"= ait"},
                       {"efficiency", Align::kRight},
                       {"50% needs", Align::kRight},
                       {"90% needs", Align::kRight}});
  for (const auto& row : r.rows) {
    char ait[32], eff[32];
    std::snprintf(ait, sizeof ait, "%.6g", row.ait);
    std::snprintf(eff, sizeof eff, "%.1f%%", 100.0 * row.efficiency);
    table.add_row({row.quantity, ait, row.ait_formula, eff, gbps_text(row.half_bytes_per_s),
                   gbps_text(row.ninety_bytes_per_s)});
  }
  std::fputs(table.render(colour, 2).c_str(), stdout);
  std::printf(
      "  ZeRO-Offload runs the optimizer step on the CPU, so its states never cross the link: "
      "only\n"
      "  the 16-bit gradients (down) and parameters (up), 4 bytes per parameter a step.\n");
}

// The named models --model takes, with their shapes: what to pick before estimating or training.
void print_models(bool as_json) {
  json models = json::array();
  using report::Align;
  report::Table table({{"model"},
                       {"family"},
                       {"parameters", Align::kRight},
                       {"L", Align::kRight},
                       {"C", Align::kRight},
                       {"H", Align::kRight},
                       {"kv", Align::kRight},
                       {"F", Align::kRight},
                       {"V", Align::kRight},
                       {"context", Align::kRight}});
  for (const std::string_view name : model_config_names()) {
    const ModelConfig m = model_config_by_name(name);
    models.push_back({{"name", m.name},
                      {"family", model_family_name(m.family)},
                      {"parameters", m.parameter_count()},
                      {"layers", m.layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"kv_heads", m.kv_heads},
                      {"ffn_hidden", m.ffn_hidden},
                      {"vocab", m.vocab},
                      {"max_seq", m.max_seq}});
    table.add_row({m.name, std::string(model_family_name(m.family)),
                   report::format_count(m.parameter_count()), std::to_string(m.layers),
                   std::to_string(m.hidden), std::to_string(m.heads), std::to_string(m.kv_heads),
                   std::to_string(m.ffn_hidden), std::to_string(m.vocab),
                   std::to_string(m.max_seq)});
  }
  if (as_json) {
    std::printf("%s\n", json{{"models", models}}.dump(2).c_str());
    return;
  }
  std::fputs(table.render(report::use_colour(stdout)).c_str(), stdout);
  std::printf(
      "--model NAME takes one of these in vramlab estimate, vramlab train and vramlab run 01.\n");
}

// The model from --model and the shape flags, or nothing (--params).
std::optional<ModelConfig> model_from(const EstimateOptions& o) {
  const bool any_model = !o.model.name.empty() || o.model.any_shape();
  if (o.seq && !any_model)
    throw UsageError("--seq needs shapes: give --model NAME or the shape flags with it");
  if (!o.params.empty() && any_model)
    throw UsageError(
        "give --params (model states only) or a model (--model and/or the shape flags), not both");
  if (!o.params.empty()) return std::nullopt;
  if (!any_model)
    throw UsageError(
        "no model: give --model NAME (e.g. gpt2-124m), --params N, or --layers "
        "--hidden --heads --vocab");
  return o.model.build(o.seq);
}

estimate::EstimateInputs inputs_from(const EstimateOptions& o, const plan::PlanFlags& flags) {
  estimate::EstimateInputs in;
  in.model = model_from(o);
  if (!o.params.empty()) in.parameter_count = estimate::parse_parameter_count(o.params);
  in.micro_batch = o.batch;
  // The training sequence; 0 = the model's context (which explicit shapes take from --seq).
  in.seq = o.seq.value_or(0);
  in.plan = flags.plan();
  return in;
}

// What the inputs ask for but do not do: said in a note, since they are valid (the estimate is
// still right), only probably not what was meant.
std::vector<std::string> notes_for(const estimate::EstimateInputs& in) {
  std::vector<std::string> notes;
  const auto stage = static_cast<int64_t>(in.plan.parallel.zero);
  if (stage > 0 && in.plan.parallel.data_parallel == 1)
    notes.push_back("ZeRO stage " + std::to_string(stage) +
                    " with --dp 1 partitions nothing: it splits model states across the " +
                    "data-parallel ranks, and there is one; give --dp N (N > 1) to see it shrink");
  return notes;
}

double per_param(int64_t bytes, int64_t params) {
  return static_cast<double>(bytes) / static_cast<double>(params);
}

json to_json(const estimate::EstimateInputs& in, const estimate::Estimate& e) {
  json inputs;
  if (in.model) {
    const ModelConfig& m = *in.model;
    inputs["model"] = m.name;
    inputs["family"] = model_family_name(m.family);
    inputs["layers"] = m.layers;
    inputs["hidden"] = m.hidden;
    inputs["heads"] = m.heads;
    inputs["kv_heads"] = m.kv_heads;
    inputs["ffn_hidden"] = m.ffn_hidden;
    inputs["vocab"] = m.vocab;
    inputs["max_seq"] = m.max_seq;
    inputs["seq"] = e.seq;
  } else {
    inputs["model"] = nullptr;
    inputs["params"] = in.parameter_count;
  }
  inputs["micro_batch"] = in.micro_batch;
  inputs["grad_accum"] = in.plan.batch.grad_accum;
  inputs["precision"] = estimate::precision_name(in.plan.amp.precision);
  inputs["optimizer"] = estimate::optimizer_name(in.plan.optimizer.name);
  if (in.plan.optimizer.name == estimate::Optimizer::adamw_8bit) {
    inputs["quantization_block_size"] = in.plan.optimizer.eight_bit.block_size;
    inputs["min_8bit_size"] = in.plan.optimizer.eight_bit.min_8bit_size;
    inputs["fp32_embeddings"] = in.plan.optimizer.eight_bit.fp32_embeddings;
  }
  inputs["fp32_gradients"] = in.plan.amp.fp32_grads;
  inputs["zero_stage"] = static_cast<int64_t>(in.plan.parallel.zero);
  inputs["dp"] = in.plan.parallel.data_parallel;
  inputs["tp"] = in.plan.parallel.tensor_parallel;
  inputs["sp"] = in.plan.parallel.sequence_parallel;
  inputs["recompute"] = recompute::to_string(in.plan.recompute);
  inputs["attention"] = attention_kind_name(in.plan.attention);
  inputs["offload"] = plan::offload_name(in.plan.offload);
  json r;
  r["inputs"] = inputs;
  r["plan"] = plan::to_json(in.plan);  // what `vramlab train --plan` and `estimate --plan` read
  r["parameter_count"] = e.parameter_count;
  r["global_batch"] = in.micro_batch * in.plan.batch.grad_accum * in.plan.parallel.data_parallel;
  r["per_device_bytes"] = {{"parameters", e.parameters.bytes},
                           {"gradients", e.gradients.bytes},
                           {"optimizer_states", e.optimizer_states.bytes},
                           {"activations", e.activations.bytes},
                           {"total", e.total_bytes}};
  r["master_weight_bytes"] = e.master_weight_bytes;
  // Whether ZeRO splits anything here: a stage above 0 over more than one data-parallel rank.
  r["zero_partitions"] =
      in.plan.parallel.zero != plan::ZeroStage::ddp && in.plan.parallel.data_parallel > 1;
  r["notes"] = notes_for(in);
  r["cpu_offload_bytes"] = e.cpu_offload_bytes;
  r["host_bytes"] = {{"optimizer_states", e.host_optimizer_state_bytes},
                     {"gradients", e.host_gradient_bytes},
                     {"parameters", e.host_parameter_bytes},
                     {"pinned_requested", e.host_pinned_requested_bytes},
                     {"pinned_blocks", e.host_pinned_bytes}};
  r["nvme_bytes"] = {{"optimizer_states", e.nvme_optimizer_state_bytes},
                     {"parameters", e.nvme_parameter_bytes}};
  r["sources"] = {{"parameters", e.parameters.source},
                  {"gradients", e.gradients.source},
                  {"optimizer_states", e.optimizer_states.source},
                  {"activations", e.activations.source},
                  {"cpu_offload", e.cpu_offload_source},
                  {"activations_runtime_layout", e.runtime_activation_source}};
  const auto& u = e.unpartitioned;
  r["bytes_per_parameter"] = {
      {"parameters", per_param(u.parameters, e.parameter_count)},
      {"gradients", per_param(u.gradients, e.parameter_count)},
      {"optimizer_states", per_param(u.optimizer_states(), e.parameter_count)},
      {"master_weights", per_param(u.master_weights, e.parameter_count)},
      {"model_states", per_param(u.total(), e.parameter_count)}};
  if (e.has_activations) {
    r["activations_per_layer_bytes"] = e.activation_bytes_per_layer;
    r["activations_runtime_layout_bytes"] = e.runtime_activation_bytes;
    r["activations_runtime_layout_per_layer_bytes"] = e.runtime_activation_bytes_per_layer;
    r["runtime_recompute"] = {
        {"schedule", e.runtime_schedule.name},
        {"pattern", recompute::schedule_pattern(e.runtime_schedule)},
        {"activation_peak_bytes", e.runtime_schedule_peak_bytes},
        {"compress_activations", recompute::compression_name(in.plan.activations.compression)},
        {"bytes_after_forward", e.runtime_bytes_after_forward},
        {"offload_activations", in.plan.activations.offload},
        {"host_pinned_bytes", e.host_activation_bytes},
        {"host_requested_bytes", e.host_activation_requested_bytes},
        {"recomputed_forward_fraction", e.recomputed_forward_fraction}};
  } else {
    r["activations_per_layer_bytes"] = nullptr;
    r["activations_runtime_layout_bytes"] = nullptr;
    r["activations_runtime_layout_per_layer_bytes"] = nullptr;
    r["runtime_recompute"] = nullptr;
  }
  return r;
}

std::string bytes_per_param_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void print_human(const estimate::EstimateInputs& in, const estimate::Estimate& e) {
  const bool colour = report::use_colour(stdout);
  using report::format_bytes;
  using report::format_bytes_decimal;
  std::string what =
      in.model ? "model " + in.model->name + " (" + report::format_count(e.parameter_count) +
                     " parameters, L=" + std::to_string(in.model->layers) +
                     ", h=" + std::to_string(in.model->hidden) +
                     ", a=" + std::to_string(in.model->heads) + ")"
               : report::format_count(e.parameter_count) + " parameters (model states only)";
  std::printf("%s\n", report::style::bold("vramlab estimate: " + what, colour).c_str());
  std::printf("  %s, %s, ZeRO stage %lld, Nd=%lld, t=%lld%s, recompute %s",
              std::string(estimate::precision_name(in.plan.amp.precision)).c_str(),
              std::string(estimate::optimizer_name(in.plan.optimizer.name)).c_str(),
              static_cast<long long>(in.plan.parallel.zero),
              static_cast<long long>(in.plan.parallel.data_parallel),
              static_cast<long long>(in.plan.parallel.tensor_parallel),
              in.plan.parallel.sequence_parallel ? " + SP" : "",
              recompute::to_string(in.plan.recompute).c_str());
  if (in.plan.attention == AttentionKind::flash) std::printf(", flash attention");
  if (in.model)
    std::printf(", micro-batch %lld × seq %lld, grad-accum %lld",
                static_cast<long long>(in.micro_batch), static_cast<long long>(e.seq),
                static_cast<long long>(in.plan.batch.grad_accum));
  std::printf("\n\n");

  using report::Align;
  report::Table table({{"component"},
                       {"per device", Align::kRight},
                       {"decimal", Align::kRight},
                       {"B/param", Align::kRight},
                       {"formula and source"}});
  const auto& u = e.unpartitioned;
  auto row = [&](const char* name, const estimate::ComponentEstimate& c, const std::string& bpp) {
    table.add_row({name, format_bytes(static_cast<uint64_t>(c.bytes)),
                   format_bytes_decimal(static_cast<uint64_t>(c.bytes)), bpp, c.source});
  };
  row("parameters", e.parameters, bytes_per_param_text(per_param(u.parameters, e.parameter_count)));
  row("gradients", e.gradients, bytes_per_param_text(per_param(u.gradients, e.parameter_count)));
  row("optimizer states", e.optimizer_states,
      bytes_per_param_text(per_param(u.optimizer_states(), e.parameter_count)));
  row("activations", e.activations, "");
  if (e.has_activations)
    table.add_row(
        {"  runtime layout", format_bytes(static_cast<uint64_t>(e.runtime_activation_bytes)),
         format_bytes_decimal(static_cast<uint64_t>(e.runtime_activation_bytes)), "",
         e.runtime_activation_source + " (not in the total)"},
        report::RowStyle::kDim);
  const bool recomputed = in.plan.recompute.kind != recompute::RecomputeSpec::Kind::none;
  const bool offloaded = in.plan.activations.offload;
  if (e.has_activations && (recomputed || offloaded)) {
    std::string source = offloaded ? "its peak with the saved activations offloaded" : "its peak";
    if (recomputed) {
      char fraction[32];
      std::snprintf(fraction, sizeof fraction, "%.1f%%", 100.0 * e.recomputed_forward_fraction);
      source += " under " + e.runtime_schedule.name + " (" +
                recompute::schedule_pattern(e.runtime_schedule) + "), " + fraction +
                " of the forward re-run";
    }
    source += " (not in the total)";
    table.add_row(
        {offloaded ? "  runtime, offloaded" : "  runtime, recompute",
         format_bytes(static_cast<uint64_t>(e.runtime_schedule_peak_bytes)),
         format_bytes_decimal(static_cast<uint64_t>(e.runtime_schedule_peak_bytes)), "", source},
        report::RowStyle::kDim);
  }
  table.add_rule();
  table.add_row({"total", format_bytes(static_cast<uint64_t>(e.total_bytes)),
                 format_bytes_decimal(static_cast<uint64_t>(e.total_bytes)),
                 bytes_per_param_text(per_param(u.total(), e.parameter_count)),
                 "sum per device (B/param: model states before partitioning)"},
                report::RowStyle::kBold);
  if (e.cpu_offload_bytes > 0)
    table.add_row({"host (offload)", format_bytes(static_cast<uint64_t>(e.cpu_offload_bytes)),
                   format_bytes_decimal(static_cast<uint64_t>(e.cpu_offload_bytes)), "",
                   e.cpu_offload_source},
                  report::RowStyle::kDim);
  if (e.host_pinned_bytes > 0)
    table.add_row({"host (pinned)", format_bytes(static_cast<uint64_t>(e.host_pinned_bytes)),
                   format_bytes_decimal(static_cast<uint64_t>(e.host_pinned_bytes)), "",
                   "page-locked blocks, each a power of two (PyTorch's pinned allocator), for " +
                       format_bytes(static_cast<uint64_t>(e.host_pinned_requested_bytes)) +
                       " of staged gradients and parameters and fp32 master (DeepSpeed's "
                       "pin_memory; --offload-pin-memory off: pageable)"},
                  report::RowStyle::kDim);
  if (e.nvme_optimizer_state_bytes > 0)
    table.add_row(
        {"NVMe (offload)", format_bytes(static_cast<uint64_t>(e.nvme_optimizer_state_bytes)),
         format_bytes_decimal(static_cast<uint64_t>(e.nvme_optimizer_state_bytes)), "",
         "the optimizer states, fp32 master included: a file per state and unit, each "
         "rounded up to 4096 bytes; the host stages two units' states"},
        report::RowStyle::kDim);
  if (e.nvme_parameter_bytes > 0)
    table.add_row({"NVMe (parameters)", format_bytes(static_cast<uint64_t>(e.nvme_parameter_bytes)),
                   format_bytes_decimal(static_cast<uint64_t>(e.nvme_parameter_bytes)), "",
                   "the parameters' shard: a file per unit, each rounded up to 4096 bytes; the "
                   "host holds one unit at a time"},
                  report::RowStyle::kDim);
  if (e.host_activation_bytes > 0)
    table.add_row(
        {"host (activations)", format_bytes(static_cast<uint64_t>(e.host_activation_bytes)),
         format_bytes_decimal(static_cast<uint64_t>(e.host_activation_bytes)), "",
         "saved activations offloaded after the forward, in pinned blocks rounded up to powers "
         "of two (" +
             format_bytes(static_cast<uint64_t>(e.host_activation_requested_bytes)) +
             " asked for)"},
        report::RowStyle::kDim);
  std::fputs(table.render(colour, 2).c_str(), stdout);

  std::printf("\n  total per device: %s = %s (decimal)\n",
              format_bytes(static_cast<uint64_t>(e.total_bytes)).c_str(),
              format_bytes_decimal(static_cast<uint64_t>(e.total_bytes)).c_str());
  if (e.master_weight_bytes > 0)
    std::printf("  of the optimizer states, fp32 master weights: %s\n",
                format_bytes(static_cast<uint64_t>(e.master_weight_bytes)).c_str());
  if (e.has_activations)
    std::printf("  activations per layer: %s (Korthikanti et al.), %s (runtime layout)\n",
                format_bytes(static_cast<uint64_t>(e.activation_bytes_per_layer)).c_str(),
                format_bytes(static_cast<uint64_t>(e.runtime_activation_bytes_per_layer)).c_str());
  for (const std::string& note : notes_for(in))
    std::printf("  %s %s\n", report::style::yellow("note:", colour).c_str(), note.c_str());
}

}  // namespace

void add_estimate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "estimate",
      "Analytic memory estimate per device: parameters, gradients, optimizer states (ZeRO), "
      "activations (Korthikanti et al.)");
  auto o = std::make_shared<EstimateOptions>();
  add_model_options(*cmd, o->model);
  cmd->add_option("--params", o->params,
                  "Parameter count alone (e.g. 7.5e9, 7.5B): model states only");
  cmd->add_option("--seq", o->seq,
                  "Sequence length s (default: the model's context; explicit shapes without "
                  "--max-seq take it as their context)");
  cmd->add_option("--batch", o->batch, "Micro-batch b per device (default 1)")
      ->check(platform::integer_in(1));
  auto flags = std::make_shared<plan::PlanFlags>(*cmd, estimate::default_estimate_plan(),
                                                 plan::estimate_plan_flags());
  cmd->add_option("--link-gbps", o->link_gbps,
                  "Host link bandwidth in GB/s: with --peak-tflops, print ZeRO-Infinity's "
                  "efficiency of each offloaded quantity over it");
  cmd->add_option("--peak-tflops", o->peak_tflops,
                  "The device's peak, DTYPE=T[,DTYPE=T...] in TFLOP/s (fp32, bf16, fp16): the "
                  "precision's matmul type is the one used");
  cmd->add_flag("--deepspeed", o->deepspeed,
                "Also print DeepSpeed's own ZeRO-2/ZeRO-3 estimators for the same parameters on "
                "--dp GPUs, beside this estimator's figures and why they differ");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_flag("--list-models", o->list_models,
                "List the named models --model takes, with their shapes and parameter counts");
  cmd->callback([o, flags, &exit_code] {
    if (o->list_models) {
      print_models(o->json);
      exit_code = 0;
      return;
    }
    const estimate::EstimateInputs in = inputs_from(*o, *flags);
    const estimate::Estimate e = estimate::estimate_memory(in);
    const std::optional<OffloadEfficiency> efficiency = offload_efficiency(*o, in, e);
    std::optional<DeepSpeedView> deepspeed;
    if (o->deepspeed) deepspeed = deepspeed_view(in, e);
    if (o->json) {
      json r = to_json(in, e);
      r["offload_efficiency"] = efficiency ? to_json(*efficiency) : json(nullptr);
      r["deepspeed"] = deepspeed ? to_json(*deepspeed) : json(nullptr);
      std::printf("%s\n", r.dump(2).c_str());
    } else {
      print_human(in, e);
      if (efficiency) print_human(*efficiency);
      if (deepspeed) print_human(*deepspeed);
    }
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
