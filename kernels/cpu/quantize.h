/// \file
/// \brief Symmetric int8 quantisation in blocks (activation compression: a saved f32 activation
/// stored as int8 plus one f32 scale per block, 4x smaller up to the scales).
///
/// Element i belongs to block i / block; block j has scale[j] = amax(|x| over block j) / 127 and
/// q = round-half-to-even(x / scale) clamped to [−127, 127] (common/dtype/int8_block.h); the last
/// block may be shorter, block = n gives one scale for the tensor. An all-zero block has scale 0
/// and q = 0; a block holding a NaN or ±inf gets scale NaN and q = 0, so it dequantises to NaN
/// (the f32 step it came from was not finite either). Dequantising x = q · scale is within
/// scale / 2 of the original (up to the float rounding of x / scale and of q · scale).
///
/// The result is int8, so there is no double reference: the references are the plain loops, and
/// the fast paths must match them bitwise.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// \param n elements (≥ 0). \param block elements per block (≥ 1).
/// \return the number of blocks, ceil(n / block), without overflow for any n.
constexpr int64_t int8_block_count(int64_t n, int64_t block) {
  return n / block + (n % block != 0 ? 1 : 0);
}

/// Quantises x (n) into q (n) and scales (int8_block_count(n, block)), in parallel over blocks.
/// \throws vramlab::InternalError when n < 0 or block < 1.
void quantize_int8(int8_t* q, float* scales, const float* x, int64_t n, int64_t block);
/// x[i] = q[i] · scales[i / block]; x (n) f32, q (n), scales (int8_block_count(n, block)).
/// \throws vramlab::InternalError as quantize_int8.
void dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n, int64_t block);

/// quantize_int8 of x in storage A (kernels/cpu/storage.h): the blocks of widen(x).
/// \tparam A float, bf16_t or f16_t. \throws as quantize_int8.
template <typename A>
void quantize_int8(int8_t* q, float* scales, const A* x, int64_t n, int64_t block);
/// dequantize_int8 into storage A: x = round_A(q · scale). \tparam A float, bf16_t or f16_t.
/// \throws as quantize_int8.
template <typename A>
void dequantize_int8(A* x, const int8_t* q, const float* scales, int64_t n, int64_t block);
/// Reference of quantize_int8 (one block after the other, plain loops).
void quantize_int8_reference(int8_t* q, float* scales, const float* x, int64_t n, int64_t block);
/// Reference of dequantize_int8.
void dequantize_int8_reference(float* x, const int8_t* q, const float* scales, int64_t n,
                               int64_t block);

}  // namespace vramlab::kernels::cpu
