// Known-wrong variant of exercise 09.3 (kept for `vramlab verify`, never linked into a lesson):
// counts the LM head's V rows even when it is tied to the token embedding (GPT-2), adding V blocks
// that do not exist.
// The exercise's tests must fail for it.
#include <algorithm>
#include <string>
#include <string_view>

#include "common/platform/errors.h"
#include "lessons/09-optimizer-memory/api/adam_mini_partition.h"

namespace vramlab::lesson09 {

namespace {

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

}  // namespace

std::vector<VBlockRun> adam_mini_runs(const ModelConfig& model, const ParameterSpec& tensor) {
  model.validate();
  const int64_t numel = tensor.numel();
  if (tensor.shape.size() != 2) return {{0, numel, 1}};  // a norm or a bias: one v
  const int64_t cols = tensor.shape[1];
  const int64_t head = model.head_dim() * cols;  // the rows of one head
  if (ends_with(tensor.name, ".attn.qkv.weight")) {
    // Q has `heads` heads; K and V have `kv_heads` (fewer under grouped-query attention).
    const int64_t k_offset = model.heads * head;
    const int64_t v_offset = k_offset + model.kv_heads * head;
    return {{0, head, model.heads},
            {k_offset, head, model.kv_heads},
            {v_offset, cols, model.kv_heads * model.head_dim()}};
  }
  if (ends_with(tensor.name, ".attn.q.weight")) return {{0, head, model.heads}};
  if (ends_with(tensor.name, ".attn.k.weight")) return {{0, head, model.kv_heads}};
  return {{0, cols, tensor.shape[0]}};  // output neurons, or tokens: one v per row
}

int64_t adam_mini_v_count(const ModelConfig& model) {
  // Every tensor's blocks, and one v per token for the LM head.
  int64_t count = 0;
  for (const ParameterSpec& tensor : model.parameters())
    if (tensor.name != "lm_head.weight")
      for (const VBlockRun& run : adam_mini_runs(model, tensor)) count += run.count;
  return count + model.vocab;
}

void adam_mini_v_step(std::span<float> v, std::span<const float> grad,
                      std::span<const VBlockRun> runs, float beta2) {
  int64_t blocks = 0, elements = 0;
  for (const VBlockRun& run : runs) {
    blocks += run.count;
    elements = std::max(elements, run.offset + run.block_size * run.count);
  }
  if (static_cast<int64_t>(v.size()) != blocks || static_cast<int64_t>(grad.size()) != elements)
    throw UsageError("adam_mini_v_step: the runs cover " + std::to_string(elements) +
                     " elements in " + std::to_string(blocks) + " blocks, but grad has " +
                     std::to_string(grad.size()) + " and v " + std::to_string(v.size()));
  size_t b = 0;
  for (const VBlockRun& run : runs)
    for (int64_t k = 0; k < run.count; ++k, ++b) {
      const int64_t first = run.offset + k * run.block_size;
      float sum = 0.0f;  // in f32 and in element order, as the runtime's kernel sums
      for (int64_t i = first; i < first + run.block_size; ++i) {
        const float g = grad[static_cast<size_t>(i)];
        sum += g * g;
      }
      // The mean, not the sum: a block's v must be on the scale of one element's g².
      const float mean = sum / static_cast<float>(run.block_size);
      v[b] = beta2 * v[b] + (1.0f - beta2) * mean;
    }
}

}  // namespace vramlab::lesson09
