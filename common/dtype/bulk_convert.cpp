// Bulk f32 <-> bf16/f16 conversions: loops over the scalar conversions of convert.h, compiled here
// once with the library's optimisation (the narrowing ones are branch-free and vectorize).
#include "common/dtype/bulk_convert.h"

#include "common/dtype/convert.h"

namespace vramlab {

void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16_bits(src[i]);
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
