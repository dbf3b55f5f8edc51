// The optimizers' state layout over a model's tensors (see state_layout.h).
#include "common/optim/state_layout.h"

#include <string>
#include <string_view>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::optim {

namespace {

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

bool is_embedding_table(std::string_view name) {
  return name == "wte" || name == "wpe" || name == "embed";
}

// Adam-mini's partition of one tensor (Zhang et al. 2024, §2.3), as runs of equal blocks.
std::vector<BlockRun> adam_mini_runs(const ModelConfig& model, const ParameterSpec& p,
                                     int64_t numel) {
  if (p.shape.size() != 2) return {{0, numel, 1}};  // norms and biases: one v per tensor
  const int64_t cols = p.shape[1];
  const int64_t head_rows = model.head_dim();  // rows of one head in Q, K and V
  const int64_t head_block = head_rows * cols;
  if (ends_with(p.name, ".attn.qkv.weight")) {
    // (H·hd + 2·Hkv·hd, C): Q and K by head, V by output neuron.
    const int64_t k_offset = model.heads * head_block;
    const int64_t v_offset = k_offset + model.kv_heads * head_block;
    return {{0, head_block, model.heads},
            {k_offset, head_block, model.kv_heads},
            {v_offset, cols, model.kv_heads * head_rows}};
  }
  if (ends_with(p.name, ".attn.q.weight")) return {{0, head_block, model.heads}};
  if (ends_with(p.name, ".attn.k.weight")) return {{0, head_block, model.kv_heads}};
  return {{0, cols, p.shape[0]}};  // by row: output neurons, tokens
}

}  // namespace

std::vector<TensorStateLayout> optimizer_state_layout(const ModelConfig& model,
                                                      const plan::EightBitOptions& eight_bit) {
  model.validate();
  eight_bit.validate();
  std::vector<TensorStateLayout> layout;
  int64_t offset = 0;
  for (const ParameterSpec& p : model.parameters()) {
    TensorStateLayout t;
    t.name = p.name;
    t.shape = p.shape;
    t.offset = offset;
    t.numel = p.numel();
    t.eight_bit_quantized = t.numel >= eight_bit.min_8bit_size &&
                            !(eight_bit.fp32_embeddings && is_embedding_table(p.name));
    t.absmax_blocks = t.eight_bit_quantized ? ceil_div(t.numel, eight_bit.block_size) : 0;
    t.adam_mini_runs = adam_mini_runs(model, p, t.numel);
    t.adafactor_factored = p.shape.size() == 2;
    t.rows = t.adafactor_factored ? p.shape[0] : 1;
    t.cols = t.adafactor_factored ? p.shape[1] : t.numel;
    offset = checked_add(offset, t.numel, "parameter count");
    layout.push_back(std::move(t));
  }
  return layout;
}

StateTotals state_totals(const std::vector<TensorStateLayout>& layout) {
  StateTotals c;
  for (const TensorStateLayout& t : layout) {
    for (const BlockRun& run : t.adam_mini_runs)
      c.adam_mini_v = checked_add(c.adam_mini_v, run.count, "Adam-mini v blocks");
    c.adafactor = checked_add(
        c.adafactor, t.adafactor_factored ? checked_add(t.rows, t.cols, "Adafactor") : t.numel,
        "Adafactor state elements");
    if (t.eight_bit_quantized) {
      c.eight_bit_quantized = checked_add(c.eight_bit_quantized, t.numel, "8-bit elements");
      c.eight_bit_absmax = checked_add(c.eight_bit_absmax, t.absmax_blocks, "8-bit blocks");
    } else {
      c.eight_bit_fp32 = checked_add(c.eight_bit_fp32, t.numel, "8-bit fp32 elements");
    }
  }
  return c;
}

}  // namespace vramlab::optim
