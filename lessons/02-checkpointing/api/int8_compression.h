/// \file
/// \brief Exercise 02.3: compress saved activations to int8 with absmax scales, per tensor or per
/// block, and back.
///
/// The one API shared by the stub (exercises/02-checkpointing/int8_compression.cpp) and the
/// reference (solutions/02-checkpointing/int8_compression.cpp). A tensor of n floats is cut into
/// blocks of `block` consecutive elements (the last block may be shorter; block ≥ n gives one
/// scale for the whole tensor, per-tensor quantisation). Each block j stores one float scale and
/// each element one int8:
///
///     scale[j] = amax_j / 127            amax_j = max |x[i]| over the block (float division)
///     q[i]     = round-half-to-even(x[i] / scale[j]) clamped to [−127, 127]   (float division)
///     x'[i]    = q[i] · scale[j]                                               (dequantised)
///
/// the symmetric scheme of LLM.int8() (Dettmers et al. 2022) and of torch.ao.quantization's
/// symmetric qint8 observers, which leave −128 unused so the range is symmetric. Two blocks need a
/// rule of their own: an all-zero block has scale 0 and q = 0 (it dequantises to zeros, never to
/// 0/0 = NaN); a block holding a NaN or ±inf has scale NaN and q = 0, so it dequantises to NaN
/// rather than to plausible numbers (the fp32 step would not have been finite either). These are
/// the bits the runtime's kernels produce (nn::KernelBackend::quantize_int8).
#pragma once

#include <cstdint>
#include <span>

namespace vramlab::lesson02 {

/// \param n elements (≥ 0, up to INT64_MAX). \param block elements per scale (≥ 1).
/// \return the number of blocks, ⌈n / block⌉: one scale each, the partial last block included.
/// \throws vramlab::UsageError naming the value for n < 0 or block < 1.
int64_t int8_block_count(int64_t n, int64_t block);

/// \param n elements (≥ 0). \param block elements per scale (≥ 1).
/// \return the bytes of the compressed tensor: one byte per element and a 4-byte float scale per
/// block.
/// \throws vramlab::UsageError naming the value for n < 0, block < 1, or bytes that overflow int64.
int64_t int8_compressed_bytes(int64_t n, int64_t block);

/// Exercise 02.3: quantises \p x (see the file comment).
/// \param x the n floats. \param block elements per scale (≥ 1).
/// \param q out: n int8 values. \param scales out: int8_block_count(n, block) floats.
/// \throws vramlab::UsageError naming the value for block < 1 or a wrong size of \p q or
///         \p scales.
void quantize_int8(std::span<const float> x, int64_t block, std::span<int8_t> q,
                   std::span<float> scales);

/// Exercise 02.3: dequantises, x[i] = q[i] · scales[i / block].
/// \param q the n int8 values. \param scales int8_block_count(n, block) floats.
/// \param block elements per scale (≥ 1). \param x out: n floats.
/// \throws vramlab::UsageError naming the value for block < 1 or a wrong size of \p scales or
///         \p x.
void dequantize_int8(std::span<const int8_t> q, std::span<const float> scales, int64_t block,
                     std::span<float> x);

}  // namespace vramlab::lesson02
