// Bulk f32 <-> bf16/f16 conversions. The bf16 narrowing is the branch-free form of round to nearest
// even on the top 16 bits, so the loop vectorizes; the others loop over the scalar conversions.
#include "common/dtype/bulk_convert.h"

#include "common/dtype/convert.h"

namespace vramlab {

void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = f32_to_bits(src[i]);
    // Adding 0x7FFF plus the kept lowest bit rounds half to even; a carry out of the mantissa bumps
    // the exponent, and the largest finite values round up to infinity, as they should.
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    dst[i] = static_cast<uint16_t>(is_nan ? 0x7FFFu : rounded);
  }
}

void convert_f32_to_f16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16_bits(src[i]);
}

void convert_bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bits_to_f32(static_cast<uint32_t>(src[i]) << 16);
}

void convert_f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(src[i]);
}

}  // namespace vramlab
