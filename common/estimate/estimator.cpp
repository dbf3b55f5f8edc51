// The estimator: model states per ZeRO stage (generalised by bytes per parameter), activations per
// Korthikanti et al. Table 2, the runtime's own activation layout, and host offload.
#include "common/estimate/estimator.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <string>

#include "common/amp/precision_policy.h"
#include "common/dist/shard_layout.h"
#include "common/estimate/optimizer_state_counts.h"
#include "common/estimate/recompute_costs.h"
#include "common/estimate/runtime_activations.h"
#include "common/model/checked_int.h"
#include "common/platform/errors.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::estimate {

namespace {

// Bytes per parameter, printed as briefly as it is exact enough: 2, 12, 2.03125.
std::string per_param(int64_t bytes, int64_t params) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g",
                static_cast<double>(bytes) / static_cast<double>(params));
  return text;
}

const char* kZero = "ZeRO (Rajbhandari et al. 2020) ";

std::string stage_label(int64_t stage) {
  switch (stage) {
    case 0:
      return std::string(kZero) + "§3.1 (DP baseline)";
    case 1:
      return std::string(kZero) + "§5.1 (P_os)";
    case 2:
      return std::string(kZero) + "§5.2 (P_os+g)";
    default:
      return std::string(kZero) + "§5.3 (P_os+g+p)";
  }
}

// The stage's whole formula with this run's bytes per parameter, e.g. "4Ψ + 12Ψ/Nd".
std::string stage_formula(int64_t stage, const std::string& p, const std::string& g,
                          const std::string& k, double pg) {
  char sum[32];
  std::snprintf(sum, sizeof sum, "%.6g", pg);
  switch (stage) {
    case 0:
      return "(" + p + " + " + g + " + " + k + ")Ψ";
    case 1:
      return std::string(sum) + "Ψ + " + k + "Ψ/Nd";
    case 2:
      return p + "Ψ + (" + g + " + " + k + ")Ψ/Nd";
    default:
      return "(" + p + " + " + g + " + " + k + ")Ψ/Nd";
  }
}

std::string optimizer_source(const EstimateInputs& in, const ModelStateBytes& states,
                             int64_t params) {
  std::string what;
  switch (in.plan.optimizer.name) {
    case Optimizer::sgd:
      what = "SGD keeps no state";
      break;
    case Optimizer::sgd_momentum:
      what = "SGD momentum " + per_param(states.optimizer_moments, params);
      break;
    case Optimizer::adamw:
      what = "AdamW m, v " + per_param(states.optimizer_moments, params);
      break;
    case Optimizer::adamw_8bit:
      what = "8-bit block-wise AdamW (Dettmers et al. 2022; bitsandbytes B=" +
             std::to_string(in.plan.optimizer.eight_bit.block_size) +
             ") 2 + 8/B = " + per_param(states.optimizer_moments, params);
      break;
    case Optimizer::lion:
      what = "Lion (Chen et al. 2023) momentum " + per_param(states.optimizer_moments, params);
      break;
    case Optimizer::adam_mini:
      what = "Adam-mini (Zhang et al. 2024) m + block v " +
             per_param(states.optimizer_moments, params);
      break;
    case Optimizer::adafactor:
      what = "Adafactor (Shazeer & Stern 2018) factored v " +
             per_param(states.optimizer_moments, params);
      break;
  }
  if (states.master_weights > 0) what = "fp32 master 4 + " + what;
  return "K = " + per_param(states.optimizer_states(), params) + " (" + what + ")";
}

}  // namespace

plan::Plan default_estimate_plan() {
  plan::Plan plan;
  plan.amp.precision = plan::Precision::mixed_bf16;
  return plan;
}

Estimate estimate_memory(const EstimateInputs& in) {
  const plan::Plan& plan = in.plan;
  const plan::ParallelPlan& parallel = plan.parallel;
  require_positive(in.micro_batch, "micro-batch");
  if (in.seq < 0)
    throw UsageError("sequence length must be positive, got " + std::to_string(in.seq));
  plan::validate(plan);

  Estimate out;
  ModelStateOptions options;
  options.precision = plan.amp.precision;
  options.optimizer = plan.optimizer.name;
  options.quantization_block_size = plan.optimizer.eight_bit.block_size;
  options.fp32_gradients = plan.amp.fp32_grads;
  if (in.model) {
    const ModelConfig& m = *in.model;
    m.validate();
    out.parameter_count = m.parameter_count();
    m.validate_tensor_parallel(parallel.tensor_parallel);
    out.seq = in.seq == 0 ? m.max_seq : in.seq;
    if (m.learned_position_embeddings && out.seq > m.max_seq)
      throw UsageError("sequence length " + std::to_string(out.seq) + " exceeds model '" + m.name +
                       "' position table (" + std::to_string(m.max_seq) + ")");
    const OptimizerStateCounts counts = optimizer_state_counts(m, plan.optimizer.eight_bit);
    options.adam_mini_v_blocks = counts.adam_mini_v;
    options.adafactor_state_elements = counts.adafactor;
    options.eight_bit_absmax_blocks = counts.eight_bit_absmax;
    options.eight_bit_fp32_elements = counts.eight_bit_fp32;
  } else {
    out.parameter_count = in.parameter_count;
    require_positive(in.parameter_count, "parameter count");
  }
  if (parallel.sequence_parallel && in.model && out.seq % parallel.tensor_parallel != 0)
    throw UsageError("sequence parallelism needs the tensor-parallel degree (" +
                     std::to_string(parallel.tensor_parallel) +
                     ") to divide the sequence length (" + std::to_string(out.seq) + ")");

  // Model states of one tensor-parallel rank's share, then ZeRO partitioning over Nd. With shapes
  // the share is exact (Megatron's split, the replicated tensors whole); with Ψ alone, Ψ/t.
  const int64_t psi = out.parameter_count;
  out.unpartitioned = model_state_bytes(psi, options);
  const int64_t rank_params = in.model ? in.model->rank_parameter_count(parallel.tensor_parallel)
                                       : ceil_div(psi, parallel.tensor_parallel);
  ModelStateOptions rank_options = options;
  rank_options.adam_mini_v_blocks = ceil_div(options.adam_mini_v_blocks, parallel.tensor_parallel);
  rank_options.adafactor_state_elements =
      ceil_div(options.adafactor_state_elements, parallel.tensor_parallel);
  if (options.eight_bit_absmax_blocks >= 0)
    rank_options.eight_bit_absmax_blocks =
        ceil_div(options.eight_bit_absmax_blocks, parallel.tensor_parallel);
  rank_options.eight_bit_fp32_elements =
      std::min(rank_params, ceil_div(options.eight_bit_fp32_elements, parallel.tensor_parallel));
  const ModelStateBytes rank = model_state_bytes(rank_params, rank_options);
  const int64_t nd = parallel.data_parallel;
  const auto stage = static_cast<int64_t>(parallel.zero);
  out.parameters.bytes = stage >= 3 ? ceil_div(rank.parameters, nd) : rank.parameters;
  out.gradients.bytes = stage >= 2 ? ceil_div(rank.gradients, nd) : rank.gradients;
  out.optimizer_states.bytes =
      stage >= 1 ? ceil_div(rank.optimizer_states(), nd) : rank.optimizer_states();
  out.master_weight_bytes = stage >= 1 ? ceil_div(rank.master_weights, nd) : rank.master_weights;
  // The runtime's ZeRO (common/dist/data_parallel.h) shards elementwise optimizers over FSDP's
  // padded units (dist::ShardLayout): Ψ' = Σ ⌈n_u/Nd⌉·Nd elements, a shard of Ψ'/Nd. With
  // shapes the units are the model's (embedding, each block, head); without, one unit of Ψ.
  // The padding is fewer than Nd elements per unit, invisible in the paper's figures, but this
  // is what every rank's allocator holds, to the byte.
  const bool elementwise =
      plan.optimizer.name == Optimizer::sgd || plan.optimizer.name == Optimizer::sgd_momentum ||
      plan.optimizer.name == Optimizer::adamw || plan.optimizer.name == Optimizer::lion;
  // Elements of this rank's optimizer partition: what an offloaded step stages on the host.
  int64_t state_elements = stage >= 1 ? ceil_div(rank_params, nd) : rank_params;
  if (stage >= 1 && elementwise) {
    // Every tensor-parallel rank's part has the same shapes: rank 0's units are everyone's.
    const int64_t padded =
        in.model ? dist::ShardLayout(in.model->parameters(0, parallel.tensor_parallel), nd)
                       .padded_numel()
                 : checked_mul(ceil_div(rank_params, nd), nd, "padded parameter count");
    const int64_t shard = padded / nd;
    state_elements = shard;
    // Per element, exact for the elementwise optimizers: e.g. 2 + 2 + (4 + 8) for mixed AdamW.
    const int64_t p_e = rank.parameters / rank_params, g_e = rank.gradients / rank_params;
    const int64_t k_e = rank.optimizer_states() / rank_params,
                  m_e = rank.master_weights / rank_params;
    out.parameters.bytes = checked_mul(p_e, stage >= 3 ? shard : padded, "parameter bytes");
    out.gradients.bytes = checked_mul(g_e, stage >= 2 ? shard : padded, "gradient bytes");
    out.optimizer_states.bytes = checked_mul(k_e, shard, "optimizer-state bytes");
    out.master_weight_bytes = checked_mul(m_e, shard, "master-weight bytes");
  }

  const std::string p = per_param(rank.parameters, rank_params);
  const std::string g = per_param(rank.gradients, rank_params);
  const std::string k = per_param(rank.optimizer_states(), rank_params);
  const double pg =
      static_cast<double>(rank.parameters + rank.gradients) / static_cast<double>(rank_params);
  const std::string head = stage_label(stage) + ", " + stage_formula(stage, p, g, k, pg) + ": ";
  const std::string psi_note =
      parallel.tensor_parallel == 1 ? ""
      : in.model ? " (Ψ is one tensor-parallel rank's " + std::to_string(rank_params) +
                       " parameters: split linears /t, norms, embeddings, head and row-parallel "
                       "biases whole)"
                 : " (Ψ/t per tensor-parallel rank)";
  out.parameters.source = head + "parameters " + p + (stage >= 3 ? "Ψ/Nd" : "Ψ") + psi_note;
  out.gradients.source = head + "gradients " + g + (stage >= 2 ? "Ψ/Nd" : "Ψ") + psi_note;
  out.optimizer_states.source = head + "optimizer states " + k + (stage >= 1 ? "Ψ/Nd" : "Ψ") +
                                ", " + optimizer_source(in, rank, rank_params) + psi_note;

  // Host offload.
  std::string host;
  std::vector<int64_t> unit_shards;  // (units) s_u, with anything on NVMe
  if (plan.offload.optimizer) {
    // The step runs on the host over this rank's partition: its gradients come down and its
    // updated parameters go up through copies staged there, in their own dtypes.
    out.host_optimizer_state_bytes = out.optimizer_states.bytes;
    out.host_gradient_bytes =
        checked_mul(rank.gradients / rank_params, state_elements, "host gradient bytes");
    if (!plan.offload.parameters)
      out.host_parameter_bytes =
          checked_mul(rank.parameters / rank_params, state_elements, "host parameter bytes");
    out.optimizer_states.source += "; offloaded to the host (ZeRO-Offload)";
    out.optimizer_states.bytes = 0;
    if (stage >= 2) {
      // Each unit's reduced shard goes to the host as the backward makes it: the device holds
      // gradients only while a unit's backward runs (not a model state kept across the step).
      out.gradients.bytes = 0;
      out.gradients.source += "; each reduced shard offloaded to the host as it is made";
    }
    out.master_weight_bytes = 0;
    host = "optimizer states, staged gradients" +
           std::string(plan.offload.parameters ? "" : " and parameters");
  }
  if (plan.offload.parameters) {
    out.host_parameter_bytes = out.parameters.bytes;
    out.parameters.bytes = 0;
    out.parameters.source +=
        "; offloaded to the host (ZeRO-Infinity): a unit is on the GPU only while gathered, "
        "working memory as under ZeRO-3 without offload";
    host += host.empty() ? "parameters" : " and parameters";
  }
  const auto nvme_file = [](int64_t bytes) { return ceil_div(bytes, int64_t{4096}) * 4096; };
  if (plan.offload.optimizer_device == plan::OffloadDevice::nvme ||
      plan.offload.param_device == plan::OffloadDevice::nvme) {
    if (in.model) {
      const dist::ShardLayout layout(in.model->parameters(0, parallel.tensor_parallel), nd);
      for (const dist::ShardUnit& u : layout.units()) unit_shards.push_back(u.shard_numel);
    } else {
      unit_shards.push_back(state_elements);
    }
  }
  if (plan.offload.param_device == plan::OffloadDevice::nvme) {
    // ZeRO-Infinity's parameters on NVMe (DeepSpeed's offload_param.device: nvme): a file per
    // unit shard s_u in the parameters' dtype, each rounded up to 4096 bytes; the host holds one
    // unit's shard at a time, read for a fetch (until the device's copy of it) or for an update.
    const int64_t p_e = rank.parameters / rank_params;
    int64_t largest = 0;
    for (const int64_t s_u : unit_shards) {
      largest = std::max(largest, s_u);
      out.nvme_parameter_bytes = checked_add(
          out.nvme_parameter_bytes, nvme_file(checked_mul(p_e, s_u, "NVMe bytes")), "NVMe bytes");
    }
    out.host_parameter_bytes = checked_mul(p_e, largest, "host parameter bytes");
    out.parameters.source += "; on NVMe, a file per unit, one unit at a time on the host";
  }
  if (plan.offload.optimizer_device == plan::OffloadDevice::nvme) {
    // ZeRO-Infinity's states on NVMe (DeepSpeed's offload_optimizer.device: nvme, ZeRO-3 only):
    // a file per state (the fp32 master, each moment) and unit shard s_u, each rounded up to the
    // 4096 bytes O_DIRECT aligns to; the host holds two units' states, the one being updated and
    // the next being read.
    const int64_t moments = plan.optimizer.name == Optimizer::adamw ? 2
                            : plan.optimizer.name == Optimizer::sgd ? 0
                                                                    : 1;
    const int64_t master_e = rank.master_weights / rank_params;
    const int64_t moment_e = moments > 0 ? rank.optimizer_moments / rank_params / moments : 0;
    const auto& file = nvme_file;
    int64_t largest = 0;
    for (const int64_t s_u : unit_shards) {
      largest = std::max(largest, s_u);
      if (master_e > 0)
        out.nvme_optimizer_state_bytes =
            checked_add(out.nvme_optimizer_state_bytes,
                        file(checked_mul(master_e, s_u, "NVMe bytes")), "NVMe bytes");
      for (int64_t m = 0; m < moments; ++m)
        out.nvme_optimizer_state_bytes =
            checked_add(out.nvme_optimizer_state_bytes,
                        file(checked_mul(moment_e, s_u, "NVMe bytes")), "NVMe bytes");
    }
    out.host_optimizer_state_bytes =
        checked_mul(2 * (master_e + moments * moment_e), largest, "host staging bytes");
    out.optimizer_states.source +=
        "; on NVMe, a file per state and unit, two units' states staged on the host "
        "(ZeRO-Infinity)";
  }
  if (plan.offload.optimizer && plan.offload.pin_memory) {
    // DeepSpeed's pin_memory (stage_1_and_2.py pins the fp32 partition, the 16-bit parameter
    // buffer and the gradient partition; CPU-Adam's moments are pageable): page-locked blocks,
    // each rounded up to a power of two by PyTorch's CachingHostAllocator. The runtime pins its
    // staged gradients and parameters and its master (which under NVMe is staged per unit).
    const auto block = [](int64_t bytes) {
      return bytes > 0 ? static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(bytes))) : 0;
    };
    const bool master =
        rank.master_weights > 0 && plan.offload.optimizer_device != plan::OffloadDevice::nvme;
    out.host_pinned_requested_bytes =
        checked_add(out.host_gradient_bytes, plan.offload.parameters ? 0 : out.host_parameter_bytes,
                    "pinned bytes");
    out.host_pinned_bytes =
        checked_add(block(out.host_gradient_bytes),
                    plan.offload.parameters ? 0 : block(out.host_parameter_bytes), "pinned bytes");
    if (master) {
      const int64_t master_bytes =
          checked_mul(rank.master_weights / rank_params, state_elements, "master bytes");
      out.host_pinned_requested_bytes =
          checked_add(out.host_pinned_requested_bytes, master_bytes, "pinned bytes");
      out.host_pinned_bytes =
          checked_add(out.host_pinned_bytes, block(master_bytes), "pinned bytes");
    }
  }
  out.cpu_offload_bytes = checked_add(
      checked_add(out.host_optimizer_state_bytes, out.host_gradient_bytes, "host bytes"),
      out.host_parameter_bytes, "host bytes");
  out.cpu_offload_source =
      host.empty() ? "nothing offloaded" : "the " + host + " partition of this device, on the host";

  // Activations.
  if (in.model) {
    const ModelConfig& m = *in.model;
    const int64_t e = activation_element_bytes(plan.amp.precision);
    const DType runtime_dtype = amp::precision_policy(plan.amp.precision).activations;
    const int64_t chunks = plan.activations.loss_chunks;
    const recompute::ChainCosts runtime_chain =
        runtime_chain_costs(m, in.micro_batch, out.seq, runtime_dtype, plan.attention, chunks);
    out.runtime_schedule = recompute::make_schedule(plan.recompute, runtime_chain);
    out.runtime_schedule_peak_bytes =
        recompute::activation_peak_bytes(runtime_chain, out.runtime_schedule);
    out.recomputed_forward_fraction = recomputed_forward_fraction(
        m, in.micro_batch, out.seq, out.runtime_schedule, plan.attention);
    out.runtime_bytes_after_forward = runtime_bytes_after_forward(
        m, in.micro_batch, out.seq, out.runtime_schedule, plan.activations.compression,
        runtime_dtype, plan.attention, chunks);
    if (plan.activations.offload) {
      const OffloadedActivationBytes offloaded = runtime_offloaded_activation_bytes(
          m, in.micro_batch, out.seq, out.runtime_schedule, runtime_dtype, plan.attention, chunks);
      out.runtime_bytes_after_forward = offloaded.device;
      out.runtime_schedule_peak_bytes = offloaded.device_peak;
      out.host_activation_bytes = offloaded.host_pinned;
      out.host_activation_requested_bytes = offloaded.host_requested;
    }
    using Kind = recompute::RecomputeSpec::Kind;
    const Kind kind = plan.recompute.kind;
    const bool table_row = kind == Kind::none || kind == Kind::selective || kind == Kind::full;
    auto per_layer = [&](Recompute recompute) {
      return korthikanti_activation_bytes_per_layer(
          select_activation_row(parallel.tensor_parallel, parallel.sequence_parallel, recompute),
          {out.seq, in.micro_batch, m.hidden, m.heads, parallel.tensor_parallel, e});
    };
    // FlashAttention keeps no s×s tensor: Korthikanti et al.'s 5as/h term is gone, which is their
    // selective row (the same bytes with or without selective recompute).
    const bool flash = plan.attention == AttentionKind::flash;
    const Recompute paper_recompute = kind == Kind::full                 ? Recompute::full
                                      : kind == Kind::selective || flash ? Recompute::selective
                                                                         : Recompute::none;
    const ActivationRow row = select_activation_row(parallel.tensor_parallel,
                                                    parallel.sequence_parallel, paper_recompute);
    out.has_activations = true;
    out.activation_bytes_per_layer = per_layer(paper_recompute);
    out.activations.bytes =
        checked_mul(out.activation_bytes_per_layer, m.layers, "activation bytes");
    if (!table_row) {
      // The paper's bytes per layer (kept without recompute, under selective, and the layer input
      // a full recompute keeps) through the same peak model as the runtime's schedule.
      recompute::ChainCosts paper_chain = runtime_chain;
      for (recompute::LayerCosts& layer : paper_chain.layers) {
        layer.saved_bytes = per_layer(flash ? Recompute::selective : Recompute::none);
        layer.selective_bytes = per_layer(Recompute::selective);
        layer.output_bytes = per_layer(Recompute::full);
      }
      paper_chain.before_bytes = 0;  // the paper counts the layers only
      paper_chain.head_bytes = 0;
      out.activations.bytes = recompute::activation_peak_bytes(paper_chain, out.runtime_schedule);
    }
    out.activations.source =
        (table_row ? korthikanti_formula(row, e)
                   : "Korthikanti et al. per-layer bytes (none, selective, full rows) under the " +
                         recompute::to_string(plan.recompute) + " schedule " +
                         recompute::schedule_pattern(out.runtime_schedule) +
                         ", at its peak (a span's re-run forward included)") +
        " (s=" + std::to_string(out.seq) + ", b=" + std::to_string(in.micro_batch) +
        ", h=" + std::to_string(m.hidden) + ", a=" + std::to_string(m.heads) +
        ", t=" + std::to_string(parallel.tensor_parallel) + ", L=" + std::to_string(m.layers) + ")";
    if (flash && kind != Kind::full)
      out.activations.source +=
          "; FlashAttention saves no s×s tensor, so the paper's selective row applies";
    if (plan.activations.offload) {
      // On the device: the layer whose backward runs and the next one, prefetched; under a
      // recompute span, the span's re-run layers and the checkpoint prefetched before it.
      int64_t longest_span = 0, span = 0;
      bool kept_layers = false;
      for (const recompute::LayerPlan& layer : out.runtime_schedule.layers) {
        if (layer.recompute != recompute::LayerRecompute::full) {
          kept_layers = true;
          span = 0;
          continue;
        }
        span = layer.span_start ? 1 : span + 1;
        longest_span = std::max(longest_span, span);
      }
      const int64_t kept = per_layer(
          plan.recompute.kind == Kind::selective || flash ? Recompute::selective : Recompute::none);
      const int64_t in_span = per_layer(flash ? Recompute::selective : Recompute::none);
      out.activations.bytes = std::max(
          kept_layers ? checked_mul(kept, 2, "activation bytes") : 0,
          longest_span == 0 ? 0
                            : checked_add(checked_mul(in_span, longest_span, "activation bytes"),
                                          per_layer(Recompute::full), "activation bytes"));
      out.activations.source +=
          "; offloaded (--offload-activations on): the device holds the layer in its backward "
          "and the one prefetched, or a recomputed span and the checkpoint before it";
    }
    if (m.mlp != MlpKind::gelu || m.ffn_hidden != 4 * m.hidden || m.kv_heads != m.heads)
      out.activations.source +=
          "; the paper assumes a 4h GeLU MLP and full multi-head attention, so for this model it "
          "is an approximation (see the runtime-layout column)";
    out.runtime_activation_bytes_per_layer = runtime_activation_bytes_per_layer(
        m, in.micro_batch, out.seq, runtime_dtype, plan.attention);
    out.runtime_activation_bytes = runtime_activation_bytes_total(
        m, in.micro_batch, out.seq, runtime_dtype, plan.attention, plan.activations.loss_chunks);
    out.runtime_activation_source =
        "vramlab runtime layout: L × " + std::string(model_family_name(m.family)) +
        " Block saved tensors + embedding, final norm, " +
        (plan.activations.loss_chunks > 1
             ? "losses (the loss in " + std::to_string(plan.activations.loss_chunks) +
                   " chunks: no probs); "
             : std::string("probs, losses; ")) +
        std::string(dtype_name(runtime_dtype)) + (flash ? ", flash attention" : "") +
        ", one device, no TP/SP, no recompute";
  } else {
    out.activations.source = "not estimated: a parameter count alone gives no shapes";
    out.runtime_activation_source = out.activations.source;
  }

  const char* what = "total bytes";
  out.total_bytes =
      checked_add(checked_add(checked_add(out.parameters.bytes, out.gradients.bytes, what),
                              out.optimizer_states.bytes, what),
                  out.activations.bytes, what);
  return out;
}

int64_t parse_parameter_count(std::string_view text) {
  const std::string shown(text);
  auto bad = [&shown](const std::string& why) {
    return UsageError("invalid parameter count '" + shown + "': " + why +
                      " (expected e.g. 124439808, 7.5e9 or 7.5B)");
  };
  // Exact decimal: digits with an optional fraction, then an exponent and/or a K/M/B/T suffix.
  size_t i = 0;
  int64_t digits = 0;
  int64_t fraction_digits = 0;
  bool any_digit = false;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    any_digit = true;
    if (__builtin_mul_overflow(digits, 10, &digits) ||
        __builtin_add_overflow(digits, c - '0', &digits))
      throw bad("too large");
    if (in_fraction) ++fraction_digits;
  }
  if (!any_digit) throw bad("no digits");
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool any = false;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      any = true;
      exponent = exponent * 10 + (text[i] - '0');
      if (exponent > 30) throw bad("too large");
    }
    if (!any) throw bad("no exponent digits");
  }
  if (i < text.size()) {
    const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    const int64_t scale = suffix == 'K'   ? 3
                          : suffix == 'M' ? 6
                          : suffix == 'B' ? 9
                          : suffix == 'T' ? 12
                                          : -1;
    if (scale < 0 || i + 1 != text.size()) throw bad("unexpected '" + shown.substr(i) + "'");
    exponent += scale;
  }
  int64_t shift = exponent - fraction_digits;
  for (; shift > 0; --shift)
    if (__builtin_mul_overflow(digits, 10, &digits)) throw bad("too large");
  for (; shift < 0; ++shift) {
    if (digits % 10 != 0) throw bad("not a whole number");
    digits /= 10;
  }
  if (digits <= 0) throw bad("must be positive");
  return digits;
}

}  // namespace vramlab::estimate
