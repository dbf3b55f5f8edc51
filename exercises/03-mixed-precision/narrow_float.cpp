// Exercise 03.1 — YOUR CODE: f32 to bf16 and to f16, rounding to nearest even, from the bits.
//
// The API and its contract: lessons/03-mixed-precision/api/narrow_float.h
// Check:  build/bin/vramlab check 03.1        Stuck:  build/bin/vramlab hint 03.1
#include "lessons/03-mixed-precision/api/narrow_float.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson03 {

//! [stub]
uint16_t to_bf16_bits([[maybe_unused]] float x) {
  // FILL ME IN (roughly 6 lines): read the bits (std::bit_cast<uint32_t>, <bit>), treat NaN
  // first, then round away the low 16 bits.
  VRAMLAB_NOT_IMPLEMENTED("03.1");
}

uint16_t to_f16_bits([[maybe_unused]] float x) {
  // FILL ME IN (roughly 25 lines): NaN, overflow, then normal and subnormal results, each
  // rounded to nearest even.
  VRAMLAB_NOT_IMPLEMENTED("03.1");
}
//! [stub]

}  // namespace vramlab::lesson03
