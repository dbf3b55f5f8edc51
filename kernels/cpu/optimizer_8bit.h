/// \file
/// \brief 8-bit AdamW (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"): both
/// moments stored as one byte per element, block-wise dynamic quantization, as bitsandbytes'
/// AdamW8bit does.
///
/// **The dynamic (tree) map.** 256 codes in [-1, 1], sorted ascending, dense near 0 and sparse near
/// 1: bitsandbytes' `create_dynamic_map(signed, max_exponent_bits=7, total_bits=8)`. The signed
/// map (for m, which has both signs; it holds 0 and 1 but not -1, its lowest code is -0.99297)
/// and the unsigned map (for v ≥ 0, twice the resolution) are built here with that function's
/// arithmetic as PyTorch runs it: torch.linspace in f32 (each point one FMA), the midpoints in
/// f32, and the decade scale 10^(e-6), a Python float, rounded to f32 before the product (a
/// tensor times a Python scalar computes in the tensor's dtype; products in double would differ
/// in 30 signed and 38 unsigned codes). The codes are bitwise bitsandbytes' (checked against its
/// output).
///
/// **Block-wise quantization.** Element i belongs to block i / B; absmax[b] = max |x| over block b
/// (f32); q[i] = the index of the code nearest to x[i] / absmax[b] (a correctly rounded
/// division, so |x / absmax| ≤ 1), by f32 distances, a tie going to the lower index: the rule of
/// bitsandbytes' CPU quantize_block up to 0.49 (a binary search that keeps the left neighbour
/// unless the right one is strictly nearer), which multiplied by 1 / absmax instead. Since 0.50
/// bitsandbytes' CPU path looks the code up in a 65536-bin table over [-1, 1] (bins 3e-5 wide,
/// coarser than the codes near 0; an exact 0 gets a small non-zero code), so it differs from the
/// nearest code for 0.1-4% of random values and for every exact 0 (bench/compare_bitsandbytes.py
/// counts and explains each difference). The last block may be shorter. An all-zero block has
/// absmax 0 and every q at the code 0.0 (bitsandbytes writes index 0; both dequantise to 0); a
/// block holding a NaN or ±inf gets absmax NaN and q at the code 0.0, so it dequantises to NaN
/// (bitsandbytes' absmax ignores a NaN). Dequantising x = code[q]·absmax[b].
///
/// **The update** (bitsandbytes' kOptimizerStatic8bit2StateBlockwise, csrc/kernels.cu): per
/// block, dequantise m and v with the block's old absmax, apply AdamW's f32 arithmetic
/// (kernels/cpu/optimizer.h) to every element, update the parameter from the new f32 m and v, then
/// requantise m and v with the new absmax (max |new moment| over the block). So one step is
/// exactly dequantize_blockwise, adamw_update, quantize_blockwise. Where bitsandbytes' kernel
/// differs: its parameter step is p + (-lr·√(1-β2^t)/(1-β1^t))·m/(√v + eps·√(1-β2^t)) with the
/// weight decay p·(1 - lr·wd) applied after it (PyTorch's AdamW, used here, decays first: the
/// two differ by lr·wd times the step); it skips elements whose gradient is NaN or ±inf (their m
/// and v become 0, the parameter is kept), where here they turn the block's states to NaN as fp32
/// AdamW would; it divides with the approximate __fdividef and searches the codes with its own
/// binary search (quantize_2D, which compares with midpoints rather than distances), then moves a
/// code of m whose sign differs from m's by one; with the exact nearest code that never happens (0
/// is a code, nearer to any x than a code of the other sign). The codes are static tables, not
/// device memory: the state is exactly n bytes per moment plus one f32 absmax per block per moment,
/// 2 + 8/B bytes per parameter.
///
/// The results are bytes, so the reference is the plain loop in f32 and the fast path must match it
/// bitwise; every kernel's result is independent of the thread count.
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

/// The index of the code nearest to \p x by f32 distances |x - code|, ties to the lower index (x
/// outside the codes gets the end code), by binary search. \param code 256 ascending codes.
/// \param x a finite value. \return the index, 0 to 255.
uint8_t nearest_code(const std::array<float, kQuantizationCodes>& code, float x);

/// \param n elements (≥ 0). \param block elements per block (≥ 1).
/// \return ceil(n / block), the number of absmax values, without overflow for any n.
constexpr int64_t quantization_block_count(int64_t n, int64_t block) {
  return n / block + (n % block != 0 ? 1 : 0);
}

/// Quantises x (n) into q (n) and absmax (quantization_block_count(n, block)) with \p code (see
/// the file comment), in parallel over blocks. For the two dynamic maps themselves (passed as
/// dynamic_quantization_map's references) a lookup table finds the same codes as nearest_code
/// faster (Note [Nearest code by bucket] in optimizer_8bit.cpp); any other code array is searched
/// with nearest_code. \throws vramlab::InternalError when n < 0 or block < 1.
void quantize_blockwise(uint8_t* q, float* absmax, const float* x, int64_t n, int64_t block,
                        const std::array<float, kQuantizationCodes>& code);
/// x[i] = code[q[i]] · absmax[i / block]; x (n), q (n), absmax (quantization_block_count).
/// \throws vramlab::InternalError as quantize_blockwise.
void dequantize_blockwise(float* x, const uint8_t* q, const float* absmax, int64_t n, int64_t block,
                          const std::array<float, kQuantizationCodes>& code);

/// One 8-bit AdamW step on ONE parameter tensor (blocks never span tensors, as in bitsandbytes),
/// with g = grad_multiplier · grad. \p qm (n) the signed-map codes of m, \p qv (n) the
/// unsigned-map codes of v, \p absmax_m and \p absmax_v (quantization_block_count(n, block)) f32;
/// all zero before the first step. param P, grad Gr, working W as adamw_update's (n); \p rounding
/// as adamw_update's. \throws vramlab::InternalError when n < 0, block < 1 or step < 1.
template <typename P, typename Gr, typename W>
void adamw_8bit_update(P* param, const Gr* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                       float* absmax_v, W* working, int64_t n, int64_t block,
                       const AdamWHyperparameters& hp, const UpdateStep& at);

/// Reference of quantize_blockwise: one block after the other, a linear scan for the nearest code.
void quantize_blockwise_reference(uint8_t* q, float* absmax, const float* x, int64_t n,
                                  int64_t block, const std::array<float, kQuantizationCodes>& code);
/// Reference of adamw_8bit_update in f32 (g = grad, plain loops).
void adamw_8bit_update_reference(float* param, const float* grad, uint8_t* qm, uint8_t* qv,
                                 float* absmax_m, float* absmax_v, int64_t n, int64_t block,
                                 const AdamWHyperparameters& hp, int64_t step);

}  // namespace vramlab::kernels::cpu
