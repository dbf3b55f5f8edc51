// Exercise 01.2 — YOUR CODE: the bytes one GPT-2 layer of the runtime saves for backward, from
// its shapes.
//
// The API and its contract: lessons/01-memory-breakdown/api/layer_activations.h
// Check:  build/bin/vramlab check 01.2        Stuck:  build/bin/vramlab hint 01.2
#include "lessons/01-memory-breakdown/api/layer_activations.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson01 {

//! [stub]
int64_t layer_activation_bytes([[maybe_unused]] const LayerShape& shape,
                               [[maybe_unused]] DType dtype) {
  // FILL ME IN (roughly 20 lines): reject bad shapes with vramlab::UsageError
  // (common/platform/errors.h), count the elements of every saved tensor, multiply by the
  // element size (dtype_size_bytes in common/dtype/dtype.h).
  VRAMLAB_NOT_IMPLEMENTED("01.2");
}
//! [stub]

}  // namespace vramlab::lesson01
