// Known-wrong variant of exercise 01.2 (kept for `vramlab verify`, never linked into a lesson):
// forgets the (B,H,T,T) attention matrices.
// The exercise's tests must fail for it.
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/layer_activations.h"

namespace vramlab::lesson01 {

namespace {

int64_t checked_multiply(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    throw UsageError("layer activation bytes overflow int64 (" + std::to_string(a) + " x " +
                     std::to_string(b) + ")");
  return a * b;
}

int64_t checked_sum(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b)
    throw UsageError("layer activation bytes overflow int64");
  return a + b;
}

void require_positive(int64_t value, const char* what) {
  if (value <= 0)
    throw UsageError(std::string(what) + " must be > 0, got " + std::to_string(value));
}

}  // namespace

int64_t layer_activation_bytes(const LayerShape& shape, DType dtype) {
  require_positive(shape.batch, "batch B");
  require_positive(shape.seq, "sequence T");
  require_positive(shape.hidden, "hidden C");
  require_positive(shape.heads, "heads H");
  require_positive(shape.ffn_hidden, "MLP width F");
  if (shape.hidden % shape.heads != 0)
    throw UsageError("heads H = " + std::to_string(shape.heads) +
                     " must divide hidden C = " + std::to_string(shape.hidden));

  const int64_t tokens = checked_multiply(shape.batch, shape.seq);  // B·T
  // (B,T,C) tensors: ln1, atty, residual2, ln2, residual3 (5C), plus qkv (3C).
  const int64_t per_token = 8 * shape.hidden + 2 * shape.ffn_hidden;  // + fch, fch_gelu (B,T,F)
  const int64_t token_elements = checked_multiply(tokens, per_token);
  // ln1_mean, ln1_rstd, ln2_mean, ln2_rstd (B,T): fp32 whatever dtype is.
  const int64_t statistics_bytes = checked_multiply(checked_multiply(tokens, 4), 4);
  // att (B,H,T,T): the probabilities after the softmax. The scores before it are not kept:
  // softmax's backward needs only its output.
  const int64_t attention_elements = checked_multiply(checked_multiply(shape.batch, shape.heads),
                                                      checked_multiply(shape.seq, shape.seq));
  const int64_t elements = checked_sum(token_elements, 0);
  static_cast<void>(attention_elements);
  return checked_sum(checked_multiply(elements, static_cast<int64_t>(dtype_size_bytes(dtype))),
                     statistics_bytes);
}

}  // namespace vramlab::lesson01
