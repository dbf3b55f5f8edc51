// The technique flags (see plan_flags.h).
#include "common/plan/plan_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/platform/errors.h"
#include "common/platform/flag_checks.h"
#include "common/platform/number_text.h"

namespace vramlab::plan {

namespace {

using platform::integer_in;
using platform::parsed_by;

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

// A flag's double as the plan's float; beyond a float's range the conversion is undefined, so the
// value is refused as typed (the commands' own check usually names it first).
float to_float(double value, const char* flag) {
  if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max())
    throw UsageError(std::string(flag) + " " + number_text(value) + " is beyond a float's range");
  return static_cast<float>(value);
}

}  // namespace

// What CLI11 parses each flag into, before plan() applies the given ones.
struct PlanFlags::Values {
  std::string plan_file;
  std::string precision, loss_scale, recompute, compression, attention, optimizer, offload,
      offload_overlap, offload_dpu, offload_copy_back, offload_activations,
      offload_optimizer_device, offload_param_device, offload_pin_memory;
  bool fp32_grads = false, stochastic_rounding = false, fp32_embeddings = false;
  bool sequence_parallel = false, prefetch = false;
  double learning_rate = 0, clip_grad_norm = 0, dropout = 0;
  int64_t block_size = 0, min_8bit_size = 0, grad_accum = 0, zero = 0, dp = 0, tp = 0,
          loss_chunks = 0;
};

PlanFlags::PlanFlags(CLI::App& app, const Plan& defaults, const std::vector<PlanFlag>& flags)
    : defaults_(defaults), values_(std::make_unique<Values>()) {
  Values& v = *values_;
  const Plan& d = defaults;
  const std::string group = "Plan (how to train; --plan FILE, then these)";
  for (const PlanFlag flag : flags) {
    CLI::Option* option = nullptr;
    std::function<void(Plan&)> apply;  // what the flag, when given, changes in the plan
    switch (flag) {
      case PlanFlag::plan_file:
        option = app.add_option("--plan", v.plan_file,
                                "Start from the plan in FILE (JSON: a plan, or what vramlab "
                                "train --json printed); the flags below change it")
                     ->type_name("FILE");
        break;
      case PlanFlag::precision:
        v.precision = precision_name(d.amp.precision);
        option = app.add_option("--precision", v.precision,
                                "fp32, bf16 (pure: no fp32 copy anywhere), mixed-bf16 or "
                                "mixed-fp16 (16-bit weights and activations, fp32 master "
                                "weights and optimizer states)")
                     ->check(parsed_by(parse_precision, "{" + join(precision_names()) + "}"));
        apply = [&v](Plan& p) { p.amp.precision = parse_precision(v.precision); };
        break;
      case PlanFlag::fp32_grads:
        option = app.add_flag("--fp32-grads", v.fp32_grads,
                              "Keep fp32 gradients under mixed precision (4 instead of 2 B/param)");
        apply = [&v](Plan& p) { p.amp.fp32_grads = v.fp32_grads; };
        break;
      case PlanFlag::stochastic_rounding:
        option = app.add_flag("--stochastic-rounding", v.stochastic_rounding,
                              "Pure bf16: the optimizer rounds updated parameters stochastically, "
                              "so updates below half an ulp survive on average (default: nearest, "
                              "as PyTorch)");
        apply = [&v](Plan& p) { p.amp.stochastic_rounding = v.stochastic_rounding; };
        break;
      case PlanFlag::loss_scale:
        option = app.add_option("--loss-scale", v.loss_scale,
                                "dynamic (GradScaler: 2^16, x0.5 on inf/NaN, x2 after 2000 clean "
                                "steps), static:S or none (default: dynamic for mixed-fp16, none "
                                "otherwise)")
                     ->check(parsed_by(parse_loss_scale, ""))
                     ->type_name("SCALE");
        apply = [&v](Plan& p) { p.amp.loss_scale = parse_loss_scale(v.loss_scale); };
        break;
      case PlanFlag::recompute:
        v.recompute = to_string(d.recompute);
        option = app.add_option("--recompute", v.recompute,
                                "Gradient checkpointing: none | full (every layer) | every:K "
                                "(layers 0, K, 2K, ...) | sqrt (spans of ceil(sqrt(L)) layers) | "
                                "selective (attention probabilities only) | budget:BYTES (the "
                                "least recompute whose activation peak fits, e.g. budget:64MiB)")
                     ->check(parsed_by(parse_recompute_spec, ""))
                     ->type_name("SCHEDULE");
        apply = [&v](Plan& p) { p.recompute = parse_recompute_spec(v.recompute); };
        break;
      case PlanFlag::compress_activations:
        v.compression = compression_name(d.activations.compression);
        option = app.add_option("--compress-activations", v.compression,
                                "Keep what the layers save as none (as computed) | int8 (one "
                                "absmax scale per tensor) | int8-block (one per 256 elements) "
                                "between forward and backward")
                     ->check(parsed_by(parse_compression, "{" + join(compression_names()) + "}"));
        apply = [&v](Plan& p) { p.activations.compression = parse_compression(v.compression); };
        break;
      case PlanFlag::offload_activations:
        v.offload_activations = d.activations.offload ? "on" : "off";
        option = app.add_option("--offload-activations", v.offload_activations,
                                "on: each layer's saved tensors go to pinned host memory on a "
                                "copy stream after its forward and come back one layer ahead "
                                "of its backward | off")
                     ->check(CLI::IsMember({"on", "off"}));
        apply = [&v](Plan& p) { p.activations.offload = v.offload_activations == "on"; };
        break;
      case PlanFlag::attention:
        v.attention = attention_kind_name(d.attention);
        option =
            app.add_option("--attention", v.attention,
                           "naive (materialises and saves the (B, H, T, T) probabilities, as "
                           "PyTorch's eager attention) | flash (FlashAttention: tiles, saves "
                           "only the (B, H, T) log-sum-exp)")
                ->check(parsed_by(parse_attention_kind, "{" + join(attention_kind_names()) + "}"));
        apply = [&v](Plan& p) { p.attention = parse_attention_kind(v.attention); };
        break;
      case PlanFlag::optimizer:
        v.optimizer = optimizer_name(d.optimizer.name);
        option = app.add_option("--optimizer", v.optimizer,
                                "sgd | sgd-momentum (momentum 0.9) | adamw | adamw-8bit | lion | "
                                "adam-mini | adafactor (lesson 09)")
                     ->check(parsed_by(parse_optimizer, "{" + join(optimizer_names()) + "}"));
        apply = [&v](Plan& p) { p.optimizer.name = parse_optimizer(v.optimizer); };
        break;
      case PlanFlag::learning_rate:
        v.learning_rate = d.optimizer.learning_rate;
        // Float flags are checked by validate() on the value as stored (a number beyond a
        // float's range is refused as typed by the command's own check first).
        option = app.add_option("--lr", v.learning_rate, "Learning rate (> 0)");
        apply = [&v](Plan& p) { p.optimizer.learning_rate = to_float(v.learning_rate, "--lr"); };
        break;
      case PlanFlag::block_size:
        v.block_size = d.optimizer.eight_bit.block_size;
        option = app.add_option("--block-size", v.block_size,
                                "adamw-8bit: elements per quantization block (bitsandbytes' 256)")
                     ->check(integer_in(1));
        apply = [&v](Plan& p) { p.optimizer.eight_bit.block_size = v.block_size; };
        break;
      case PlanFlag::min_8bit_size:
        v.min_8bit_size = d.optimizer.eight_bit.min_8bit_size;
        option = app.add_option("--min-8bit-size", v.min_8bit_size,
                                "adamw-8bit: tensors with fewer elements keep fp32 states "
                                "(bitsandbytes' 4096; needs a model's shapes)")
                     ->check(integer_in(0));
        apply = [&v](Plan& p) { p.optimizer.eight_bit.min_8bit_size = v.min_8bit_size; };
        break;
      case PlanFlag::fp32_embeddings:
        option = app.add_flag("--fp32-embeddings", v.fp32_embeddings,
                              "adamw-8bit: the embedding tables keep fp32 states (stable "
                              "embedding)");
        apply = [&v](Plan& p) { p.optimizer.eight_bit.fp32_embeddings = v.fp32_embeddings; };
        break;
      case PlanFlag::clip_grad_norm:
        v.clip_grad_norm = d.optimizer.max_grad_norm;
        option = app.add_option("--clip-grad-norm", v.clip_grad_norm,
                                "Clip the global gradient norm to this value after the unscale "
                                "(0: off)");
        apply = [&v](Plan& p) {
          p.optimizer.max_grad_norm = to_float(v.clip_grad_norm, "--clip-grad-norm");
        };
        break;
      case PlanFlag::loss_chunks:
        v.loss_chunks = d.activations.loss_chunks;
        option = app.add_option("--loss-chunks", v.loss_chunks,
                                "K: the cross-entropy over K slices of the tokens, saving no "
                                "(B, T, V) probabilities (the backward makes each slice's logits "
                                "again); 1: all at once")
                     ->check(integer_in(1, kMaxLossChunks));
        apply = [&v](Plan& p) { p.activations.loss_chunks = v.loss_chunks; };
        break;
      case PlanFlag::grad_accum:
        v.grad_accum = d.batch.grad_accum;
        option = app.add_option("--grad-accum", v.grad_accum,
                                "K micro-batches of --batch sequences per optimizer step")
                     ->check(integer_in(1, int64_t{1} << 24));
        apply = [&v](Plan& p) { p.batch.grad_accum = v.grad_accum; };
        break;
      case PlanFlag::zero:
        v.zero = static_cast<int64_t>(d.parallel.zero);
        option = app.add_option("--zero", v.zero,
                                "ZeRO stage: 0 DDP, 1 optimizer states, 2 + gradients, 3 + "
                                "parameters sharded over the data-parallel ranks")
                     ->check(integer_in(0, 3));
        apply = [&v](Plan& p) { p.parallel.zero = zero_stage_from_int(v.zero); };
        break;
      case PlanFlag::data_parallel:
        v.dp = d.parallel.data_parallel;
        option = app.add_option("--dp", v.dp, "Data-parallel degree Nd")->check(integer_in(1));
        apply = [&v](Plan& p) { p.parallel.data_parallel = v.dp; };
        break;
      case PlanFlag::tensor_parallel:
        v.tp = d.parallel.tensor_parallel;
        option = app.add_option("--tp", v.tp,
                                "Tensor-parallel degree t (Megatron): groups of t consecutive "
                                "ranks split every layer's linears")
                     ->check(integer_in(1));
        apply = [&v](Plan& p) { p.parallel.tensor_parallel = v.tp; };
        break;
      case PlanFlag::sequence_parallel:
        option =
            app.add_flag("--sp", v.sequence_parallel, "Sequence parallelism (Korthikanti et al.)");
        apply = [&v](Plan& p) { p.parallel.sequence_parallel = v.sequence_parallel; };
        break;
      case PlanFlag::prefetch:
        option = app.add_flag("--prefetch", v.prefetch,
                              "ZeRO-3: gather the next layer's parameters together with the "
                              "current one's");
        apply = [&v](Plan& p) { p.parallel.prefetch = v.prefetch; };
        break;
      case PlanFlag::offload:
        v.offload = std::string(offload_name(d.offload));
        option = app.add_option("--offload", v.offload,
                                "What lives in host memory: none | optimizer (states and master "
                                "weights) | params (ZeRO-3) | both")
                     ->check(parsed_by(parse_offload, "{none,optimizer,params,both}"));
        apply = [&v](Plan& p) {
          const OffloadPlan kept = p.offload;  // how it runs: the other --offload-* flags'
          p.offload = parse_offload(v.offload);
          p.offload.overlap = kept.overlap;
          p.offload.delay_update_from = kept.delay_update_from;
          p.offload.tiled_copy_back = kept.tiled_copy_back;
          p.offload.optimizer_device = kept.optimizer_device;
          p.offload.param_device = kept.param_device;
          p.offload.pin_memory = kept.pin_memory;
        };
        break;
      case PlanFlag::offload_overlap:
        v.offload_overlap = d.offload.overlap ? "on" : "off";
        option = app.add_option("--offload-overlap", v.offload_overlap,
                                "With --offload optimizer: on (each block's gradients copied to "
                                "the host on a copy stream while the blocks before it run "
                                "backward, as ZeRO-Offload) | off (all of them after the "
                                "backward, the copy fully exposed)")
                     ->check(CLI::IsMember({"on", "off"}));
        apply = [&v](Plan& p) { p.offload.overlap = v.offload_overlap == "on"; };
        break;
      case PlanFlag::offload_dpu:
        v.offload_dpu = delay_update_name(d.offload.delay_update_from);
        option = app.add_option("--offload-dpu", v.offload_dpu,
                                "With --offload optimizer: off | N (from step N on, the host's "
                                "update of a step runs beside the next step's forward and "
                                "backward, which use the parameters one update behind: "
                                "ZeRO-Offload's delayed parameter update)")
                     ->check(parsed_by(parse_delay_update, "{off,N}"));
        apply = [&v](Plan& p) { p.offload.delay_update_from = parse_delay_update(v.offload_dpu); };
        break;
      case PlanFlag::offload_copy_back:
        v.offload_copy_back = d.offload.tiled_copy_back ? "tiled" : "whole";
        option = app.add_option("--offload-copy-back", v.offload_copy_back,
                                "With --offload optimizer: whole (the parameters go back once the "
                                "host's update ends) | tiled (each finished tile of 128 Mi "
                                "parameters goes back while the host updates the next, as "
                                "ZeRO-Offload's CPU-Adam)")
                     ->check(CLI::IsMember({"whole", "tiled"}));
        apply = [&v](Plan& p) { p.offload.tiled_copy_back = v.offload_copy_back == "tiled"; };
        break;
      case PlanFlag::offload_optimizer_device:
        v.offload_optimizer_device = std::string(offload_device_name(d.offload.optimizer_device));
        option = app.add_option("--offload-optimizer-device", v.offload_optimizer_device,
                                "With --offload optimizer under --zero 3: cpu (the states in host "
                                "memory) | nvme (in files under --nvme-path, brought to host "
                                "memory one unit at a time for the update: ZeRO-Infinity)")
                     ->check(parsed_by(parse_offload_device, "{cpu,nvme}"));
        apply = [&v](Plan& p) {
          p.offload.optimizer_device = parse_offload_device(v.offload_optimizer_device);
        };
        break;
      case PlanFlag::offload_param_device:
        v.offload_param_device = std::string(offload_device_name(d.offload.param_device));
        option = app.add_option("--offload-param-device", v.offload_param_device,
                                "With --offload both and the optimizer's states on NVMe: cpu (the "
                                "parameters' shard in host memory) | nvme (a file per unit under "
                                "--nvme-path, read for each fetch: ZeRO-Infinity)")
                     ->check(parsed_by(parse_offload_device, "{cpu,nvme}"));
        apply = [&v](Plan& p) {
          p.offload.param_device = parse_offload_device(v.offload_param_device);
        };
        break;
      case PlanFlag::offload_pin_memory:
        v.offload_pin_memory = d.offload.pin_memory ? "on" : "off";
        option = app.add_option("--offload-pin-memory", v.offload_pin_memory,
                                "With --offload optimizer: on (the host's staged gradients and "
                                "parameters and the fp32 master in page-locked memory, each block "
                                "a power of two, as DeepSpeed's pin_memory) | off (pageable, exact "
                                "sizes)")
                     ->check(CLI::IsMember({"on", "off"}));
        apply = [&v](Plan& p) { p.offload.pin_memory = v.offload_pin_memory == "on"; };
        break;
      case PlanFlag::dropout:
        v.dropout = d.dropout.p;
        option = app.add_option("--dropout", v.dropout,
                                "Dropout probability of the attention probabilities and of both "
                                "residual branches, in [0, 1)");
        apply = [&v](Plan& p) {
          // A double the float cannot hold would become inf or 0 and pass or fail for the wrong
          // reason: the range is checked on the value as typed.
          check_dropout_probability(v.dropout);
          p.dropout.p = to_float(v.dropout, "--dropout");
        };
        break;
    }
    if (option == nullptr) throw std::logic_error("a PlanFlag without a flag");
    if (flag != PlanFlag::plan_file && option->get_items_expected_min() > 0)
      option->capture_default_str();
    option->group(group);
    if (!apply && flag != PlanFlag::plan_file)
      throw std::logic_error("a PlanFlag without an effect");
    options_.push_back({flag, option, std::move(apply)});
  }
}

namespace {

std::vector<PlanFlag> all_except(std::initializer_list<PlanFlag> except) {
  std::vector<PlanFlag> flags;
  for (const PlanFlag flag : kAllPlanFlags)
    if (std::find(except.begin(), except.end(), flag) == except.end()) flags.push_back(flag);
  return flags;
}

}  // namespace

std::vector<PlanFlag> train_plan_flags() {
  return all_except({PlanFlag::data_parallel, PlanFlag::sequence_parallel});
}

std::vector<PlanFlag> estimate_plan_flags() {
  return all_except({PlanFlag::stochastic_rounding, PlanFlag::loss_scale, PlanFlag::learning_rate,
                     PlanFlag::clip_grad_norm, PlanFlag::prefetch, PlanFlag::offload_overlap,
                     PlanFlag::offload_dpu, PlanFlag::offload_copy_back, PlanFlag::dropout});
}

PlanFlags::~PlanFlags() = default;

bool PlanFlags::given(PlanFlag flag) const {
  const auto it = std::find_if(options_.begin(), options_.end(),
                               [flag](const Entry& entry) { return entry.flag == flag; });
  return it != options_.end() && it->option->count() > 0;
}

Plan PlanFlags::plan() const {
  Plan p = given(PlanFlag::plan_file) ? read_plan_file(values_->plan_file, defaults_) : defaults_;
  for (const Entry& entry : options_)
    if (entry.apply && entry.option->count() > 0) entry.apply(p);
  validate(p);
  return p;
}

}  // namespace vramlab::plan
