// Exercise 09.1 — YOUR CODE: the dynamic code map of 8-bit AdamW and block-wise quantization of a
// moment: one f32 absmax per block, one byte per element.
//
// The API and its contract: lessons/09-optimizer-memory/api/blockwise_quantization.h
// Check:  build/bin/vramlab check 09.1        Stuck:  build/bin/vramlab hint 09.1
#include "lessons/09-optimizer-memory/api/blockwise_quantization.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson09 {

//! [stub]
CodeMap dynamic_code_map([[maybe_unused]] bool is_signed) {
  // FILL ME IN (roughly 15 lines): the midpoints of every decade, their negatives for the signed
  // map, 0 and 1, sorted.
  VRAMLAB_NOT_IMPLEMENTED("09.1");
}

uint8_t nearest_code([[maybe_unused]] const CodeMap& code, [[maybe_unused]] float normalized) {
  // FILL ME IN (roughly 12 lines): a binary search, then the nearer of two neighbours.
  VRAMLAB_NOT_IMPLEMENTED("09.1");
}

BlockwiseQuantized quantize_blockwise([[maybe_unused]] std::span<const float> x,
                                      [[maybe_unused]] int64_t block_size,
                                      [[maybe_unused]] const CodeMap& code) {
  // FILL ME IN (roughly 20 lines), rejecting a bad block_size with vramlab::UsageError
  // (common/platform/errors.h).
  VRAMLAB_NOT_IMPLEMENTED("09.1");
}

std::vector<float> dequantize_blockwise([[maybe_unused]] const BlockwiseQuantized& quantized,
                                        [[maybe_unused]] int64_t block_size,
                                        [[maybe_unused]] const CodeMap& code) {
  // FILL ME IN (roughly 10 lines).
  VRAMLAB_NOT_IMPLEMENTED("09.1");
}
//! [stub]

}  // namespace vramlab::lesson09
