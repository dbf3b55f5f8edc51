/// \file
/// \brief Exercise 06.3: the softmax part of the flash-attention backward: the per-row term
/// delta = rowsum(dO ∘ O) and a tile of dS = P ∘ (dP − delta).
///
/// The one API shared by the stub (exercises/06-flash-attention/backward_ds.cpp) and the
/// reference (solutions/06-flash-attention/backward_ds.cpp). In the backward of one (batch,
/// head), with P = softmax(S) row by row (masked entries 0), O = P · V and dO the output's
/// gradient, the gradient of the scores is, entry by entry,
///
///     dP = dO · Vᵀ                      (T, T)
///     dS[t, u] = P[t, u] · (dP[t, u] − delta[t])
///
/// where delta is a per-row term (T values). The naive backward computes delta from a whole row of
/// P and dP; flash attention never holds a whole row, so it computes delta beforehand from the
/// output instead (Dao 2023, "FlashAttention-2", arXiv 2307.08691, Alg. 2, D_i; the two are
/// equal). Then every (query tile, key tile) pair computes its dS from its own P and dP tiles and
/// the delta of its query rows. dS then gives dQ += dS · K · scale and dK += dSᵀ · Q · scale.
#pragma once

#include <cstdint>
#include <span>

#include "lessons/06-flash-attention/api/forward_tile_step.h"

namespace vramlab::lesson06 {

/// Exercise 06.3: delta[t] = Σ_i dout[t, i] · out[t, i], one value per query row.
/// \param dout (rows, head_dim) the output's gradient. \param out (rows, head_dim) the output.
/// \param rows query rows (≥ 0). \param head_dim d (≥ 1).
/// \param delta (rows) written.
/// The spans' sizes must match the shapes above (not checked).
void backward_delta(std::span<const float> dout, std::span<const float> out, int64_t rows,
                    int64_t head_dim, std::span<float> delta);

/// Exercise 06.3: one tile of dS.
/// \param p (rows, cols) the tile of P (0 where masked). \param dp (rows, cols) the tile of dP.
/// \param delta (T) the delta of every query row of the sequence (backward_delta).
/// \param rows the tile's query rows. \param cols the tile's key rows.
/// \param at the positions of the tile's first query row and first key row.
/// \param ds (rows, cols) written: the tile of dS.
/// The spans' sizes must match the shapes above (not checked).
void backward_ds_tile(std::span<const float> p, std::span<const float> dp,
                      std::span<const float> delta, int64_t rows, int64_t cols, TilePosition at,
                      std::span<float> ds);

}  // namespace vramlab::lesson06
