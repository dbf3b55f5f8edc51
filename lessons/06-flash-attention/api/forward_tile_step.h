/// \file
/// \brief Exercise 06.2: one step of the flash-attention forward, a query tile against one
/// key/value tile under the causal mask (FlashAttention-2's inner loop).
///
/// The one API shared by the stub (exercises/06-flash-attention/forward_tile_step.cpp) and the
/// reference (solutions/06-flash-attention/forward_tile_step.cpp). The forward of one (batch,
/// head) splits the queries into tiles of B_r rows and the keys and values into tiles of B_c rows
/// (Dao 2023, "FlashAttention-2", arXiv 2307.08691, Alg. 1). A query tile keeps, per row r, the
/// running max m_r and sum ℓ_r of exercise 06.1 and an output accumulator that is NOT divided by
/// ℓ until the very end (FA2's Õ):
///
///     S[r, c] = scale · q_r · k_c   if key position ≤ query position, else −inf (causal mask)
///     m_r     = max over the keys seen so far of S[r, c]
///     ℓ_r     = Σ over the keys seen so far of exp(S[r, c] − m_r)
///     acc[r]  = Σ over the keys seen so far of exp(S[r, c] − m_r) · v_c     (a row of d values)
///
/// One step adds one key/value tile to "the keys seen so far", in any order of tiles. finish then
/// gives out[r] = acc[r] / ℓ_r (the softmax-weighted mean of the visible v) and
/// lse_r = m_r + log ℓ_r. A row with no visible key so far has m = −inf, ℓ = 0 and acc = 0, never
/// NaN (a tile entirely above the diagonal, visited first, leaves it so); finish gives it out = 0
/// and lse = −inf. Scores, statistics and the accumulator are f32.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace vramlab::lesson06 {

/// The running state of one query tile.
struct QueryTileState {
  int64_t rows = 0;        ///< the tile's query rows (B_r, or fewer for the last tile)
  int64_t head_dim = 0;    ///< d
  std::vector<float> acc;  ///< (rows, head_dim) Σ exp(S − m) · v over the keys seen, not ÷ ℓ
  std::vector<float> max;  ///< (rows) m: the largest visible score seen (−inf: none)
  std::vector<float> sum;  ///< (rows) ℓ: Σ exp(S − m) over the visible keys seen
};

/// \return the state of a query tile before its first key tile: acc 0, m −inf, ℓ 0.
inline QueryTileState start_query_tile(int64_t rows, int64_t head_dim) {
  QueryTileState state;
  state.rows = rows;
  state.head_dim = head_dim;
  state.acc.assign(static_cast<size_t>(rows * head_dim), 0.0f);
  state.max.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
  state.sum.assign(static_cast<size_t>(rows), 0.0f);
  return state;
}

/// Where a tile sits in the sequence: the positions of its first query and first key.
struct TilePosition {
  int64_t query_start = 0;  ///< position of the tile's query row 0 (≥ 0)
  int64_t key_start = 0;    ///< position of the key/value tile's row 0 (≥ 0)
};

/// Exercise 06.2: adds one key/value tile to a query tile's state (see the file comment).
/// \param state the query tile's running state (state.rows rows of state.head_dim); updated.
/// \param q (state.rows, head_dim) the tile's queries, row-major.
/// \param k (key_rows, head_dim) the key tile. \param v (key_rows, head_dim) the value tile.
/// \param key_rows the key/value tile's rows (B_c, or fewer for the last tile; ≥ 0).
/// \param at the positions of the query tile and of the key/value tile, for the causal mask.
/// \param scale the factor of the scores, 1/√d in attention.
/// The spans' sizes must match the shapes above (not checked).
void forward_tile_step(QueryTileState& state, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, int64_t key_rows, TilePosition at, float scale);

/// Exercise 06.2: the tile's output once every key/value tile it needs was added.
/// \param state the query tile's final state.
/// \param out (state.rows, head_dim) written: acc / ℓ per row (0 for a row with ℓ = 0).
/// \param lse (state.rows) written: m + log ℓ per row (−inf for a row with ℓ = 0).
void forward_tile_finish(const QueryTileState& state, std::span<float> out, std::span<float> lse);

}  // namespace vramlab::lesson06
