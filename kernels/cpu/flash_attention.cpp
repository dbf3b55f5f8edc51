// Flash attention on the CPU (see flash_attention.h): a readable reference that follows the
// FlashAttention-2 tile loops line by line, and a fast path with the same loops on f32 tiles.
//
// Note [fast flash attention on the CPU]
// - Every tile product (S = Q·Kᵀ, O += P·V, dP = dO·Vᵀ, dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K) is
//   one routine, tile_gemm: C += A·B on row-major f32 tiles. Its micro-kernel keeps a block of
//   kRows rows × kVectors vectors of C in registers and streams one row of B per step, so each
//   load of B feeds kRows fused multiply-adds (the build uses -std=c++20, which turns off FMA
//   contraction; the FMA is therefore written explicitly).
// - Tiles are copied widened into per-thread f32 scratch whose rows are padded to whole vectors
//   (Dp, Bcp, Brp columns; the padding is zero, masked or never read), so the micro-kernel has no
//   column tail. Whatever a task reuses across its loop is transposed once: the forward and the
//   dQ pass keep their query tile as (q/√D)ᵀ (D, Brp) and compute Sᵀ = K·Qᵀ with the key tiles
//   read as plain rows, so the softmax runs with the vector lanes over queries; the dK/dV pass
//   keeps its key tile as Kᵀ, Vᵀ (D, Bcp) and computes S = Q·Kᵀ. Products with Pᵀ or dSᵀ on the
//   left read those tiles column-wise in the micro-kernel instead of transposing them.
// - q is multiplied by 1/√D when its tile is loaded: the scores need no extra pass, and dK +=
//   dSᵀ·(q/√D) already carries the factor.
// - Causal tiles cost 1 … ⌈T/Br⌉ key tiles: the tasks are handed out dynamically, longest first.
//   Every task computes alone with a fixed summation order, so the bits do not depend on which
//   thread runs it nor on the thread count.
#include "kernels/cpu/flash_attention.h"

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {
namespace {

void check_arguments(const char* op, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                     const AttentionDropout& dropout, const FlashTiles& tiles) {
  require_dropout_probability(op, dropout.p);
  require_non_negative(op, "B", B);
  require_non_negative(op, "T", T);
  require_non_negative(op, "H", H);
  require_non_negative(op, "Hkv", Hkv);
  require_non_negative(op, "D", D);
  require(H == 0 || (Hkv > 0 && H % Hkv == 0), op,
          "kv heads Hkv = " + std::to_string(Hkv) + " must divide heads H = " + std::to_string(H));
  require(tiles.query_rows >= 1, op,
          "tile query rows must be >= 1, got " + std::to_string(tiles.query_rows));
  require(tiles.key_rows >= 1, op,
          "tile key rows must be >= 1, got " + std::to_string(tiles.key_rows));
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// The mask element of score (b, h, t, s) (attention.h): offset + ((b·H + h)·T + t)·T + s.
uint64_t score_index(const AttentionDropout& dropout, int64_t b, int64_t h, int64_t t, int64_t s,
                     int64_t H, int64_t T) {
  return dropout.offset + static_cast<uint64_t>(((b * H + h) * T + t) * T + s);
}

__extension__ typedef unsigned __int128 uint128;

// Σ_{i=0}^{n-1} ⌊(a·i + b) / m⌋ for n, a, b ≥ 0, m ≥ 1, in O(log) steps (the classic "floor sum"
// recursion: take out the whole parts of a/m and b/m, then swap the roles of a and m).
uint128 floor_sum(uint128 n, uint128 m, uint128 a, uint128 b) {
  uint128 sum = 0;
  while (n > 0) {
    if (a >= m) {
      sum += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const uint128 y_max = a * n + b;
    if (y_max < m) break;
    n = y_max / m;
    b = y_max % m;
    std::swap(m, a);
  }
  return sum;
}

}  // namespace

// Query tile i covers rows r0 = i·Br … r1 = min(r0 + Br, T) − 1, key tile j columns c0 = j·Bc … c1.
// Tile (i, j) is skipped when c0 > r1 and full when c1 ≤ r0. Per query tile the unskipped key
// tiles are j ≤ ⌊r1/Bc⌋ and the full ones j < ⌊(r0 + 1)/Bc⌋ (all of them when r0 = T − 1); the
// sums over i are floor sums, so 64-bit T costs no loop over tiles.
FlashTileCounts flash_tile_counts(int64_t T, const FlashTiles& tiles) {
  require_non_negative("flash_tile_counts", "T", T);
  require(tiles.query_rows >= 1 && tiles.key_rows >= 1, "flash_tile_counts",
          "tile sizes must be >= 1, got query rows " + std::to_string(tiles.query_rows) +
              " and key rows " + std::to_string(tiles.key_rows));
  if (T == 0) return {};
  const int64_t Br = tiles.query_rows, Bc = tiles.key_rows;
  const int64_t query_tiles = ceil_div(T, Br), key_tiles = ceil_div(T, Bc);
  const uint128 total = static_cast<uint128>(query_tiles) * static_cast<uint128>(key_tiles);
  require(total <= static_cast<uint128>(std::numeric_limits<int64_t>::max()), "flash_tile_counts",
          "the tile count overflows int64 for T = " + std::to_string(T));
  // The first query_tiles − 1 tiles are whole (Br rows); the last one ends at T − 1.
  const auto whole = static_cast<uint128>(query_tiles - 1);
  const int64_t last_r0 = (query_tiles - 1) * Br;
  const uint128 computed = floor_sum(whole, Bc, Br, Br - 1) + whole +
                           static_cast<uint128>(key_tiles);  // last tile: every key tile
  const uint128 full = floor_sum(whole, Bc, Br, 1) +
                       static_cast<uint128>(last_r0 + 1 == T ? key_tiles : (last_r0 + 1) / Bc);
  FlashTileCounts counts;
  counts.total = static_cast<int64_t>(total);
  counts.full = static_cast<int64_t>(full);
  counts.partial = static_cast<int64_t>(computed - full);
  counts.skipped = static_cast<int64_t>(total - computed);
  return counts;
}

// ---------------------------------------------------------------------------------------------
// The reference: FA2's loops for one (batch, head) at a time, in Real, no threads.

template <typename Real>
void flash_attention_forward_reference(Real* out, Real* lse, const Real* q, const Real* k,
                                       const Real* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                       int64_t D, const AttentionDropout& dropout,
                                       const FlashTiles& tiles) {
  check_arguments("flash_attention_forward_reference", B, T, H, Hkv, D, dropout, tiles);
  if (H == 0 || T == 0) return;
  const int64_t group = H / Hkv, Br = tiles.query_rows, Bc = tiles.key_rows;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
  const Real keep_scale = Real(1) / (Real(1) - static_cast<Real>(dropout.p));
  const Real minus_infinity = -std::numeric_limits<Real>::infinity();
  const auto q_at = [&](int64_t b, int64_t t, int64_t h) { return q + ((b * T + t) * H + h) * D; };
  const auto kv_at = [&](int64_t b, int64_t t, int64_t kvh) {
    return ((b * T + t) * Hkv + kvh) * D;
  };
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      const int64_t kvh = h / group;
      for (int64_t r0 = 0; r0 < T; r0 += Br) {
        const int64_t r1 = std::min(r0 + Br, T) - 1;  // the tile's last query row
        const int64_t rows = r1 - r0 + 1;
        // Per query row of the tile: running max m, running sum ℓ, unnormalised output acc.
        std::vector<Real> m(static_cast<size_t>(rows), minus_infinity);       // (rows)
        std::vector<Real> l(static_cast<size_t>(rows), Real(0));              // (rows)
        std::vector<Real> acc(static_cast<size_t>(rows * D), Real(0));        // (rows, D)
        std::vector<Real> s(static_cast<size_t>(rows * Bc), minus_infinity);  // (rows, Bc)
        // Key tiles in order, up to the one holding the diagonal of the last row; the later ones
        // lie entirely above the diagonal and are skipped.
        for (int64_t c0 = 0; c0 <= r1; c0 += Bc) {
          const int64_t cols = std::min(c0 + Bc, T) - c0;
          for (int64_t r = 0; r < rows; r++) {
            const int64_t t = r0 + r;
            // S = Q·Kᵀ/√D for the tile; a key after the query (causal mask) gets -inf.
            Real tile_max = minus_infinity;
            for (int64_t c = 0; c < cols; c++) {
              Real& score = s[static_cast<size_t>(r * Bc + c)];
              if (c0 + c > t) {
                score = minus_infinity;
                continue;
              }
              Real dot = 0;
              for (int64_t d = 0; d < D; d++)
                dot += q_at(b, t, h)[d] * k[kv_at(b, c0 + c, kvh) + d];
              score = dot * scale;
              tile_max = std::max(tile_max, score);
            }
            // Online softmax: rescale what was accumulated under the old max.
            const auto row = static_cast<size_t>(r);
            const Real m_new = std::max(m[row], tile_max);
            const Real correction = std::exp(m[row] - m_new);
            l[row] *= correction;
            for (int64_t d = 0; d < D; d++) acc[static_cast<size_t>(r * D + d)] *= correction;
            for (int64_t c = 0; c < cols && c0 + c <= t; c++) {
              const Real p = std::exp(s[static_cast<size_t>(r * Bc + c)] - m_new);
              l[row] += p;  // the softmax's denominator: undropped
              const bool keep = dropout_keep(
                  dropout.seed, score_index(dropout, b, h, t, c0 + c, H, T), dropout.p);
              const Real weight = keep ? p * keep_scale : Real(0);
              for (int64_t d = 0; d < D; d++) {
                acc[static_cast<size_t>(r * D + d)] += weight * v[kv_at(b, c0 + c, kvh) + d];
              }
            }
            m[row] = m_new;
          }
        }
        for (int64_t r = 0; r < rows; r++) {
          const auto row = static_cast<size_t>(r);
          for (int64_t d = 0; d < D; d++) {
            out[((b * T + r0 + r) * H + h) * D + d] = acc[static_cast<size_t>(r * D + d)] / l[row];
          }
          lse[(b * H + h) * T + r0 + r] = m[row] + std::log(l[row]);
        }
      }
    }
  }
}

template <typename Real>
void flash_attention_backward_reference(Real* dq, Real* dk, Real* dv, Real* delta, const Real* dout,
                                        const Real* q, const Real* k, const Real* v,
                                        const Real* out, const Real* lse, int64_t B, int64_t T,
                                        int64_t H, int64_t Hkv, int64_t D,
                                        const AttentionDropout& dropout, const FlashTiles& tiles) {
  check_arguments("flash_attention_backward_reference", B, T, H, Hkv, D, dropout, tiles);
  if (H == 0 || T == 0) return;
  const int64_t group = H / Hkv, Br = tiles.query_rows, Bc = tiles.key_rows;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
  const Real keep_scale = Real(1) / (Real(1) - static_cast<Real>(dropout.p));
  const auto qo_at = [&](int64_t b, int64_t t, int64_t h) { return ((b * T + t) * H + h) * D; };
  const auto kv_at = [&](int64_t b, int64_t t, int64_t kvh) {
    return ((b * T + t) * Hkv + kvh) * D;
  };
  // delta = rowsum(dout ∘ out), which equals Σ_s P_s·dP_s (FA2's D_i).
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t t = 0; t < T; t++) {
        Real sum = 0;
        for (int64_t d = 0; d < D; d++) sum += dout[qo_at(b, t, h) + d] * out[qo_at(b, t, h) + d];
        delta[(b * H + h) * T + t] = sum;
      }
    }
  }
  // One score (b, h, t, s) with s ≤ t recomputed from q, k and lse: the probability p, the
  // dropout factor (keep / (1 − p) or 0) and the score gradient dS = P·(dP − delta).
  struct Score {
    Real p, dropped, ds;
  };
  const auto recompute = [&](int64_t b, int64_t h, int64_t t, int64_t s) {
    const int64_t kvh = h / group;
    Real dot = 0, dp = 0;
    for (int64_t d = 0; d < D; d++) {
      dot += q[qo_at(b, t, h) + d] * k[kv_at(b, s, kvh) + d];
      dp += dout[qo_at(b, t, h) + d] * v[kv_at(b, s, kvh) + d];
    }
    const Real p = std::exp(dot * scale - lse[(b * H + h) * T + t]);
    const bool keep = dropout_keep(dropout.seed, score_index(dropout, b, h, t, s, H, T), dropout.p);
    const Real factor = keep ? keep_scale : Real(0);
    return Score{p, p * factor, p * (dp * factor - delta[(b * H + h) * T + t])};
  };
  // Pass 1, per key/value tile: dK and dV summed over the group's heads and the query tiles that
  // reach the tile (those at or below the diagonal), then added once.
  for (int64_t b = 0; b < B; b++) {
    for (int64_t kvh = 0; kvh < Hkv; kvh++) {
      for (int64_t c0 = 0; c0 < T; c0 += Bc) {
        const int64_t cols = std::min(c0 + Bc, T) - c0;
        std::vector<Real> dk_acc(static_cast<size_t>(cols * D), Real(0));  // (cols, D)
        std::vector<Real> dv_acc(static_cast<size_t>(cols * D), Real(0));  // (cols, D)
        for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
          for (int64_t r0 = c0 / Br * Br; r0 < T; r0 += Br) {
            const int64_t rows = std::min(r0 + Br, T) - r0;
            for (int64_t r = 0; r < rows; r++) {
              const int64_t t = r0 + r;
              for (int64_t c = 0; c < cols && c0 + c <= t; c++) {
                const Score score = recompute(b, h, t, c0 + c);
                for (int64_t d = 0; d < D; d++) {
                  const auto at = static_cast<size_t>(c * D + d);
                  dv_acc[at] += score.dropped * dout[qo_at(b, t, h) + d];
                  dk_acc[at] += score.ds * q[qo_at(b, t, h) + d] * scale;
                }
              }
            }
          }
        }
        for (int64_t c = 0; c < cols; c++) {
          for (int64_t d = 0; d < D; d++) {
            dk[kv_at(b, c0 + c, kvh) + d] += dk_acc[static_cast<size_t>(c * D + d)];
            dv[kv_at(b, c0 + c, kvh) + d] += dv_acc[static_cast<size_t>(c * D + d)];
          }
        }
      }
    }
  }
  // Pass 2, per query tile: dQ over the key tiles at or below the diagonal, then added once.
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      const int64_t kvh = h / group;
      for (int64_t r0 = 0; r0 < T; r0 += Br) {
        const int64_t r1 = std::min(r0 + Br, T) - 1;
        const int64_t rows = r1 - r0 + 1;
        std::vector<Real> dq_acc(static_cast<size_t>(rows * D), Real(0));  // (rows, D)
        for (int64_t c0 = 0; c0 <= r1; c0 += Bc) {
          const int64_t cols = std::min(c0 + Bc, T) - c0;
          for (int64_t r = 0; r < rows; r++) {
            const int64_t t = r0 + r;
            for (int64_t c = 0; c < cols && c0 + c <= t; c++) {
              const Score score = recompute(b, h, t, c0 + c);
              for (int64_t d = 0; d < D; d++) {
                dq_acc[static_cast<size_t>(r * D + d)] +=
                    score.ds * k[kv_at(b, c0 + c, kvh) + d] * scale;
              }
            }
          }
        }
        for (int64_t r = 0; r < rows; r++) {
          for (int64_t d = 0; d < D; d++) {
            dq[qo_at(b, r0 + r, h) + d] += dq_acc[static_cast<size_t>(r * D + d)];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The fast path (Note [fast flash attention on the CPU]).

namespace {

#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;
constexpr int kRows = 4, kVectors = 4;
#elif defined(__AVX__)
constexpr int64_t kLanes = 8;
constexpr int kRows = 4, kVectors = 2;
#else
constexpr int64_t kLanes = 4;
constexpr int kRows = 4, kVectors = 2;
#endif
// One machine vector of floats (the width the build enables, so no ABI warnings).
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, Vec v) {
  std::memcpy(p, &v, sizeof v);
}
// acc + x·b, fused where the machine has FMA.
inline Vec multiply_add(Vec acc, float x, Vec b) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(_mm512_set1_ps(x), b, acc);
#elif defined(__FMA__)
  return _mm256_fmadd_ps(_mm256_set1_ps(x), b, acc);
#else
  return acc + x * b;
#endif
}

int64_t round_up(int64_t n, int64_t multiple) {
  return ceil_div(n, multiple) * multiple;
}

// c (R, V·kLanes) += a (R, depth) · b (depth, V·kLanes); leading dimensions lda, ldb, ldc. With
// TransposedA, a is stored (depth, R): element (r, p) at a[p·lda + r].
template <int R, int V, bool TransposedA>
void gemm_block(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb,
                int64_t depth) {
  Vec acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
#pragma GCC unroll 16
    for (int x = 0; x < V; x++) acc[r][x] = load(c + r * ldc + x * kLanes);
  }
  for (int64_t p = 0; p < depth; p++) {
    Vec b_row[V];
#pragma GCC unroll 16
    for (int x = 0; x < V; x++) b_row[x] = load(b + p * ldb + x * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const float a_value = TransposedA ? a[p * lda + r] : a[r * lda + p];
#pragma GCC unroll 16
      for (int x = 0; x < V; x++) acc[r][x] = multiply_add(acc[r][x], a_value, b_row[x]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
#pragma GCC unroll 16
    for (int x = 0; x < V; x++) store(c + r * ldc + x * kLanes, acc[r][x]);
  }
}

// The last rows (fewer than kRows) of a column block.
template <int V, bool TransposedA, int R = kRows - 1>
void gemm_tail_rows(int64_t rows, float* c, int64_t ldc, const float* a, int64_t lda,
                    const float* b, int64_t ldb, int64_t depth) {
  if constexpr (R > 0) {
    if (rows == R) {
      gemm_block<R, V, TransposedA>(c, ldc, a, lda, b, ldb, depth);
    } else {
      gemm_tail_rows<V, TransposedA, R - 1>(rows, c, ldc, a, lda, b, ldb, depth);
    }
  }
}

template <int V, bool TransposedA>
void gemm_columns(int64_t m, float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                  int64_t ldb, int64_t depth) {
  int64_t r = 0;
  for (; r + kRows <= m; r += kRows) {
    gemm_block<kRows, V, TransposedA>(c + r * ldc, ldc, a + (TransposedA ? r : r * lda), lda, b,
                                      ldb, depth);
  }
  gemm_tail_rows<V, TransposedA>(m - r, c + r * ldc, ldc, a + (TransposedA ? r : r * lda), lda, b,
                                 ldb, depth);
}

// c (m, n) += a (m, depth) · b (depth, n), row-major with leading dimensions; n is a multiple of
// kLanes (the scratch tiles are padded). The summation order over depth is fixed. With
// TransposedA, c += aᵀ·b for a stored (depth, m).
template <bool TransposedA = false>
void tile_gemm(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb,
               int64_t m, int64_t n, int64_t depth) {
  int64_t col = 0;
  for (; col + kVectors * kLanes <= n; col += kVectors * kLanes) {
    gemm_columns<kVectors, TransposedA>(m, c + col, ldc, a, lda, b + col, ldb, depth);
  }
  for (; col < n; col += kLanes) {
    gemm_columns<1, TransposedA>(m, c + col, ldc, a, lda, b + col, ldb, depth);
  }
}

// The scratch of one task: f32 tiles with rows padded to whole vectors.
struct TileShape {
  int64_t Br, Bc, D, Dp, Bcp, Brp;  // tile rows, tile columns, head size, padded D, Bc, Br
};

TileShape tile_shape(int64_t T, int64_t D, const FlashTiles& tiles) {
  // A tile never needs more rows than the sequence has (tiles of T + 5 allocate T).
  const int64_t Br = std::min(tiles.query_rows, T), Bc = std::min(tiles.key_rows, T);
  return {Br,
          Bc,
          D,
          round_up(std::max<int64_t>(D, 1), kLanes),
          round_up(Bc, kLanes),
          round_up(Br, kLanes)};
}

std::vector<float> zeros(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), 0.0f);
}

// tile (rows, Dp) = widen(x rows first … first + rows − 1 of head `head`) · factor.
template <typename A>
void load_rows(float* tile, const A* x, int64_t b, int64_t first, int64_t rows, int64_t heads,
               int64_t head, int64_t T, const TileShape& shape, float factor) {
  for (int64_t r = 0; r < rows; r++) {
    const A* row = x + ((b * T + first + r) * heads + head) * shape.D;  // (D)
    float* dst = tile + r * shape.Dp;
    for (int64_t d = 0; d < shape.D; d++) dst[d] = widen(row[d]) * factor;
  }
}

// tile (D, ld): tile[d, c] = widen(x[b, first + c, head, d]) · factor, c < cols.
template <typename A>
void load_transposed(float* tile, int64_t ld, const A* x, int64_t b, int64_t first, int64_t cols,
                     int64_t heads, int64_t head, int64_t T, int64_t D, float factor = 1.0f) {
  for (int64_t c = 0; c < cols; c++) {
    const A* row = x + ((b * T + first + c) * heads + head) * D;  // (D)
    for (int64_t d = 0; d < D; d++) tile[d * ld + c] = widen(row[d]) * factor;
  }
}

// The number of keys of tile c0 … c0 + cols − 1 that query t may see (causal), ≥ 0.
int64_t visible_keys(int64_t t, int64_t c0, int64_t cols) {
  return std::clamp<int64_t>(t - c0 + 1, 0, cols);
}

// The dropout factor of the scores (b, h, t, c0 + c), c < count: keep / (1 − p) or 0, into f.
void dropout_factors(float* f, const AttentionDropout& dropout, uint64_t first, int64_t count) {
  const float scale = dropout_scale(dropout.p);
  for (int64_t c = 0; c < count; c++) {
    f[c] = dropout_keep(dropout.seed, first + static_cast<uint64_t>(c), dropout.p) ? scale : 0.0f;
  }
}

}  // namespace

template <typename A>
void flash_attention_forward(A* out, float* lse, const A* q, const A* k, const A* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const AttentionDropout& dropout, const FlashTiles& tiles) {
  check_arguments("flash_attention_forward", B, T, H, Hkv, D, dropout, tiles);
  if (B == 0 || H == 0 || T == 0) return;
  const TileShape shape = tile_shape(T, D, tiles);
  const int64_t Br = shape.Br, Bc = shape.Bc, Dp = shape.Dp, Brp = shape.Brp;
  const int64_t group = H / Hkv, query_tiles = ceil_div(T, Br);
  const int64_t tasks = B * H * query_tiles;
  const bool dropping = dropout.p > 0.0f;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float minus_infinity = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> q_tile = zeros(D * Brp);  // (D, Brp) (q / √D)ᵀ
    std::vector<float> k_tile = zeros(Bc * Dp);  // (Bc, Dp)
    std::vector<float> v_tile = zeros(Bc * Dp);  // (Bc, Dp)
    std::vector<float> s = zeros(Bc * Brp);      // (Bc, Brp) scores Sᵀ, then Pᵀ
    std::vector<float> acc = zeros(Br * Dp);     // (Br, Dp) unnormalised output
    std::vector<float> m = zeros(Brp);           // (Brp) running max
    std::vector<float> l = zeros(Brp);           // (Brp) running Σ exp(s − m)
    std::vector<float> tile_max = zeros(Brp);    // (Brp)
    std::vector<float> tile_sum = zeros(Brp);    // (Brp)
    std::vector<float> correction = zeros(Brp);  // (Brp) exp(m_old − m_new)
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; task++) {
      // Longest first: the last query tiles see the most key tiles.
      const int64_t i = query_tiles - 1 - task % query_tiles;
      const int64_t bh = task / query_tiles, b = bh / H, h = bh % H, kvh = h / group;
      const int64_t r0 = i * Br, rows = std::min(Br, T - r0), r1 = r0 + rows - 1;
      load_transposed(q_tile.data(), Brp, q, b, r0, rows, H, h, T, D, scale);
      std::fill(m.begin(), m.end(), minus_infinity);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t c0 = 0; c0 <= r1; c0 += Bc) {
        const int64_t cols = std::min(Bc, T - c0);
        load_rows(k_tile.data(), k, b, c0, cols, Hkv, kvh, T, shape, 1.0f);
        load_rows(v_tile.data(), v, b, c0, cols, Hkv, kvh, T, shape, 1.0f);
        std::fill(s.begin(), s.begin() + cols * Brp, 0.0f);
        tile_gemm(s.data(), Brp, k_tile.data(), Dp, q_tile.data(), Brp, cols, Brp, D);
        // Key c is visible to the queries r ≥ c0 + c − r0 (causal); the vectors run over queries.
        std::fill(tile_max.begin(), tile_max.end(), minus_infinity);
        for (int64_t c = 0; c < cols; c++) {
          const float* s_row = s.data() + c * Brp;  // (Brp) key c against every query
          const int64_t first = std::max<int64_t>(c0 + c - r0, 0);
#pragma omp simd
          for (int64_t r = first; r < Brp; r++) tile_max[r] = std::max(tile_max[r], s_row[r]);
        }
#pragma omp simd
        for (int64_t r = 0; r < Brp; r++) {
          const float m_new = std::max(m[r], tile_max[r]);
          correction[r] = fast_exp(m[r] - m_new);
          m[r] = m_new;
          tile_sum[r] = 0.0f;
        }
        for (int64_t c = 0; c < cols; c++) {
          float* s_row = s.data() + c * Brp;
          const int64_t first = std::max<int64_t>(c0 + c - r0, 0);
#pragma omp simd
          for (int64_t r = 0; r < Brp; r++) {
            const float p = r >= first ? fast_exp(s_row[r] - m[r]) : 0.0f;
            s_row[r] = p;
            tile_sum[r] += p;  // the softmax's denominator: undropped
          }
          if (dropping) {
            const float keep_scale = dropout_scale(dropout.p);
            for (int64_t r = first; r < rows; r++) {
              const bool keep = dropout_keep(
                  dropout.seed, score_index(dropout, b, h, r0 + r, c0 + c, H, T), dropout.p);
              s_row[r] *= keep ? keep_scale : 0.0f;
            }
          }
        }
        for (int64_t r = 0; r < rows; r++) {
          l[r] = l[r] * correction[r] + tile_sum[r];
          float* acc_row = acc.data() + r * Dp;
          const float factor = correction[r];
#pragma omp simd
          for (int64_t d = 0; d < Dp; d++) acc_row[d] *= factor;
        }
        tile_gemm<true>(acc.data(), Dp, s.data(), Brp, v_tile.data(), Dp, rows, Dp, cols);
      }
      for (int64_t r = 0; r < rows; r++) {
        const float inv_l = 1.0f / l[r];
        A* out_row = out + ((b * T + r0 + r) * H + h) * D;  // (D)
        const float* acc_row = acc.data() + r * Dp;
        for (int64_t d = 0; d < D; d++) out_row[d] = narrow<A>(acc_row[d] * inv_l);
        lse[(b * H + h) * T + r0 + r] = m[r] + std::log(l[r]);
      }
    }
  }
}

namespace {

// The per-thread tiles of the dK/dV pass, and its step: for query tile rows
// r0 … r0 + rows − 1 of head h against key tile c0 … c0 + cols − 1, P = exp(S − lse) (written
// into p, masked entries 0), dP = dO·Vᵀ with dropout (into dp) and dS = P∘(dP − delta) (into
// ds). q_tile holds q / √D, k_tile kᵀ and v_tile vᵀ of the key tile.
struct BackwardScratch {
  std::vector<float> q_tile, dout_tile, k_tile, v_tile, p, dp, ds, keep, lse, delta;

  explicit BackwardScratch(const TileShape& shape)
      : q_tile(zeros(shape.Br * shape.Dp)),     // (Br, Dp) q / √D
        dout_tile(zeros(shape.Br * shape.Dp)),  // (Br, Dp)
        k_tile(zeros(shape.D * shape.Bcp)),     // (D, Bcp) kᵀ
        v_tile(zeros(shape.D * shape.Bcp)),     // (D, Bcp) vᵀ
        p(zeros(shape.Br * shape.Bcp)),         // (Br, Bcp) probabilities (dropped in pass 1)
        dp(zeros(shape.Br * shape.Bcp)),        // (Br, Bcp) dP
        ds(zeros(shape.Br * shape.Bcp)),        // (Br, Bcp) dS
        keep(zeros(shape.Bcp)),                 // (Bcp) one row's dropout factors
        lse(zeros(shape.Br)),                   // (Br)
        delta(zeros(shape.Br)) {}               // (Br)
};

template <typename A>
void load_query_tile(BackwardScratch& w, const A* q, const A* dout, const float* lse,
                     const float* delta, int64_t b, int64_t h, int64_t r0, int64_t rows, int64_t H,
                     int64_t T, const TileShape& shape, float scale) {
  load_rows(w.q_tile.data(), q, b, r0, rows, H, h, T, shape, scale);
  load_rows(w.dout_tile.data(), dout, b, r0, rows, H, h, T, shape, 1.0f);
  for (int64_t r = 0; r < rows; r++) {
    w.lse[static_cast<size_t>(r)] = lse[(b * H + h) * T + r0 + r];
    w.delta[static_cast<size_t>(r)] = delta[(b * H + h) * T + r0 + r];
  }
}

// Recomputes P and dS of one tile (see BackwardScratch); with dropout, p ends as the dropped
// probabilities P∘keep/(1 − p) that multiply dout in dV.
void score_gradients(BackwardScratch& w, int64_t b, int64_t h, int64_t r0, int64_t rows, int64_t c0,
                     int64_t cols, int64_t H, int64_t T, const TileShape& shape,
                     const AttentionDropout& dropout) {
  const int64_t Bcp = shape.Bcp, Dp = shape.Dp, D = shape.D;
  std::fill(w.p.begin(), w.p.begin() + rows * Bcp, 0.0f);
  std::fill(w.dp.begin(), w.dp.begin() + rows * Bcp, 0.0f);
  tile_gemm(w.p.data(), Bcp, w.q_tile.data(), Dp, w.k_tile.data(), Bcp, rows, Bcp, D);
  tile_gemm(w.dp.data(), Bcp, w.dout_tile.data(), Dp, w.v_tile.data(), Bcp, rows, Bcp, D);
  const bool dropping = dropout.p > 0.0f;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t t = r0 + r, visible = visible_keys(t, c0, cols);
    const float row_lse = w.lse[static_cast<size_t>(r)];
    const float row_delta = w.delta[static_cast<size_t>(r)];
    float* p_row = w.p.data() + r * Bcp;    // (Bcp)
    float* dp_row = w.dp.data() + r * Bcp;  // (Bcp)
    float* ds_row = w.ds.data() + r * Bcp;  // (Bcp)
    if (dropping && visible > 0) {
      dropout_factors(w.keep.data(), dropout, score_index(dropout, b, h, t, c0, H, T), visible);
      for (int64_t c = 0; c < visible; c++) {
        const float p = fast_exp(p_row[c] - row_lse), factor = w.keep[static_cast<size_t>(c)];
        ds_row[c] = p * (dp_row[c] * factor - row_delta);
        p_row[c] = p * factor;
      }
      for (int64_t c = visible; c < Bcp; c++) p_row[c] = ds_row[c] = 0.0f;
      continue;
    }
#pragma omp simd
    for (int64_t c = 0; c < Bcp; c++) {
      const float p = c < visible ? fast_exp(p_row[c] - row_lse) : 0.0f;
      ds_row[c] = p * (dp_row[c] - row_delta);
      p_row[c] = p;
    }
  }
}

}  // namespace

template <typename A>
void flash_attention_backward(A* dq, A* dk, A* dv, float* delta, const A* dout, const A* q,
                              const A* k, const A* v, const A* out, const float* lse, int64_t B,
                              int64_t T, int64_t H, int64_t Hkv, int64_t D,
                              const AttentionDropout& dropout, const FlashTiles& tiles) {
  check_arguments("flash_attention_backward", B, T, H, Hkv, D, dropout, tiles);
  if (B == 0 || H == 0 || T == 0) return;
  const TileShape shape = tile_shape(T, D, tiles);
  const int64_t Br = shape.Br, Bc = shape.Bc, Dp = shape.Dp, Bcp = shape.Bcp;
  const int64_t group = H / Hkv, query_tiles = ceil_div(T, Br), key_tiles = ceil_div(T, Bc);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < B * H * T; row++) {
    const int64_t b = row / (H * T), h = row / T % H, t = row % T;
    const int64_t at = ((b * T + t) * H + h) * D;
    float sum = 0.0f;
    for (int64_t d = 0; d < D; d++) sum += widen(dout[at + d]) * widen(out[at + d]);
    delta[row] = sum;
  }
  // Pass 1: dK, dV per key tile, over the group's heads and the query tiles from the diagonal on.
  const int64_t kv_tasks = B * Hkv * key_tiles;
#pragma omp parallel
  {
    BackwardScratch w(shape);
    std::vector<float> dk_acc = zeros(Bc * Dp);  // (Bc, Dp)
    std::vector<float> dv_acc = zeros(Bc * Dp);  // (Bc, Dp)
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < kv_tasks; task++) {
      // Longest first: the first key tiles are seen by the most query tiles.
      const int64_t j = task % key_tiles, bkvh = task / key_tiles, b = bkvh / Hkv, kvh = bkvh % Hkv;
      const int64_t c0 = j * Bc, cols = std::min(Bc, T - c0);
      load_transposed(w.k_tile.data(), Bcp, k, b, c0, cols, Hkv, kvh, T, D);
      load_transposed(w.v_tile.data(), Bcp, v, b, c0, cols, Hkv, kvh, T, D);
      std::fill(dk_acc.begin(), dk_acc.end(), 0.0f);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.0f);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
        for (int64_t r0 = c0 / Br * Br; r0 < T; r0 += Br) {
          const int64_t rows = std::min(Br, T - r0);
          load_query_tile(w, q, dout, lse, delta, b, h, r0, rows, H, T, shape, scale);
          score_gradients(w, b, h, r0, rows, c0, cols, H, T, shape, dropout);
          tile_gemm<true>(dv_acc.data(), Dp, w.p.data(), Bcp, w.dout_tile.data(), Dp, cols, Dp,
                          rows);
          tile_gemm<true>(dk_acc.data(), Dp, w.ds.data(), Bcp, w.q_tile.data(), Dp, cols, Dp, rows);
        }
      }
      for (int64_t c = 0; c < cols; c++) {
        const int64_t at = ((b * T + c0 + c) * Hkv + kvh) * D;
        for (int64_t d = 0; d < D; d++) {
          dk[at + d] = narrow<A>(widen(dk[at + d]) + dk_acc[static_cast<size_t>(c * Dp + d)]);
          dv[at + d] = narrow<A>(widen(dv[at + d]) + dv_acc[static_cast<size_t>(c * Dp + d)]);
        }
      }
    }
  }
  // Pass 2: dQ per query tile over the key tiles up to the diagonal, in the forward's transposed
  // layout (the query tile is transposed once, the key tiles are read as rows).
  const int64_t q_tasks = B * H * query_tiles;
  const int64_t Brp = shape.Brp;
  const bool dropping = dropout.p > 0.0f;
#pragma omp parallel
  {
    std::vector<float> q_tile = zeros(D * Brp);     // (D, Brp) (q / √D)ᵀ
    std::vector<float> dout_tile = zeros(D * Brp);  // (D, Brp) doutᵀ
    std::vector<float> k_tile = zeros(Bc * Dp);     // (Bc, Dp)
    std::vector<float> v_tile = zeros(Bc * Dp);     // (Bc, Dp)
    std::vector<float> s = zeros(Bc * Brp);         // (Bc, Brp) Sᵀ, then dSᵀ
    std::vector<float> dp = zeros(Bc * Brp);        // (Bc, Brp) dPᵀ
    std::vector<float> row_lse = zeros(Brp);        // (Brp)
    std::vector<float> row_delta = zeros(Brp);      // (Brp)
    std::vector<float> dq_acc = zeros(Br * Dp);     // (Br, Dp)
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < q_tasks; task++) {
      const int64_t i = query_tiles - 1 - task % query_tiles;
      const int64_t bh = task / query_tiles, b = bh / H, h = bh % H, kvh = h / group;
      const int64_t r0 = i * Br, rows = std::min(Br, T - r0), r1 = r0 + rows - 1;
      load_transposed(q_tile.data(), Brp, q, b, r0, rows, H, h, T, D, scale);
      load_transposed(dout_tile.data(), Brp, dout, b, r0, rows, H, h, T, D);
      for (int64_t r = 0; r < rows; r++) {
        row_lse[static_cast<size_t>(r)] = lse[(b * H + h) * T + r0 + r];
        row_delta[static_cast<size_t>(r)] = delta[(b * H + h) * T + r0 + r];
      }
      std::fill(dq_acc.begin(), dq_acc.end(), 0.0f);
      for (int64_t c0 = 0; c0 <= r1; c0 += Bc) {
        const int64_t cols = std::min(Bc, T - c0);
        load_rows(k_tile.data(), k, b, c0, cols, Hkv, kvh, T, shape, 1.0f);
        load_rows(v_tile.data(), v, b, c0, cols, Hkv, kvh, T, shape, 1.0f);
        std::fill(s.begin(), s.begin() + cols * Brp, 0.0f);
        std::fill(dp.begin(), dp.begin() + cols * Brp, 0.0f);
        tile_gemm(s.data(), Brp, k_tile.data(), Dp, q_tile.data(), Brp, cols, Brp, D);
        tile_gemm(dp.data(), Brp, v_tile.data(), Dp, dout_tile.data(), Brp, cols, Brp, D);
        for (int64_t c = 0; c < cols; c++) {
          float* s_row = s.data() + c * Brp;    // (Brp) key c against every query
          float* dp_row = dp.data() + c * Brp;  // (Brp)
          const int64_t first = std::max<int64_t>(c0 + c - r0, 0);
          if (dropping) {
            const float keep_scale = dropout_scale(dropout.p);
            for (int64_t r = first; r < rows; r++) {
              const bool keep = dropout_keep(
                  dropout.seed, score_index(dropout, b, h, r0 + r, c0 + c, H, T), dropout.p);
              dp_row[r] *= keep ? keep_scale : 0.0f;
            }
          }
#pragma omp simd
          for (int64_t r = 0; r < Brp; r++) {
            const float p = r >= first ? fast_exp(s_row[r] - row_lse[r]) : 0.0f;
            s_row[r] = p * (dp_row[r] - row_delta[r]);
          }
        }
        tile_gemm<true>(dq_acc.data(), Dp, s.data(), Brp, k_tile.data(), Dp, rows, Dp, cols);
      }
      for (int64_t r = 0; r < rows; r++) {
        A* dq_row = dq + ((b * T + r0 + r) * H + h) * D;  // (D)
        const float* acc_row = dq_acc.data() + r * Dp;
        for (int64_t d = 0; d < D; d++) {
          dq_row[d] = narrow<A>(widen(dq_row[d]) + acc_row[d] * scale);
        }
      }
    }
  }
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                             \
  template void flash_attention_forward<A>(A*, float*, const A*, const A*, const A*, int64_t,      \
                                           int64_t, int64_t, int64_t, int64_t,                     \
                                           const AttentionDropout&, const FlashTiles&);            \
  template void flash_attention_backward<A>(                                                       \
      A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*, const float*, int64_t, \
      int64_t, int64_t, int64_t, int64_t, const AttentionDropout&, const FlashTiles&);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

#define VRAMLAB_INSTANTIATE_REFERENCE(Real)                                                        \
  template void flash_attention_forward_reference<Real>(                                           \
      Real*, Real*, const Real*, const Real*, const Real*, int64_t, int64_t, int64_t, int64_t,     \
      int64_t, const AttentionDropout&, const FlashTiles&);                                        \
  template void flash_attention_backward_reference<Real>(                                          \
      Real*, Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, const Real*, \
      const Real*, int64_t, int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,           \
      const FlashTiles&);
VRAMLAB_INSTANTIATE_REFERENCE(float)
VRAMLAB_INSTANTIATE_REFERENCE(double)
#undef VRAMLAB_INSTANTIATE_REFERENCE

}  // namespace vramlab::kernels::cpu
