// Known-wrong variant of exercise 01.2, kept whole: it rewrites most of the function.
// Mistake: copies the shapes into int variables, so B*H*T*T wraps around in 32 bits at long context
// Caught by: LayerActivations.RealModelsAtLongContextNeed64BitArithmetic
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/layer_activations.h"

namespace vramlab::lesson01 {

int64_t layer_activation_bytes(const LayerShape& shape, DType dtype) {
  for (int64_t v : {shape.batch, shape.seq, shape.hidden, shape.heads, shape.ffn_hidden})
    if (v <= 0) throw UsageError("every size must be > 0, got " + std::to_string(v));
  if (shape.hidden % shape.heads != 0)
    throw UsageError("heads H = " + std::to_string(shape.heads) + " must divide hidden C");
  if (shape.batch * shape.seq * shape.seq > (int64_t{1} << 50))
    throw UsageError("layer activation bytes overflow int64");
  const int B = static_cast<int>(shape.batch), T = static_cast<int>(shape.seq),
            C = static_cast<int>(shape.hidden), H = static_cast<int>(shape.heads),
            F = static_cast<int>(shape.ffn_hidden);
  // The mistake: int * int stays int; widening happens only after the product wrapped. (The
  // casts to unsigned make the wrap defined here; a signed int product wraps the same way in
  // practice, as undefined behaviour.)
  const int64_t token_elements = int64_t{B} * T * (8 * C + 2 * F);
  const int64_t statistics_bytes = int64_t{B} * T * 16;  // four fp32 (B,T) statistics
  const auto attention_elements =
      static_cast<int64_t>(static_cast<unsigned>(B * H) * static_cast<unsigned>(T * T));
  return (token_elements + attention_elements) * static_cast<int64_t>(dtype_size_bytes(dtype)) +
         statistics_bytes;
}

}  // namespace vramlab::lesson01
