/// \file
/// \brief Exercise 06.1: the softmax statistics of one row of scores, read block by block
/// (the "online softmax" flash attention runs over the key tiles of every query row).
///
/// The one API shared by the stub (exercises/06-flash-attention/online_softmax.cpp) and the
/// reference (solutions/06-flash-attention/online_softmax.cpp). Flash attention never holds a
/// whole row of scores s_0 … s_(n−1): it sees them one block at a time and keeps, per row, two
/// numbers from which the softmax's denominator and the row's log-sum-exp follow at the end
/// (Dao et al. 2022, "FlashAttention", arXiv 2205.14135, §3.1; Milakov and Gimelshein 2018,
/// "Online normalizer calculation for softmax", arXiv 1805.02867):
///
///     m = max over the scores seen so far
///     ℓ = Σ over the scores seen so far of exp(s − m)
///     lse = m + log ℓ  (natural log) = log Σ exp(s)
///
/// The statistics must be exactly those after every block, in f32, and must never overflow:
/// scores of ±1000 are ordinary inputs. A score of −inf is a masked position (causal mask): it
/// adds nothing. A row with nothing but −inf (or no score at all) has m = −inf, ℓ = 0 and
/// lse = −inf, never NaN. Scores are finite or −inf (+inf and NaN are not inputs).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace vramlab::lesson06 {

/// The running statistics of one row (FlashAttention's m and ℓ).
struct SoftmaxStats {
  float max = -std::numeric_limits<float>::infinity();  ///< m: the largest score seen (−inf: none)
  float sum = 0.0f;  ///< ℓ: Σ exp(s − m) over the scores seen (0 when m is −inf)
};

/// Exercise 06.1: the statistics after one more block of the row.
/// \param running the statistics of the scores before the block (SoftmaxStats{} for none).
/// \param block (any length, 0 included) the next scores; −inf entries are masked.
/// \return the statistics of the scores before the block and the block together.
SoftmaxStats online_softmax_step(SoftmaxStats running, std::span<const float> block);

/// A whole row read in blocks.
struct OnlineSoftmax {
  std::vector<SoftmaxStats> after_block;  ///< (⌈n / block_size⌉) the statistics after each block
  float lse = -std::numeric_limits<float>::infinity();  ///< log Σ exp(s) of the row (−inf: none)
};

/// Exercise 06.1: reads \p scores in blocks of \p block_size (the last block may be shorter;
/// a block_size larger than the row gives one block) and returns the statistics after each block
/// and the row's log-sum-exp.
/// \param scores (n) one row of scores, n ≥ 0; −inf entries are masked.
/// \param block_size scores per block, ≥ 1.
/// \throws vramlab::UsageError naming the value for block_size < 1.
OnlineSoftmax online_softmax(std::span<const float> scores, int64_t block_size);

}  // namespace vramlab::lesson06
