// Flash attention CUDA kernels (ops.h). The contract is the CPU kernel's,
// kernels/cpu/flash_attention.h: the same maths (causal, grouped KV heads, scale 1/√D), the same
// dropout mask bits (element offset + ((b·H + h)·T + t)·T + s), lse = m + log ℓ in f32, delta =
// rowsum(dout ∘ out), and a backward that ACCUMULATES into dq, dk, dv in two deterministic passes
// (dk/dv per key tile, then dq per query tile; no atomics). Inputs are widened to f32, scores,
// running statistics and gradient sums stay f32, and each output is rounded once.
//
// v1, the plain port (FA1's loops, one thread per row, every load from global memory):
//   forward   a block per (b, h, query tile of 64 rows), a thread per query row walking the key
//             tiles at or below its diagonal with the online softmax (running max m and sum ℓ,
//             rescaled once per key tile);
//   backward  delta by a thread per (b, h, t) row; dk, dv by a block per (b, kv head, key tile), a
//             thread per key row summing the group's query heads, then the query rows t ≥ s in
//             order; dq by a block per (b, h, query tile), a thread per query row.
// v2, the FlashAttention-2 layout (Dao 2023, arXiv 2307.08691):
//   forward   a block of 4 warps per (b, h, query tile of 16 rows), each warp owning 4 rows. The Q
//             tile and each 32-key K/V tile are staged in shared memory (widened to f32) by the
//             whole block; for one row, lane j scores key j of the tile, the tile's max and sum
//             are warp-shuffle reductions, and the probabilities go through a per-warp shared
//             row so that every lane can add Σ_j p_j · v_j into the output dimensions it owns
//             (d = lane, lane + 32, …).
//   backward  delta by a warp per row (a shuffle sum); dk, dv by a block per (b, kv head, 16-key
//             tile) that stages its K/V tile once and then each 32-row Q/dout tile of the group's
//             query heads in order: lane r scores query row r against the warp's key, dS and the
//             dropped P go through shared memory, and each lane sums its output dimensions over
//             the rows in order; dq by a block per (b, h, 16-row query tile), as the forward.
//   Tiles entirely above the diagonal are never loaded: a query tile's key tiles stop at its
//   last row, a key tile's query tiles start at the tile holding its first key.
// Both versions keep per-thread f32 accumulators of the head size in registers (local memory in
// v1), so the head size is limited to kMaxHeadDim (FlashAttention's own limit).
#include <string>

#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::narrow;
using detail::warp_max;
using detail::warp_sum;
using detail::widen;

/// The largest head size D: both versions keep D f32 accumulators per row (per lane: D / 32).
constexpr std::int64_t kMaxHeadDim = 256;
constexpr int kWarpSize = 32;

// v1: a thread per row; 64 rows per block, 64 keys per tile (the CPU kernel's default tiles).
constexpr int kV1Rows = 64;
constexpr int kV1Keys = 64;

// v2: 4 warps per block; the forward and dq take 16-row query tiles (4 rows per warp) against
// 32-key tiles (a key per lane); dk/dv take 16-key tiles (4 keys per warp) against 32-row query
// tiles (a query row per lane).
constexpr int kV2Warps = 4;
constexpr int kV2Threads = kV2Warps * kWarpSize;
constexpr int kV2Rows = 16;
constexpr int kV2RowsPerWarp = kV2Rows / kV2Warps;
constexpr int kV2Keys = kWarpSize;
constexpr int kV2BackwardKeys = 16;
constexpr int kV2KeysPerWarp = kV2BackwardKeys / kV2Warps;
constexpr int kV2BackwardRows = kWarpSize;
constexpr int kLaneDims = static_cast<int>(kMaxHeadDim / kWarpSize);  // dimensions per lane

struct FlashShape {
  std::int64_t B, T, H, Hkv, D;
};

__device__ std::int64_t q_at(const FlashShape& s, std::int64_t b, std::int64_t t, std::int64_t h) {
  return ((b * s.T + t) * s.H + h) * s.D;
}

__device__ std::int64_t kv_at(const FlashShape& s, std::int64_t b, std::int64_t t,
                              std::int64_t kvh) {
  return ((b * s.T + t) * s.Hkv + kvh) * s.D;
}

// std::min and std::max are host functions to nvcc (without --expt-relaxed-constexpr).
__device__ std::int64_t smaller(std::int64_t a, std::int64_t b) {
  return a < b ? a : b;
}
__device__ std::int64_t larger(std::int64_t a, std::int64_t b) {
  return a > b ? a : b;
}

// (b, h, t) → index of lse and delta (B, H, T).
__device__ std::int64_t row_at(const FlashShape& s, std::int64_t b, std::int64_t h,
                               std::int64_t t) {
  return (b * s.H + h) * s.T + t;
}

// keep / (1 − p) for score (b, h, t, key): the mask's index is row_at(b, h, t) · T + key; 1 when
// p = 0 (no dropout, bitwise).
__device__ float dropout_factor(const cpu::AttentionDropout& dropout, std::int64_t row,
                                std::int64_t T, std::int64_t key) {
  if (dropout.p == 0.0f) return 1.0f;
  const auto index = static_cast<std::uint64_t>(row * T + key);
  return dropout_keep(dropout.seed, dropout.offset + index, dropout.p) ? dropout_scale(dropout.p)
                                                                       : 0.0f;
}

template <class A>
__device__ float dot(const A* x, const A* y, std::int64_t D) {
  float total = 0.0f;
  for (std::int64_t d = 0; d < D; d++) total += widen(x[d]) * widen(y[d]);
  return total;
}

// ---- v1 ------------------------------------------------------------------------------------

// A block per (b, h, query tile), a thread per query row t.
template <class A>
__global__ void flash_forward_v1_kernel(A* out, float* lse, const A* q, const A* k, const A* v,
                                        FlashShape s, float scale, cpu::AttentionDropout dropout) {
  const std::int64_t tiles = (s.T + kV1Rows - 1) / kV1Rows;
  const std::int64_t tile = blockIdx.x % tiles, bh = blockIdx.x / tiles;
  const std::int64_t b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.Hkv);
  const std::int64_t t = tile * kV1Rows + threadIdx.x;
  if (t >= s.T) return;
  const std::int64_t row = row_at(s, b, h, t);
  const A* q_row = q + q_at(s, b, t, h);  // (D)
  float acc[kMaxHeadDim];                 // (D) Σ exp(score − m) · dropout · v
  for (std::int64_t d = 0; d < s.D; d++) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  float score[kV1Keys];  // (keys of the tile)
  for (std::int64_t key0 = 0; key0 <= t; key0 += kV1Keys) {
    const std::int64_t keys = smaller(kV1Keys, t - key0 + 1);  // at or below t
    float tile_max = -INFINITY;
    for (std::int64_t j = 0; j < keys; j++) {
      score[j] = dot(q_row, k + kv_at(s, b, key0 + j, kvh), s.D) * scale;
      tile_max = fmaxf(tile_max, score[j]);
    }
    const float m_new = fmaxf(m, tile_max);
    const float correction = expf(m - m_new);
    l *= correction;
    for (std::int64_t d = 0; d < s.D; d++) acc[d] *= correction;
    for (std::int64_t j = 0; j < keys; j++) {
      const float p = expf(score[j] - m_new);
      l += p;
      const float p_dropped = p * dropout_factor(dropout, row, s.T, key0 + j);
      const A* v_row = v + kv_at(s, b, key0 + j, kvh);  // (D)
      for (std::int64_t d = 0; d < s.D; d++) acc[d] += p_dropped * widen(v_row[d]);
    }
    m = m_new;
  }
  A* out_row = out + q_at(s, b, t, h);  // (D)
  for (std::int64_t d = 0; d < s.D; d++) out_row[d] = narrow<A>(acc[d] / l);
  lse[row] = m + logf(l);
}

// A thread per (b, h, t) row: delta = Σ_d dout · out.
template <class A>
__global__ void flash_delta_v1_kernel(float* delta, const A* dout, const A* out, FlashShape s) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= s.B * s.H * s.T) return;
  const std::int64_t t = row % s.T, h = row / s.T % s.H, b = row / (s.T * s.H);
  delta[row] = dot(dout + q_at(s, b, t, h), out + q_at(s, b, t, h), s.D);
}

// The gradient terms of score (b, h, t, key), recomputed: P = exp(S − lse), dP = dout·v ·
// dropout, dS = P ∘ (dP − delta) and the dropped probability P · dropout that dv takes.
struct ScoreGradient {
  float ds, p_dropped;
};

template <class A>
__device__ ScoreGradient score_gradient(const A* q_row, const A* dout_row, const A* k_row,
                                        const A* v_row, float lse_t, float delta_t,
                                        float dropout_scale_value, const FlashShape& s,
                                        float scale) {
  const float p = expf(dot(q_row, k_row, s.D) * scale - lse_t);
  const float dp = dot(dout_row, v_row, s.D) * dropout_scale_value;
  return {p * (dp - delta_t), p * dropout_scale_value};
}

// A block per (b, kv head, key tile), a thread per key row: dk += scale · Σ dS · q and
// dv += Σ P · dropout · dout over the group's query heads, then the rows t ≥ key, in order.
template <class A>
__global__ void flash_backward_dkv_v1_kernel(A* dk, A* dv, const A* dout, const A* q, const A* k,
                                             const A* v, const float* lse, const float* delta,
                                             FlashShape s, float scale,
                                             cpu::AttentionDropout dropout) {
  const std::int64_t tiles = (s.T + kV1Keys - 1) / kV1Keys;
  const std::int64_t tile = blockIdx.x % tiles, bkv = blockIdx.x / tiles;
  const std::int64_t b = bkv / s.Hkv, kvh = bkv % s.Hkv, group = s.H / s.Hkv;
  const std::int64_t key = tile * kV1Keys + threadIdx.x;
  if (key >= s.T) return;
  const A* k_row = k + kv_at(s, b, key, kvh);      // (D)
  const A* v_row = v + kv_at(s, b, key, kvh);      // (D)
  float dk_acc[kMaxHeadDim], dv_acc[kMaxHeadDim];  // (D) each
  for (std::int64_t d = 0; d < s.D; d++) dk_acc[d] = dv_acc[d] = 0.0f;
  for (std::int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (std::int64_t t = key; t < s.T; t++) {
      const std::int64_t row = row_at(s, b, h, t);
      const A* q_row = q + q_at(s, b, t, h);        // (D)
      const A* dout_row = dout + q_at(s, b, t, h);  // (D)
      const ScoreGradient g = score_gradient(q_row, dout_row, k_row, v_row, lse[row], delta[row],
                                             dropout_factor(dropout, row, s.T, key), s, scale);
      for (std::int64_t d = 0; d < s.D; d++) {
        dk_acc[d] += g.ds * widen(q_row[d]);
        dv_acc[d] += g.p_dropped * widen(dout_row[d]);
      }
    }
  }
  A* dk_row = dk + kv_at(s, b, key, kvh);  // (D)
  A* dv_row = dv + kv_at(s, b, key, kvh);  // (D)
  for (std::int64_t d = 0; d < s.D; d++) {
    dk_row[d] = narrow<A>(widen(dk_row[d]) + scale * dk_acc[d]);
    dv_row[d] = narrow<A>(widen(dv_row[d]) + dv_acc[d]);
  }
}

// A block per (b, h, query tile), a thread per query row t: dq += scale · Σ_{key ≤ t} dS · k.
template <class A>
__global__ void flash_backward_dq_v1_kernel(A* dq, const A* dout, const A* q, const A* k,
                                            const A* v, const float* lse, const float* delta,
                                            FlashShape s, float scale,
                                            cpu::AttentionDropout dropout) {
  const std::int64_t tiles = (s.T + kV1Rows - 1) / kV1Rows;
  const std::int64_t tile = blockIdx.x % tiles, bh = blockIdx.x / tiles;
  const std::int64_t b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.Hkv);
  const std::int64_t t = tile * kV1Rows + threadIdx.x;
  if (t >= s.T) return;
  const std::int64_t row = row_at(s, b, h, t);
  const A* q_row = q + q_at(s, b, t, h);        // (D)
  const A* dout_row = dout + q_at(s, b, t, h);  // (D)
  const float lse_t = lse[row], delta_t = delta[row];
  float dq_acc[kMaxHeadDim];  // (D)
  for (std::int64_t d = 0; d < s.D; d++) dq_acc[d] = 0.0f;
  for (std::int64_t key = 0; key <= t; key++) {
    const A* k_row = k + kv_at(s, b, key, kvh);  // (D)
    const ScoreGradient g =
        score_gradient(q_row, dout_row, k_row, v + kv_at(s, b, key, kvh), lse_t, delta_t,
                       dropout_factor(dropout, row, s.T, key), s, scale);
    for (std::int64_t d = 0; d < s.D; d++) dq_acc[d] += g.ds * widen(k_row[d]);
  }
  A* dq_row = dq + q_at(s, b, t, h);  // (D)
  for (std::int64_t d = 0; d < s.D; d++)
    dq_row[d] = narrow<A>(widen(dq_row[d]) + scale * dq_acc[d]);
}

// ---- v2 ------------------------------------------------------------------------------------

// Copies rows first .. first + count − 1 of a (T, heads, D) tensor's head into a (tile_rows, D)
// shared tile, widened; rows past T are zero, so no stale or poisoned value reaches a sum. The
// whole block takes part.
template <class A>
__device__ void load_tile(float* tile, const A* x, std::int64_t b, std::int64_t first,
                          std::int64_t head, std::int64_t heads, int tile_rows,
                          const FlashShape& s) {
  for (std::int64_t i = threadIdx.x; i < tile_rows * s.D; i += blockDim.x) {
    const std::int64_t r = i / s.D, d = i % s.D, t = first + r;
    tile[i] = t < s.T ? widen(x[((b * s.T + t) * heads + head) * s.D + d]) : 0.0f;
  }
}

// Σ_d x[d] · y[d] over a shared row pair, d in order (the same order as v1's dot).
__device__ float shared_dot(const float* x, const float* y, std::int64_t D) {
  float total = 0.0f;
  for (std::int64_t d = 0; d < D; d++) total += x[d] * y[d];
  return total;
}

// A block of kV2Warps warps per (b, h, 16-row query tile); see the file comment.
template <class A>
__global__ void flash_forward_v2_kernel(A* out, float* lse, const A* q, const A* k, const A* v,
                                        FlashShape s, float scale, cpu::AttentionDropout dropout) {
  VRAMLAB_DYNAMIC_SHARED(float, shared);
  float* q_tile = shared;                  // (kV2Rows, D)
  float* k_tile = q_tile + kV2Rows * s.D;  // (kV2Keys, D)
  float* v_tile = k_tile + kV2Keys * s.D;  // (kV2Keys, D)
  float* p_tile = v_tile + kV2Keys * s.D;  // (kV2Warps, kV2Keys): one row of P per warp
  const std::int64_t tiles = (s.T + kV2Rows - 1) / kV2Rows;
  const std::int64_t tile = blockIdx.x % tiles, bh = blockIdx.x / tiles;
  const std::int64_t b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.Hkv);
  const std::int64_t row0 = tile * kV2Rows;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float* p_row = p_tile + warp * kV2Keys;  // (kV2Keys)
  load_tile(q_tile, q, b, row0, h, s.H, kV2Rows, s);

  float acc[kV2RowsPerWarp][kLaneDims] = {};  // the output dimensions d = lane + 32·i of each row
  float m[kV2RowsPerWarp], l[kV2RowsPerWarp];
  for (int rr = 0; rr < kV2RowsPerWarp; rr++) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
  }
  // The tile's last row sees keys up to itself: later key tiles are above the diagonal.
  const std::int64_t key_end = smaller(s.T, row0 + kV2Rows);
  for (std::int64_t key0 = 0; key0 < key_end; key0 += kV2Keys) {
    __syncthreads();  // every warp is done with the previous K/V tile
    load_tile(k_tile, k, b, key0, kvh, s.Hkv, kV2Keys, s);
    load_tile(v_tile, v, b, key0, kvh, s.Hkv, kV2Keys, s);
    __syncthreads();
    for (int rr = 0; rr < kV2RowsPerWarp; rr++) {
      const int r = warp * kV2RowsPerWarp + rr;
      const std::int64_t t = row0 + r;
      if (t >= s.T || t < key0) continue;  // the whole warp skips together
      const std::int64_t row = row_at(s, b, h, t);
      const std::int64_t key = key0 + lane;
      const bool visible = key <= t;  // key <= t < T: a real key at or below the diagonal
      const float score =
          visible ? shared_dot(q_tile + r * s.D, k_tile + lane * s.D, s.D) * scale : -INFINITY;
      const float m_new = fmaxf(m[rr], warp_max(score));
      const float correction = expf(m[rr] - m_new);
      const float p = visible ? expf(score - m_new) : 0.0f;
      l[rr] = l[rr] * correction + warp_sum(p);
      p_row[lane] = visible ? p * dropout_factor(dropout, row, s.T, key) : 0.0f;
      __syncwarp();
      const std::int64_t keys = smaller(kV2Keys, t - key0 + 1);
      for (int i = 0; i < kLaneDims; i++) {
        const std::int64_t d = lane + kWarpSize * i;
        if (d >= s.D) break;
        float value = acc[rr][i] * correction;
        for (std::int64_t j = 0; j < keys; j++) value += p_row[j] * v_tile[j * s.D + d];
        acc[rr][i] = value;
      }
      __syncwarp();  // every lane has read p_row before the next row overwrites it
      m[rr] = m_new;
    }
  }
  for (int rr = 0; rr < kV2RowsPerWarp; rr++) {
    const std::int64_t t = row0 + warp * kV2RowsPerWarp + rr;
    if (t >= s.T) continue;
    A* out_row = out + q_at(s, b, t, h);  // (D)
    for (int i = 0; i < kLaneDims; i++) {
      const std::int64_t d = lane + kWarpSize * i;
      if (d < s.D) out_row[d] = narrow<A>(acc[rr][i] / l[rr]);
    }
    if (lane == 0) lse[row_at(s, b, h, t)] = m[rr] + logf(l[rr]);
  }
}

// A warp per (b, h, t) row: delta = Σ_d dout · out, a shuffle sum over the lanes' partial sums.
template <class A>
__global__ void flash_delta_v2_kernel(float* delta, const A* dout, const A* out, FlashShape s) {
  const std::int64_t row =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  if (row >= s.B * s.H * s.T) return;  // the whole warp leaves together
  const std::int64_t t = row % s.T, h = row / s.T % s.H, b = row / (s.T * s.H);
  const A* dout_row = dout + q_at(s, b, t, h);  // (D)
  const A* out_row = out + q_at(s, b, t, h);    // (D)
  float partial = 0.0f;
  for (std::int64_t d = lane; d < s.D; d += kWarpSize) {
    partial += widen(dout_row[d]) * widen(out_row[d]);
  }
  const float total = warp_sum(partial);
  if (lane == 0) delta[row] = total;
}

// A block of kV2Warps warps per (b, kv head, 16-key tile), each warp owning 4 keys; see the file
// comment.
template <class A>
__global__ void flash_backward_dkv_v2_kernel(A* dk, A* dv, const A* dout, const A* q, const A* k,
                                             const A* v, const float* lse, const float* delta,
                                             FlashShape s, float scale,
                                             cpu::AttentionDropout dropout) {
  VRAMLAB_DYNAMIC_SHARED(float, shared);
  float* k_tile = shared;                                 // (kV2BackwardKeys, D)
  float* v_tile = k_tile + kV2BackwardKeys * s.D;         // (kV2BackwardKeys, D)
  float* q_tile = v_tile + kV2BackwardKeys * s.D;         // (kV2BackwardRows, D)
  float* dout_tile = q_tile + kV2BackwardRows * s.D;      // (kV2BackwardRows, D)
  float* ds_tile = dout_tile + kV2BackwardRows * s.D;     // (kV2Warps, kV2BackwardRows)
  float* p_tile = ds_tile + kV2Warps * kV2BackwardRows;   // (kV2Warps, kV2BackwardRows)
  float* lse_tile = p_tile + kV2Warps * kV2BackwardRows;  // (kV2BackwardRows)
  float* delta_tile = lse_tile + kV2BackwardRows;         // (kV2BackwardRows)
  const std::int64_t tiles = (s.T + kV2BackwardKeys - 1) / kV2BackwardKeys;
  const std::int64_t tile = blockIdx.x % tiles, bkv = blockIdx.x / tiles;
  const std::int64_t b = bkv / s.Hkv, kvh = bkv % s.Hkv, group = s.H / s.Hkv;
  const std::int64_t key0 = tile * kV2BackwardKeys;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float* ds_row = ds_tile + warp * kV2BackwardRows;  // (kV2BackwardRows)
  float* p_row = p_tile + warp * kV2BackwardRows;    // (kV2BackwardRows)
  load_tile(k_tile, k, b, key0, kvh, s.Hkv, kV2BackwardKeys, s);
  load_tile(v_tile, v, b, key0, kvh, s.Hkv, kV2BackwardKeys, s);

  float dk_acc[kV2KeysPerWarp][kLaneDims] = {};  // dimensions d = lane + 32·i of each key
  float dv_acc[kV2KeysPerWarp][kLaneDims] = {};
  // Query tiles above the key tile's first key see none of its keys.
  const std::int64_t first_row0 = key0 / kV2BackwardRows * kV2BackwardRows;
  for (std::int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (std::int64_t row0 = first_row0; row0 < s.T; row0 += kV2BackwardRows) {
      __syncthreads();  // every warp is done with the previous Q/dout tile
      load_tile(q_tile, q, b, row0, h, s.H, kV2BackwardRows, s);
      load_tile(dout_tile, dout, b, row0, h, s.H, kV2BackwardRows, s);
      if (threadIdx.x < static_cast<unsigned>(kV2BackwardRows)) {
        const std::int64_t t = row0 + threadIdx.x;
        lse_tile[threadIdx.x] = t < s.T ? lse[row_at(s, b, h, t)] : 0.0f;
        delta_tile[threadIdx.x] = t < s.T ? delta[row_at(s, b, h, t)] : 0.0f;
      }
      __syncthreads();
      for (int kk = 0; kk < kV2KeysPerWarp; kk++) {
        const int c = warp * kV2KeysPerWarp + kk;
        const std::int64_t key = key0 + c;
        if (key >= s.T || row0 + kV2BackwardRows <= key) continue;  // the whole warp skips
        const std::int64_t t = row0 + lane;
        float ds = 0.0f, p_dropped = 0.0f;
        if (t >= key && t < s.T) {
          const std::int64_t row = row_at(s, b, h, t);
          const float factor = dropout_factor(dropout, row, s.T, key);
          const float p =
              expf(shared_dot(q_tile + lane * s.D, k_tile + c * s.D, s.D) * scale - lse_tile[lane]);
          const float dp = shared_dot(dout_tile + lane * s.D, v_tile + c * s.D, s.D) * factor;
          ds = p * (dp - delta_tile[lane]);
          p_dropped = p * factor;
        }
        ds_row[lane] = ds;
        p_row[lane] = p_dropped;
        __syncwarp();
        // Rows at or below the diagonal and before T, in order.
        const std::int64_t r_begin = larger(0, key - row0);
        const std::int64_t r_end = smaller(kV2BackwardRows, s.T - row0);
        for (int i = 0; i < kLaneDims; i++) {
          const std::int64_t d = lane + kWarpSize * i;
          if (d >= s.D) break;
          float dk_value = dk_acc[kk][i], dv_value = dv_acc[kk][i];
          for (std::int64_t r = r_begin; r < r_end; r++) {
            dk_value += ds_row[r] * q_tile[r * s.D + d];
            dv_value += p_row[r] * dout_tile[r * s.D + d];
          }
          dk_acc[kk][i] = dk_value;
          dv_acc[kk][i] = dv_value;
        }
        __syncwarp();  // every lane has read ds_row and p_row before the next key overwrites them
      }
    }
  }
  for (int kk = 0; kk < kV2KeysPerWarp; kk++) {
    const std::int64_t key = key0 + warp * kV2KeysPerWarp + kk;
    if (key >= s.T) continue;
    A* dk_row = dk + kv_at(s, b, key, kvh);  // (D)
    A* dv_row = dv + kv_at(s, b, key, kvh);  // (D)
    for (int i = 0; i < kLaneDims; i++) {
      const std::int64_t d = lane + kWarpSize * i;
      if (d >= s.D) break;
      dk_row[d] = narrow<A>(widen(dk_row[d]) + scale * dk_acc[kk][i]);
      dv_row[d] = narrow<A>(widen(dv_row[d]) + dv_acc[kk][i]);
    }
  }
}

// A block of kV2Warps warps per (b, h, 16-row query tile), as the forward: lane j scores key j of
// each 32-key tile, dS goes through a per-warp shared row, each lane sums its dimensions of dq.
template <class A>
__global__ void flash_backward_dq_v2_kernel(A* dq, const A* dout, const A* q, const A* k,
                                            const A* v, const float* lse, const float* delta,
                                            FlashShape s, float scale,
                                            cpu::AttentionDropout dropout) {
  VRAMLAB_DYNAMIC_SHARED(float, shared);
  float* q_tile = shared;                     // (kV2Rows, D)
  float* dout_tile = q_tile + kV2Rows * s.D;  // (kV2Rows, D)
  float* k_tile = dout_tile + kV2Rows * s.D;  // (kV2Keys, D)
  float* v_tile = k_tile + kV2Keys * s.D;     // (kV2Keys, D)
  float* ds_tile = v_tile + kV2Keys * s.D;    // (kV2Warps, kV2Keys)
  const std::int64_t tiles = (s.T + kV2Rows - 1) / kV2Rows;
  const std::int64_t tile = blockIdx.x % tiles, bh = blockIdx.x / tiles;
  const std::int64_t b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.Hkv);
  const std::int64_t row0 = tile * kV2Rows;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float* ds_row = ds_tile + warp * kV2Keys;  // (kV2Keys)
  load_tile(q_tile, q, b, row0, h, s.H, kV2Rows, s);
  load_tile(dout_tile, dout, b, row0, h, s.H, kV2Rows, s);

  float dq_acc[kV2RowsPerWarp][kLaneDims] = {};  // dimensions d = lane + 32·i of each row
  const std::int64_t key_end = smaller(s.T, row0 + kV2Rows);
  for (std::int64_t key0 = 0; key0 < key_end; key0 += kV2Keys) {
    __syncthreads();  // every warp is done with the previous K/V tile
    load_tile(k_tile, k, b, key0, kvh, s.Hkv, kV2Keys, s);
    load_tile(v_tile, v, b, key0, kvh, s.Hkv, kV2Keys, s);
    __syncthreads();
    for (int rr = 0; rr < kV2RowsPerWarp; rr++) {
      const int r = warp * kV2RowsPerWarp + rr;
      const std::int64_t t = row0 + r;
      if (t >= s.T || t < key0) continue;  // the whole warp skips together
      const std::int64_t row = row_at(s, b, h, t);
      const std::int64_t key = key0 + lane;
      float ds = 0.0f;
      if (key <= t) {
        const float factor = dropout_factor(dropout, row, s.T, key);
        const float p =
            expf(shared_dot(q_tile + r * s.D, k_tile + lane * s.D, s.D) * scale - lse[row]);
        const float dp = shared_dot(dout_tile + r * s.D, v_tile + lane * s.D, s.D) * factor;
        ds = p * (dp - delta[row]);
      }
      ds_row[lane] = ds;
      __syncwarp();
      const std::int64_t keys = smaller(kV2Keys, t - key0 + 1);
      for (int i = 0; i < kLaneDims; i++) {
        const std::int64_t d = lane + kWarpSize * i;
        if (d >= s.D) break;
        float value = dq_acc[rr][i];
        for (std::int64_t j = 0; j < keys; j++) value += ds_row[j] * k_tile[j * s.D + d];
        dq_acc[rr][i] = value;
      }
      __syncwarp();  // every lane has read ds_row before the next row overwrites it
    }
  }
  for (int rr = 0; rr < kV2RowsPerWarp; rr++) {
    const std::int64_t t = row0 + warp * kV2RowsPerWarp + rr;
    if (t >= s.T) continue;
    A* dq_row = dq + q_at(s, b, t, h);  // (D)
    for (int i = 0; i < kLaneDims; i++) {
      const std::int64_t d = lane + kWarpSize * i;
      if (d < s.D) dq_row[d] = narrow<A>(widen(dq_row[d]) + scale * dq_acc[rr][i]);
    }
  }
}

// ---- launch helpers ------------------------------------------------------------------------

void check_arguments(const char* op, const FlashShape& s, const cpu::AttentionDropout& dropout) {
  cpu::require_dropout_probability(op, dropout.p);
  cpu::require_non_negative(op, "B", s.B);
  cpu::require_non_negative(op, "T", s.T);
  cpu::require_non_negative(op, "H", s.H);
  cpu::require_non_negative(op, "Hkv", s.Hkv);
  cpu::require_non_negative(op, "D", s.D);
  cpu::require(
      s.H == 0 || (s.Hkv > 0 && s.H % s.Hkv == 0), op,
      "kv heads Hkv = " + std::to_string(s.Hkv) + " must divide heads H = " + std::to_string(s.H));
  cpu::require(s.D <= kMaxHeadDim, op,
               "head size D = " + std::to_string(s.D) + " must be <= " +
                   std::to_string(kMaxHeadDim) + " (the kernels keep D accumulators per row)");
}

// Dynamic shared memory above 48 KiB needs an opt-in per kernel on a GPU (D > 128 in v2).
template <class Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
#if VRAMLAB_SIMT_EMULATED
  (void)kernel;
  (void)bytes;
#else
  if (bytes > 48 * 1024) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(bytes));
  }
#endif
}

unsigned grid(std::int64_t tiles, std::int64_t heads) {
  return static_cast<unsigned>(tiles * heads);
}

}  // namespace

template <class A>
void flash_attention_forward(A* out, float* lse, const A* q, const A* k, const A* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const cpu::AttentionDropout& dropout, KernelVersion version) {
  const FlashShape s{B, T, H, Hkv, D};
  check_arguments("cuda::flash_attention_forward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(flash_forward_v1_kernel<A>, grid(blocks_for(T, kV1Rows), B * H), kV1Rows, 0, 0)
    (out, lse, q, k, v, s, scale, dropout);
    return;
  }
  const std::size_t shared = sizeof(float) * ((kV2Rows + 2 * kV2Keys) * D + kV2Warps * kV2Keys);
  auto* kernel = &flash_forward_v2_kernel<A>;
  allow_shared_bytes(kernel, shared);
  VRAMLAB_LAUNCH(kernel, grid(blocks_for(T, kV2Rows), B * H), kV2Threads, shared, 0)
  (out, lse, q, k, v, s, scale, dropout);
}

template <class A>
void flash_attention_backward(A* dq, A* dk, A* dv, float* delta, const A* dout, const A* q,
                              const A* k, const A* v, const A* out, const float* lse, int64_t B,
                              int64_t T, int64_t H, int64_t Hkv, int64_t D,
                              const cpu::AttentionDropout& dropout, KernelVersion version) {
  const FlashShape s{B, T, H, Hkv, D};
  check_arguments("cuda::flash_attention_backward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(flash_delta_v1_kernel<A>, blocks_for(B * H * T, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (delta, dout, out, s);
    VRAMLAB_LAUNCH(flash_backward_dkv_v1_kernel<A>, grid(blocks_for(T, kV1Keys), B * Hkv), kV1Keys,
                   0, 0)
    (dk, dv, dout, q, k, v, lse, delta, s, scale, dropout);
    VRAMLAB_LAUNCH(flash_backward_dq_v1_kernel<A>, grid(blocks_for(T, kV1Rows), B * H), kV1Rows, 0,
                   0)
    (dq, dout, q, k, v, lse, delta, s, scale, dropout);
    return;
  }
  VRAMLAB_LAUNCH(flash_delta_v2_kernel<A>,
                 blocks_for(B * H * T * kWarpSize, detail::kRowBlockThreads),
                 detail::kRowBlockThreads, 0, 0)
  (delta, dout, out, s);
  const std::size_t dkv_shared =
      sizeof(float) * (2 * (kV2BackwardKeys + kV2BackwardRows) * D +
                       2 * kV2Warps * kV2BackwardRows + 2 * kV2BackwardRows);
  auto* dkv_kernel = &flash_backward_dkv_v2_kernel<A>;
  allow_shared_bytes(dkv_kernel, dkv_shared);
  VRAMLAB_LAUNCH(dkv_kernel, grid(blocks_for(T, kV2BackwardKeys), B * Hkv), kV2Threads, dkv_shared,
                 0)
  (dk, dv, dout, q, k, v, lse, delta, s, scale, dropout);
  const std::size_t dq_shared = sizeof(float) * (2 * (kV2Rows + kV2Keys) * D + kV2Warps * kV2Keys);
  auto* dq_kernel = &flash_backward_dq_v2_kernel<A>;
  allow_shared_bytes(dq_kernel, dq_shared);
  VRAMLAB_LAUNCH(dq_kernel, grid(blocks_for(T, kV2Rows), B * H), kV2Threads, dq_shared, 0)
  (dq, dout, q, k, v, lse, delta, s, scale, dropout);
}

#define VRAMLAB_INSTANTIATE(A)                                                                     \
  template void flash_attention_forward<A>(A*, float*, const A*, const A*, const A*, int64_t,      \
                                           int64_t, int64_t, int64_t, int64_t,                     \
                                           const cpu::AttentionDropout&, KernelVersion);           \
  template void flash_attention_backward<A>(                                                       \
      A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*, const float*, int64_t, \
      int64_t, int64_t, int64_t, int64_t, const cpu::AttentionDropout&, KernelVersion);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
