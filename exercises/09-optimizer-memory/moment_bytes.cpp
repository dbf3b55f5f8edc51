// Exercise 09.4 — YOUR CODE: the moment bytes of 8-bit AdamW and Adafactor, tensor by tensor,
// exact in 64 bits.
//
// The API and its contract: lessons/09-optimizer-memory/api/moment_bytes.h
// Check:  build/bin/vramlab check 09.4        Stuck:  build/bin/vramlab hint 09.4
#include "lessons/09-optimizer-memory/api/moment_bytes.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson09 {

//! [stub]
EightBitMomentBytes adamw_8bit_moment_bytes([[maybe_unused]] std::span<const ParameterSpec> tensors,
                                            [[maybe_unused]] int64_t block_size,
                                            [[maybe_unused]] int64_t min_8bit_size) {
  // FILL ME IN (roughly 20 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h): per tensor, quantized or f32, and how many blocks.
  VRAMLAB_NOT_IMPLEMENTED("09.4");
}

int64_t adafactor_moment_bytes([[maybe_unused]] std::span<const ParameterSpec> tensors,
                               [[maybe_unused]] int64_t state_element_bytes) {
  // FILL ME IN (roughly 12 lines).
  VRAMLAB_NOT_IMPLEMENTED("09.4");
}
//! [stub]

}  // namespace vramlab::lesson09
