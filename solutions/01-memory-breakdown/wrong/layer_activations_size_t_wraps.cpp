// Known-wrong variant of exercise 01.2, kept whole: it rewrites most of the function.
// Mistake: computes in size_t and checks for overflow after the multiplications, when the
//   product has already wrapped around
// Caught by: LayerActivations.TheLargestShapesThatFitAreExactAndOneMoreStepThrows
#include <cstddef>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/layer_activations.h"

namespace vramlab::lesson01 {

int64_t layer_activation_bytes(const LayerShape& shape, DType dtype) {
  for (int64_t v : {shape.batch, shape.seq, shape.hidden, shape.heads, shape.ffn_hidden})
    if (v <= 0) throw UsageError("every size must be > 0, got " + std::to_string(v));
  if (shape.hidden % shape.heads != 0)
    throw UsageError("heads H = " + std::to_string(shape.heads) + " must divide hidden C");
  const auto B = static_cast<size_t>(shape.batch), T = static_cast<size_t>(shape.seq),
             C = static_cast<size_t>(shape.hidden), H = static_cast<size_t>(shape.heads),
             F = static_cast<size_t>(shape.ffn_hidden);
  const size_t bytes =
      (B * T * (8 * C + 2 * F) + B * H * T * T) * dtype_size_bytes(dtype) + B * T * 16;
  // The mistake: by now the product may have wrapped to a small number that passes this check.
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
    throw UsageError("layer activation bytes overflow int64");
  return static_cast<int64_t>(bytes);
}

}  // namespace vramlab::lesson01
