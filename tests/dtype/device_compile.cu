// Proves common/dtype/convert.h compiles as CUDA device code: a kernel that calls every conversion.
// Built (not run: CI has no GPU) as the object library dtype_device_compile when nvcc is present.
#include <cstdint>

#include "common/dtype/convert.h"

namespace {

// x: (n) input; out: (n, 8) packed results, one column per conversion.
__global__ void convert_everything(const float* x, uint32_t* out, uint64_t seed, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  uint32_t* row = out + i * 8;
  row[0] = vramlab::f32_to_f16_bits(v) | (vramlab::f32_to_bf16_bits(v) << 16);
  row[1] = vramlab::f32_to_e4m3_bits(v, true) | (vramlab::f32_to_e4m3_bits(v, false) << 8) |
           (vramlab::f32_to_e5m2_bits(v, true) << 16) | (vramlab::f32_to_e5m2_bits(v, false) << 24);
  row[2] = vramlab::f32_to_bits(vramlab::f16_bits_to_f32(static_cast<uint16_t>(row[0])));
  row[3] = vramlab::f32_to_bits(vramlab::bf16_bits_to_f32(static_cast<uint16_t>(row[0] >> 16)));
  row[4] = vramlab::f32_to_bits(vramlab::e4m3_bits_to_f32(static_cast<uint8_t>(row[1])) +
                                vramlab::e5m2_bits_to_f32(static_cast<uint8_t>(row[1] >> 16)));
  const uint32_t random_bits = vramlab::stochastic_bits(seed, static_cast<uint64_t>(i));
  row[5] = vramlab::f32_to_f16_bits_stochastic(v, random_bits);
  row[6] = vramlab::f32_to_bf16_bits_stochastic(v, random_bits);
  row[7] = vramlab::f32_to_bits(vramlab::to_f32(vramlab::to_fp8_e4m3(v, true)));
}

}  // namespace

// Keeps the kernel referenced so the compiler emits its device code.
void vramlab_dtype_device_compile_launch(const float* x, uint32_t* out, int64_t n) {
  convert_everything<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, out, 42, n);
}
