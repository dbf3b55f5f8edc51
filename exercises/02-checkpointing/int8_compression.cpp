// Exercise 02.3 — YOUR CODE: int8 compression of activations with absmax scales per block, and
// back.
//
// The API and its contract: lessons/02-checkpointing/api/int8_compression.h
// Check:  build/bin/vramlab check 02.3        Stuck:  build/bin/vramlab hint 02.3
#include "lessons/02-checkpointing/api/int8_compression.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson02 {

//! [stub]
int64_t int8_block_count([[maybe_unused]] int64_t n, [[maybe_unused]] int64_t block) {
  // FILL ME IN (3 lines): reject bad input with vramlab::UsageError (common/platform/errors.h).
  VRAMLAB_NOT_IMPLEMENTED("02.3");
}

int64_t int8_compressed_bytes([[maybe_unused]] int64_t n, [[maybe_unused]] int64_t block) {
  // FILL ME IN (5 lines).
  VRAMLAB_NOT_IMPLEMENTED("02.3");
}

void quantize_int8([[maybe_unused]] std::span<const float> x, [[maybe_unused]] int64_t block,
                   [[maybe_unused]] std::span<int8_t> q, [[maybe_unused]] std::span<float> scales) {
  // FILL ME IN (roughly 20 lines): per block, its absmax and scale, then each element.
  VRAMLAB_NOT_IMPLEMENTED("02.3");
}

void dequantize_int8([[maybe_unused]] std::span<const int8_t> q,
                     [[maybe_unused]] std::span<const float> scales, [[maybe_unused]] int64_t block,
                     [[maybe_unused]] std::span<float> x) {
  // FILL ME IN (5 lines).
  VRAMLAB_NOT_IMPLEMENTED("02.3");
}
//! [stub]

}  // namespace vramlab::lesson02
