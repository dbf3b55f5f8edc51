/// \file
/// \brief Bit-level access to an f32: its 32-bit pattern and back, without type punning.
///
/// Host code uses std::bit_cast. Device code uses the builtin std::bit_cast is made of, because a
/// std:: function is host-only unless nvcc runs with --expt-relaxed-constexpr.
#pragma once

#include <bit>
#include <cstdint>

#include "common/dtype/host_device.h"

namespace vramlab {

/// The IEEE-754 binary32 bit pattern of `x` (sign bit 31, exponent bits 30..23, mantissa 22..0).
/// Any float, NaN payloads and subnormals included, keeps its bits.
VRAMLAB_HOST_DEVICE constexpr inline uint32_t f32_to_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __builtin_bit_cast(uint32_t, x);
#else
  return std::bit_cast<uint32_t>(x);
#endif
}

/// The float whose IEEE-754 binary32 bit pattern is `bits`.
/// Any pattern is allowed, NaNs included; no canonicalization.
VRAMLAB_HOST_DEVICE constexpr inline float bits_to_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __builtin_bit_cast(float, bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

}  // namespace vramlab
