/// \file
/// \brief Exercise 03.1: round an f32 to bf16 and to f16, from the bits.
///
/// The one API shared by the stub (exercises/03-mixed-precision/narrow_float.cpp) and the
/// reference (solutions/03-mixed-precision/narrow_float.cpp). Both formats keep the sign bit and
/// fewer exponent and mantissa bits than f32 (IEEE 754-2008 binary32):
///
///     f32   1 sign | 8 exponent (bias 127) | 23 mantissa
///     bf16  1 sign | 8 exponent (bias 127) |  7 mantissa     max 0x7F7F ≈ 3.39e38
///     f16   1 sign | 5 exponent (bias 15)  | 10 mantissa     max 0x7BFF = 65504
///
/// The conversion is NVIDIA's `__float2bfloat16_rn` / `__float2half_rn`; PyTorch's
/// `.to(torch.bfloat16)` and `.half()` round the same way and differ only in which NaN pattern
/// they store:
/// - round to nearest, ties to even (the result whose last mantissa bit is 0);
/// - results below the smallest normal become subnormals (f16: multiples of 2^-24 below 2^-14);
///   a magnitude below 2^-25 (half the smallest f16 subnormal) rounds to ±0, exactly 2^-25 ties
///   to +0 or −0 (even), anything above it to the smallest subnormal;
/// - a magnitude that rounds past the largest finite value becomes ±infinity (f16: 65520 and
///   above round to infinity, 65519 rounds to 65504), as do ±infinity themselves;
/// - ±0 keep their sign;
/// - any NaN, whatever its sign and payload, becomes the canonical NaN 0x7FFF (sign clear).
/// The runtime stores its bf16/f16 tensors with these bits (common/dtype/convert.h).
#pragma once

#include <cstdint>

namespace vramlab::lesson03 {

/// Exercise 03.1: the bf16 bits nearest to \p x (see the file comment).
/// \param x any f32, NaN and infinities included.
/// \return the bf16 bit pattern.
uint16_t to_bf16_bits(float x);

/// Exercise 03.1: the f16 bits nearest to \p x (see the file comment).
/// \param x any f32, NaN and infinities included.
/// \return the f16 bit pattern.
uint16_t to_f16_bits(float x);

}  // namespace vramlab::lesson03
