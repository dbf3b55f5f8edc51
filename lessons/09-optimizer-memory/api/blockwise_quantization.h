/// \file
/// \brief Exercise 09.1: 8-bit AdamW's storage of a moment: the dynamic code map and block-wise
/// quantization, as bitsandbytes does it (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
/// Quantization", arXiv 2110.02861, §2).
///
/// The one API shared by the stub (exercises/09-optimizer-memory/blockwise_quantization.cpp) and
/// the reference (solutions/09-optimizer-memory/blockwise_quantization.cpp). The runtime's own
/// version is kernels/cpu/optimizer_8bit.h; the tests require the same codes as it.
///
/// **The map** is bitsandbytes' `create_dynamic_map(signed, max_exponent_bits=7, total_bits=8)`:
/// 256 codes sorted ascending. For each decade k = 0 … 6 it holds the midpoints of the N_k equal
/// bins that linspace(0.1, 1, N_k + 1) cuts [0.1, 1] into, times 10^-k:
///
/// | map      | N_k        | decades 10^0 … 10^-6 hold | also                         |
/// |----------|------------|---------------------------|------------------------------|
/// | signed   | 2^(6 − k)  | 64, 32, … 1 codes         | the negative of every one    |
/// | unsigned | 2^(7 − k)  | 128, 64, … 2 codes        | nothing negative             |
///
/// and both hold the codes 0 and 1. The signed map quantizes m (both signs), the unsigned one v
/// (v ≥ 0, twice the resolution).
///
/// **A block** of B consecutive elements (the last block of a tensor may be shorter) is stored as
/// one f32 absmax = max |x| over the block and one byte per element: the index of the code nearest
/// to x / absmax (the division in f32). A tie between two codes goes to the lower index; a value
/// outside the codes takes the nearest end code. Dequantizing gives code[q] · absmax. Two edge
/// cases, as the runtime handles them: an all-zero block has absmax 0 and every byte at the code
/// 0; a block holding a NaN or ±infinity has absmax NaN and every byte at the code 0, so it
/// dequantizes to NaN (the damage stays in that block).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace vramlab::lesson09 {

/// The 256 codes of an 8-bit map, ascending.
using CodeMap = std::array<float, 256>;

/// Exercise 09.1: bitsandbytes' dynamic map (see the file comment). Each code must be within
/// 1e-6 of the runtime's, relative (torch computes the bins in f32; any f32 or f64 arithmetic is
/// that close).
/// \param is_signed true for m's map (codes in [-1, 1]), false for v's (codes in [0, 1]).
/// \return the codes, ascending.
CodeMap dynamic_code_map(bool is_signed);

/// Exercise 09.1: the index of the code nearest to \p normalized; a tie goes to the lower index,
/// and a value below the first code or above the last takes that end code.
/// \param code ascending codes. \param normalized a finite value, usually in [-1, 1].
/// \return the index.
uint8_t nearest_code(const CodeMap& code, float normalized);

/// A tensor stored block-wise: one byte per element and one f32 absmax per block.
struct BlockwiseQuantized {
  std::vector<uint8_t> codes;  ///< (n) the code index of each element
  std::vector<float> absmax;   ///< (⌈n / B⌉) f32, the scale of each block
};

/// Exercise 09.1: quantizes \p x block by block (see the file comment).
/// \param x (n) f32. \param block_size B ≥ 1. \param code the map to quantize with.
/// \return the codes and the absmax of every block.
/// \throws vramlab::UsageError naming the value when block_size < 1.
BlockwiseQuantized quantize_blockwise(std::span<const float> x, int64_t block_size,
                                      const CodeMap& code);

/// Exercise 09.1: x[i] = code[codes[i]] · absmax[i / B].
/// \param quantized what quantize_blockwise returned. \param block_size the B it used.
/// \param code the map it used. \return (n) f32.
/// \throws vramlab::UsageError naming the value when block_size < 1 or the number of absmax
///         values is not ⌈n / B⌉.
std::vector<float> dequantize_blockwise(const BlockwiseQuantized& quantized, int64_t block_size,
                                        const CodeMap& code);

}  // namespace vramlab::lesson09
