// Model-state bytes per precision and optimizer (ZeRO's 2Ψ + 2Ψ + KΨ, generalised).
#include "common/estimate/model_state_memory.h"

#include <string>
#include <utility>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

namespace {

constexpr std::pair<std::string_view, Optimizer> kOptimizers[] = {
    {"sgd", Optimizer::sgd},     {"sgd-momentum", Optimizer::sgd_momentum},
    {"adamw", Optimizer::adamw}, {"adamw-8bit", Optimizer::adamw_8bit},
    {"lion", Optimizer::lion},   {"adam-mini", Optimizer::adam_mini},
};

template <typename Table>
std::string names_of(const Table& table) {
  std::string names;
  for (const auto& [name, value] : table) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

}  // namespace

int64_t activation_element_bytes(Precision precision) {
  return precision == Precision::fp32 ? 4 : 2;
}

Optimizer parse_optimizer(std::string_view name) {
  for (const auto& [text, value] : kOptimizers)
    if (text == name) return value;
  throw UsageError("unknown optimizer '" + std::string(name) +
                   "' (expected one of: " + names_of(kOptimizers) + ")");
}

std::string_view optimizer_name(Optimizer optimizer) {
  for (const auto& [text, value] : kOptimizers)
    if (value == optimizer) return text;
  throw std::logic_error("optimizer_name: invalid Optimizer");
}

ModelStateBytes model_state_bytes(int64_t parameter_count, const ModelStateOptions& options) {
  const int64_t n = parameter_count;
  if (n <= 0) throw UsageError("parameter count must be positive, got " + std::to_string(n));
  if (options.quantization_block_size <= 0)
    throw UsageError("quantization block size must be positive, got " +
                     std::to_string(options.quantization_block_size));
  if (options.adam_mini_v_blocks < 0)
    throw UsageError("Adam-mini v blocks must be non-negative, got " +
                     std::to_string(options.adam_mini_v_blocks));
  const bool mixed = is_mixed(options.precision);
  if (options.fp32_gradients && !mixed)
    throw UsageError("fp32 gradients only apply to mixed precision, not '" +
                     std::string(precision_name(options.precision)) + "'");

  const int64_t working_bytes = options.precision == Precision::fp32 ? 4 : 2;
  const int64_t state_element_bytes = options.precision == Precision::bf16 ? 2 : 4;
  ModelStateBytes out;
  out.parameters = checked_mul(n, working_bytes, "parameter bytes");
  out.gradients = checked_mul(n, options.fp32_gradients ? 4 : working_bytes, "gradient bytes");
  out.master_weights = mixed ? checked_mul(n, 4, "master weight bytes") : 0;
  const char* what = "optimizer state bytes";
  switch (options.optimizer) {
    case Optimizer::sgd:
      out.optimizer_moments = 0;
      break;
    case Optimizer::sgd_momentum:
    case Optimizer::lion:
      out.optimizer_moments = checked_mul(n, state_element_bytes, what);
      break;
    case Optimizer::adamw:
      out.optimizer_moments = checked_mul(checked_mul(n, 2, what), state_element_bytes, what);
      break;
    case Optimizer::adamw_8bit: {
      // Two 1-byte states, and per state one fp32 absmax for every block of B elements.
      const int64_t blocks = ceil_div(n, options.quantization_block_size);
      out.optimizer_moments =
          checked_add(checked_mul(n, 2, what), checked_mul(blocks, 8, what), what);
      break;
    }
    case Optimizer::adam_mini:
      out.optimizer_moments =
          checked_mul(checked_add(n, options.adam_mini_v_blocks, what), state_element_bytes, what);
      break;
  }
  return out;
}

int64_t adam_mini_v_blocks(const ModelConfig& model) {
  int64_t blocks = 0;
  for (const ParameterSpec& p : model.parameters()) {
    const auto ends_with = [&p](std::string_view tail) {
      return p.name.size() >= tail.size() &&
             std::string_view(p.name).substr(p.name.size() - tail.size()) == tail;
    };
    int64_t here = 1;  // norms and biases: one per tensor
    if (ends_with(".attn.qkv.weight")) {
      here = 2 * model.heads + model.hidden;  // Q and K by head, V by output neuron
    } else if (ends_with(".attn.q.weight") || ends_with(".attn.k.weight")) {
      here = ends_with(".attn.q.weight") ? model.heads : model.kv_heads;  // by head
    } else if (p.shape.size() == 2) {
      here = p.shape[0];  // embeddings and output by token, the rest by output neuron
    }
    blocks = checked_add(blocks, here, "Adam-mini v blocks");
  }
  return blocks;
}

}  // namespace vramlab::estimate
