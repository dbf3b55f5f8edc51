/// \file
/// \brief Exercise 06.4: predict flash attention's numbers before running it: the tile sizes a
/// fast-memory budget allows, how many tiles the causal mask computes and skips, the bytes one
/// tile step keeps in fast memory, and the bytes attention saves for the backward, naive against
/// flash.
///
/// The one API shared by the stub (exercises/06-flash-attention/tile_budget.cpp) and the
/// reference (solutions/06-flash-attention/tile_budget.cpp). Sources: Dao et al. 2022,
/// "FlashAttention", arXiv 2205.14135, Alg. 1 (block sizes from the on-chip memory M, counted
/// here in elements; T_r and T_c the numbers of query and key/value tiles); FlashAttention-2
/// (arXiv 2307.08691) for the causal skip and the saved log-sum-exp. Every count is an int64_t:
/// the sizes of real models (T = 131072, 64 heads, batch 8) pass 2^31.
#pragma once

#include <cstdint>

namespace vramlab::lesson06 {

/// Tile sizes: rows of a key/value tile (B_c) and of a query tile (B_r).
struct BlockSizes {
  int64_t key_rows = 0;    ///< B_c
  int64_t query_rows = 0;  ///< B_r
};

/// Exercise 06.4: FlashAttention-1's block sizes for an on-chip memory of \p sram_elements
/// elements (M) and head size \p head_dim (d): B_c = ⌈M / (4d)⌉ and B_r = min(⌈M / (4d)⌉, d).
/// \throws vramlab::UsageError naming the value for M < 1 or d < 1.
BlockSizes fa1_block_sizes(int64_t sram_elements, int64_t head_dim);

/// How the causal mask splits the (query tile, key tile) grid of one (batch, head). Query tile i
/// holds positions i·B_r … min((i+1)·B_r, T) − 1, key tile j positions j·B_c … likewise; query
/// position t sees key position u when u ≤ t.
struct TileGrid {
  int64_t query_tiles = 0;  ///< T_r = ⌈T / B_r⌉
  int64_t key_tiles = 0;    ///< T_c = ⌈T / B_c⌉
  int64_t full = 0;         ///< tiles whose every (t, u) is visible: computed without a mask
  int64_t partial = 0;      ///< tiles with visible and masked entries: computed with the mask
  int64_t skipped = 0;      ///< tiles whose every entry is masked: never computed
};

/// Exercise 06.4: the causal tile grid for sequence length \p seq_len (T ≥ 0; T = 0 gives an
/// empty grid). full + partial + skipped = T_r · T_c.
/// \throws vramlab::UsageError naming the value for T < 0 or a block size < 1.
TileGrid causal_tile_grid(int64_t seq_len, BlockSizes blocks);

/// Exercise 06.4: the bytes one forward tile step holds in fast memory: Q_i (B_r, d), K_j and V_j
/// (B_c, d) in the inputs' dtype (\p element_bytes each), and in f32 (4 bytes) the output
/// accumulator O_i (B_r, d), the running max m and sum ℓ (B_r each) and the scores S_ij (B_r, B_c).
/// \throws vramlab::UsageError naming the value for a block size, d or element_bytes < 1.
int64_t tile_step_working_set_bytes(BlockSizes blocks, int64_t head_dim, int64_t element_bytes);

/// What attention keeps for its backward beyond q, k, v and the output, per layer.
struct AttentionExtraBytes {
  int64_t naive = 0;  ///< the probabilities P (B, H, T, T) in the activations' dtype
  int64_t flash = 0;  ///< the log-sum-exp (B, H, T) in f32
};

/// Exercise 06.4: the extra bytes of one attention layer, naive against flash.
/// \param batch B ≥ 0. \param heads H ≥ 0. \param seq_len T ≥ 0.
/// \param element_bytes bytes of one element of P (≥ 1; 2 for bf16).
/// \throws vramlab::UsageError naming the value for a negative size, element_bytes < 1, or a byte
///         count that does not fit in an int64_t.
AttentionExtraBytes attention_extra_bytes(int64_t batch, int64_t heads, int64_t seq_len,
                                          int64_t element_bytes);

}  // namespace vramlab::lesson06
