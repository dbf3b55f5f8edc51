/// \file
/// \brief Flash attention (Dao et al. 2022, "FlashAttention", arXiv 2205.14135; Dao 2023,
/// "FlashAttention-2", arXiv 2307.08691): the causal attention of attention.h computed tile by
/// tile, so no (B, H, T, T) tensor is ever stored. The forward keeps, besides the output, only the
/// per-row log-sum-exp of the scaled scores, lse (B, H, T) in f32; the backward recomputes each
/// tile's scores from q, k and lse.
///
/// Same maths as attention_forward/attention_backward (attention.h): causal, H query heads over
/// Hkv key/value heads (query head h reads kv head h / (H / Hkv)), scale 1/√D, the same dropout
/// mask bits (element offset + ((b·H + h)·T + t)·T + s), backward ACCUMULATES into dq, dk, dv.
///
/// Forward (FA2 Alg. 1): for each query tile i (tiles.query_rows rows) the key/value tiles
/// j = 0 … i·Br/Bc are visited in order; tiles entirely above the diagonal are skipped. Each row
/// keeps a running max m and sum ℓ of exp(s − m); a new tile with a larger max rescales the
/// accumulated output and ℓ by exp(m_old − m_new). At the end out = acc / ℓ and
/// lse = m + log ℓ (natural log). With dropout, ℓ sums the undropped exp(s − m) (the softmax's
/// denominator) while the output accumulates exp(s − m) · keep / (1 − p).
///
/// Backward: delta[b, h, t] = Σ_d dout[b, t, h, d] · out[b, t, h, d] (FA2's D_i, written to the
/// caller's scratch), then for each tile P = exp(S − lse), dP = dout · vᵀ (· keep / (1 − p) with
/// dropout), dS = P ∘ (dP − delta), dq += dS · k / √D, dk += dSᵀ · q / √D, dv += (P ∘ keep /
/// (1 − p))ᵀ · dout. It runs in two passes so that no two threads ever add into the same
/// gradient (no atomics; bitwise the same for any thread count): dk and dv per key/value tile
/// (summing over the group's query heads and the query tiles at or below the diagonal, in a fixed
/// order), then dq per query tile. Each gradient element's whole contribution is summed in f32 and
/// added once.
#pragma once

#include <cstdint>

#include "kernels/cpu/dropout.h"

namespace vramlab::kernels::cpu {

/// The tile sizes: query rows per tile (FA's B_r) and key/value rows per tile (B_c). Any T works:
/// the last tile of each kind may be shorter.
struct FlashTiles {
  int64_t query_rows = 64;  ///< B_r ≥ 1
  int64_t key_rows = 64;    ///< B_c ≥ 1
};

/// How the causal mask splits the (query tile, key tile) grid of one (batch, head).
struct FlashTileCounts {
  int64_t total = 0;    ///< ⌈T/B_r⌉ · ⌈T/B_c⌉
  int64_t full = 0;     ///< every score of the tile is at or below the diagonal (no mask needed)
  int64_t partial = 0;  ///< the tile straddles the diagonal (masked per element)
  int64_t skipped = 0;  ///< every score is above the diagonal: never computed
};

/// \return the tile classification for sequence length \p T (≥ 0) and \p tiles.
/// \throws vramlab::InternalError for T < 0 or a tile size < 1.
FlashTileCounts flash_tile_counts(int64_t T, const FlashTiles& tiles = {});

/// out = attention(q, k, v) as attention_forward, and lse, without storing any score.
/// - out (B, T, H, D) written
/// - lse (B, H, T) written: log Σ_{s ≤ t} exp(q_t·k_s / √D), always f32
/// - q (B, T, H, D); k, v (B, T, Hkv, D)
/// \tparam A float, bf16_t or f16_t (kernels/cpu/storage.h): inputs widened, scores, the running
/// statistics and the output accumulator in f32, out rounded once.
/// \throws vramlab::InternalError on a negative size, Hkv = 0 with H > 0, H % Hkv != 0, a tile size
/// < 1 or a dropout probability outside [0, 1).
template <typename A>
void flash_attention_forward(A* out, float* lse, const A* q, const A* k, const A* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const AttentionDropout& dropout = {}, const FlashTiles& tiles = {});

/// Gradients of flash_attention_forward, accumulated into dq (B, T, H, D), dk, dv (B, T, Hkv, D).
/// - delta (B, H, T) f32 scratch, written (rowsum(dout ∘ out))
/// - dout, out (B, T, H, D): the output's gradient and the forward's output
/// - lse (B, H, T): the forward's
/// - q, k, v, \p dropout: the forward's
/// \tparam A as flash_attention_forward. \throws as flash_attention_forward.
template <typename A>
void flash_attention_backward(A* dq, A* dk, A* dv, float* delta, const A* dout, const A* q,
                              const A* k, const A* v, const A* out, const float* lse, int64_t B,
                              int64_t T, int64_t H, int64_t Hkv, int64_t D,
                              const AttentionDropout& dropout = {}, const FlashTiles& tiles = {});

/// The readable reference of flash_attention_forward: the tile loops of the algorithm written
/// plainly, one (batch, head) at a time, no threads, no vectors. \tparam Real float or double (lse
/// in Real too). \throws as flash_attention_forward.
template <typename Real>
void flash_attention_forward_reference(Real* out, Real* lse, const Real* q, const Real* k,
                                       const Real* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                       int64_t D, const AttentionDropout& dropout = {},
                                       const FlashTiles& tiles = {});

/// The readable reference of flash_attention_backward. \tparam Real float or double.
/// \throws as flash_attention_forward.
template <typename Real>
void flash_attention_backward_reference(Real* dq, Real* dk, Real* dv, Real* delta, const Real* dout,
                                        const Real* q, const Real* k, const Real* v,
                                        const Real* out, const Real* lse, int64_t B, int64_t T,
                                        int64_t H, int64_t Hkv, int64_t D,
                                        const AttentionDropout& dropout = {},
                                        const FlashTiles& tiles = {});

}  // namespace vramlab::kernels::cpu
