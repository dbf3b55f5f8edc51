// Optimizer-state element counts from the tensors' shapes (see optimizer_state_counts.h).
#include "common/estimate/optimizer_state_counts.h"

#include <string>
#include <string_view>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

namespace {

// Adam-mini's v entries of one tensor: its blocks under the paper's partition.
int64_t adam_mini_blocks(const ModelConfig& model, const ParameterSpec& p) {
  if (p.shape.size() != 2) return 1;  // a norm weight or a bias
  const std::string_view name = p.name;
  // GPT-2's fused (H·hd + 2·Hkv·hd, C) projection: Q by head, K by head, V by output neuron.
  if (name.ends_with(".attn.qkv.weight"))
    return model.heads + model.kv_heads + model.kv_heads * model.head_dim();
  if (name.ends_with(".attn.q.weight")) return model.heads;
  if (name.ends_with(".attn.k.weight")) return model.kv_heads;
  return p.shape[0];  // one per row: an output neuron, or a token of an embedding or the head
}

bool is_embedding_table(std::string_view name) {
  return name == "wte" || name == "wpe" || name == "embed";
}

}  // namespace

OptimizerStateCounts optimizer_state_counts(const ModelConfig& model,
                                            const plan::EightBitOptions& eight_bit) {
  model.validate();
  eight_bit.validate();
  OptimizerStateCounts c;
  for (const ParameterSpec& p : model.parameters()) {
    const int64_t n = p.numel();
    c.adam_mini_v = checked_add(c.adam_mini_v, adam_mini_blocks(model, p), "Adam-mini v blocks");
    const int64_t adafactor =
        p.shape.size() == 2 ? checked_add(p.shape[0], p.shape[1], "Adafactor") : n;
    c.adafactor = checked_add(c.adafactor, adafactor, "Adafactor state elements");
    const bool fp32 =
        n < eight_bit.min_8bit_size || (eight_bit.fp32_embeddings && is_embedding_table(p.name));
    if (fp32) {
      c.eight_bit_fp32 = checked_add(c.eight_bit_fp32, n, "8-bit fp32 elements");
    } else {
      c.eight_bit_quantized = checked_add(c.eight_bit_quantized, n, "8-bit elements");
      c.eight_bit_absmax =
          checked_add(c.eight_bit_absmax, ceil_div(n, eight_bit.block_size), "8-bit blocks");
    }
  }
  return c;
}

}  // namespace vramlab::estimate
