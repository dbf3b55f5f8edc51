/// \file
/// \brief 8-bit AdamW (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"): both
/// moments stored as one byte per element, block-wise dynamic quantization, as bitsandbytes'
/// AdamW8bit does.
///
/// **The dynamic (tree) map.** 256 codes in [-1, 1], sorted ascending, dense near 0 and sparse near
/// 1: bitsandbytes' `create_dynamic_map(signed, max_exponent_bits=7, total_bits=8)`. The signed
/// map (for m, which has both signs) and the unsigned map (for v ≥ 0, twice the resolution) are
/// built here exactly as that function builds them (torch.linspace in f32, the products in
/// double, the table rounded to f32), so the codes are bitwise bitsandbytes'.
///
/// **Block-wise quantization.** Element i belongs to block i / B; absmax[b] = max |x| over block b
/// (f32); q[i] = the index of the code nearest to x[i] / absmax[b], found by binary search over
/// the sorted codes, a tie going to the lower index (bitsandbytes' CPU quantize_block keeps the
/// left neighbour unless the right one is strictly nearer). The last block may be shorter. An
/// all-zero block has absmax 0 and every q at the code 0.0; a block holding a NaN or ±inf gets
/// absmax NaN and q at the code 0.0, so it dequantises to NaN. Dequantising x = code[q]·absmax[b].
///
/// **The update** (bitsandbytes' blockwise 2-state kernel): per block, dequantise m and v with the
/// block's old absmax, apply AdamW's f32 arithmetic (kernels/cpu/optimizer.h) to every element,
/// update the parameter from the new f32 m and v, then requantise m and v with the new absmax. The
/// codes are static tables, not device memory: the state is exactly n bytes per moment plus one f32
/// absmax per block per moment, 2 + 8/B bytes per parameter.
///
/// The results are bytes, so the reference is the plain loop in f32 and the fast path must match it
/// bitwise.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/cpu/optimizer.h"

namespace vramlab::kernels::cpu {

/// The number of codes of an 8-bit map.
inline constexpr int kQuantizationCodes = 256;

/// bitsandbytes' create_dynamic_map(signed=is_signed, max_exponent_bits=7, total_bits=8).
/// \param is_signed true: the map of m (codes in [-1, 1]); false: the map of v (codes in [0, 1]).
/// \return the 256 codes, ascending.
const std::array<float, kQuantizationCodes>& dynamic_quantization_map(bool is_signed);

/// The index of the code nearest to \p x (ties to the lower index; x outside the codes clamps to
/// the end codes). \param code 256 ascending codes. \param x a finite value.
uint8_t nearest_code(const std::array<float, kQuantizationCodes>& code, float x);

/// \param n elements (≥ 0). \param block elements per block (≥ 1).
/// \return ceil(n / block), the number of absmax values, without overflow for any n.
constexpr int64_t quantization_block_count(int64_t n, int64_t block) {
  return n / block + (n % block != 0 ? 1 : 0);
}

/// Quantises x (n) into q (n) and absmax (quantization_block_count(n, block)) with \p code (see
/// the file comment), in parallel over blocks. \throws vramlab::UsageError when n < 0 or block < 1.
void quantize_blockwise(uint8_t* q, float* absmax, const float* x, int64_t n, int64_t block,
                        const std::array<float, kQuantizationCodes>& code);
/// x[i] = code[q[i]] · absmax[i / block]; x (n), q (n), absmax (quantization_block_count).
/// \throws vramlab::UsageError as quantize_blockwise.
void dequantize_blockwise(float* x, const uint8_t* q, const float* absmax, int64_t n, int64_t block,
                          const std::array<float, kQuantizationCodes>& code);

/// One 8-bit AdamW step on ONE parameter tensor (blocks never span tensors, as in bitsandbytes),
/// with g = grad_multiplier · grad. \p qm (n) the signed-map codes of m, \p qv (n) the
/// unsigned-map codes of v, \p absmax_m and \p absmax_v (quantization_block_count(n, block)) f32;
/// all zero before the first step. param P, grad Gr, working W as adamw_update's (n); \p rounding
/// as adamw_update's. \throws vramlab::UsageError when n < 0, block < 1 or step < 1.
template <typename P, typename Gr, typename W>
void adamw_8bit_update(P* param, const Gr* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                       float* absmax_v, W* working, int64_t n, int64_t block,
                       const AdamWHyperparameters& hp, int64_t step, float grad_multiplier,
                       const ParameterRounding& rounding = {});

/// Reference of quantize_blockwise: one block after the other, a linear scan for the nearest code.
void quantize_blockwise_reference(uint8_t* q, float* absmax, const float* x, int64_t n,
                                  int64_t block, const std::array<float, kQuantizationCodes>& code);
/// Reference of adamw_8bit_update in f32 (g = grad, plain loops).
void adamw_8bit_update_reference(float* param, const float* grad, uint8_t* qm, uint8_t* qv,
                                 float* absmax_m, float* absmax_v, int64_t n, int64_t block,
                                 const AdamWHyperparameters& hp, int64_t step);

}  // namespace vramlab::kernels::cpu
