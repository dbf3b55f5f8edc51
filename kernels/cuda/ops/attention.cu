// Naive causal attention CUDA kernels with grouped KV heads (GQA), materializing the (B, H, T, T)
// scores and probabilities, as llm.c's first attention kernels do. Each phase is its own plain
// kernel, one thread per output element or row:
//   forward:  preatt = scale·q·kᵀ (−inf above the diagonal) → att = softmax rows → out = att·v
//   backward: datt = dout·vᵀ → dpreatt = softmax backward → dq += scale·dpreatt·k,
//             and dk, dv by one thread per (b, t2, kv head, d) summing its query heads and rows
//             in order (deterministic: no atomics).
// Attention dropout multiplies the probabilities by keep / (1 − p) where they meet v (the output,
// dv) and the score gradients where they leave it, each thread regenerating the mask bit of its
// score from the score's index (the CPU kernel's mask, bit for bit).
// Storage types: every buffer is A. The forward's softmax never reads the rounded scores: for a
// 16-bit A each row thread recomputes its f32 scores from q and k (the same dot products, so the
// same bits), so att = round(softmax(f32 scores)). The backward's 16-bit softmax step likewise
// recomputes datt in f32 and writes dpreatt once; dq and dk are then computed from dpreatt as
// stored (the one intermediate rounded to A, as a bf16 llm.c rounds its score gradients).

#include <type_traits>

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
using detail::widen;

struct AttentionShape {
  std::int64_t B, T, H, Hkv, D;
};

__device__ std::int64_t linear_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::int64_t q_at(const AttentionShape& s, std::int64_t b, std::int64_t t,
                             std::int64_t h) {
  return ((b * s.T + t) * s.H + h) * s.D;
}

__device__ std::int64_t kv_at(const AttentionShape& s, std::int64_t b, std::int64_t t,
                              std::int64_t kvh) {
  return ((b * s.T + t) * s.Hkv + kvh) * s.D;
}

// value · keep / (1 − p) for score index `score` of (B, H, T, T); value itself when p = 0.
__device__ float drop(float value, const cpu::AttentionDropout& dropout, std::int64_t score) {
  if (dropout.p == 0.0f) return value;
  const bool keep =
      dropout_keep(dropout.seed, dropout.offset + static_cast<std::uint64_t>(score), dropout.p);
  return keep ? value * dropout_scale(dropout.p) : 0.0f;
}

// One thread per (b, h, t, t2).
// The scaled score of (b, h, t, t2 <= t) in f32: one dot product, d in order.
template <class A>
__device__ float attention_score(const A* q, const A* k, const AttentionShape& s, std::int64_t b,
                                 std::int64_t h, std::int64_t t, std::int64_t t2, float scale) {
  const A* q_row = q + q_at(s, b, t, h);
  const A* k_row = k + kv_at(s, b, t2, h / (s.H / s.Hkv));
  float dot = 0.0f;
  for (std::int64_t d = 0; d < s.D; d++) dot += widen(q_row[d]) * widen(k_row[d]);
  return dot * scale;
}

template <class A>
__global__ void attention_scores_kernel(A* preatt, const A* q, const A* k, AttentionShape s,
                                        float scale) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.H * s.T * s.T) return;
  const std::int64_t t2 = index % s.T, t = index / s.T % s.T;
  const std::int64_t h = index / (s.T * s.T) % s.H, b = index / (s.T * s.T * s.H);
  if (t2 > t) {
    preatt[index] = narrow<A>(-INFINITY);
    return;
  }
  preatt[index] = narrow<A>(attention_score(q, k, s, b, h, t, t2, scale));
}

// One thread per (b, h, t) row: att = softmax over t2 <= t, 0 above the diagonal. A float row
// reads its scores from preatt; a 16-bit row recomputes them in f32 (preatt holds them rounded,
// and may be att itself, overwritten as the row is written: every score is read before).
template <class A>
__global__ void attention_softmax_kernel(A* att, const A* preatt, const A* q, const A* k,
                                         AttentionShape s, float scale) {
  const std::int64_t row = linear_index();
  if (row >= s.B * s.H * s.T) return;
  const std::int64_t t = row % s.T, h = row / s.T % s.H, b = row / (s.T * s.H);
  const A* x = preatt + row * s.T;  // (T)
  const auto score = [&](std::int64_t t2) {
    if constexpr (std::is_same_v<A, float>) {
      return x[t2];
    } else {
      return attention_score(q, k, s, b, h, t, t2, scale);
    }
  };
  float max_value = -INFINITY;
  for (std::int64_t t2 = 0; t2 <= t; t2++) max_value = fmaxf(max_value, score(t2));
  float total = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) total += expf(score(t2) - max_value);
  for (std::int64_t t2 = 0; t2 < s.T; t2++) {
    att[row * s.T + t2] = narrow<A>(t2 <= t ? expf(score(t2) - max_value) / total : 0.0f);
  }
}

// One thread per (b, t, h, d).
template <class A>
__global__ void attention_values_kernel(A* out, const A* att, const A* v, AttentionShape s,
                                        cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.H * s.D) return;
  const std::int64_t d = index % s.D, h = index / s.D % s.H, t = index / (s.D * s.H) % s.T;
  const std::int64_t b = index / (s.D * s.H * s.T);
  const std::int64_t kvh = h / (s.H / s.Hkv);
  const std::int64_t row = ((b * s.H + h) * s.T + t) * s.T;
  float value = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) {
    value += drop(widen(att[row + t2]), dropout, row + t2) * widen(v[kv_at(s, b, t2, kvh) + d]);
  }
  out[index] = narrow<A>(value);
}

// One thread per (b, h, t, t2): dpreatt = datt = (dout·v) · keep / (1 − p) (0 above the
// diagonal).
// (dout·v) · keep / (1 − p) of score (b, h, t, t2 <= t) in f32; index is the score's.
template <class A>
__device__ float attention_datt(const A* dout, const A* v, const AttentionShape& s,
                                const cpu::AttentionDropout& dropout, std::int64_t index) {
  const std::int64_t t2 = index % s.T, t = index / s.T % s.T;
  const std::int64_t h = index / (s.T * s.T) % s.H, b = index / (s.T * s.T * s.H);
  const A* dout_row = dout + q_at(s, b, t, h);
  const A* v_row = v + kv_at(s, b, t2, h / (s.H / s.Hkv));
  float datt = 0.0f;
  for (std::int64_t d = 0; d < s.D; d++) datt += widen(dout_row[d]) * widen(v_row[d]);
  return drop(datt, dropout, index);
}

// One thread per (b, h, t, t2): dpreatt = datt (0 above the diagonal); float only.
__global__ void attention_datt_kernel(float* dpreatt, const float* dout, const float* v,
                                      AttentionShape s, cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.H * s.T * s.T) return;
  const std::int64_t t2 = index % s.T, t = index / s.T % s.T;
  dpreatt[index] = t2 > t ? 0.0f : attention_datt(dout, v, s, dropout, index);
}

// One thread per (b, h, t) row: dpreatt = att ⊙ (datt − Σ att·datt). A float row works in place
// on the datt of attention_datt_kernel; a 16-bit row recomputes datt in f32 (twice: for the sum,
// then for the write) so dpreatt is rounded once.
template <class A>
__global__ void attention_softmax_backward_kernel(A* dpreatt, const A* att, const A* dout,
                                                  const A* v, AttentionShape s,
                                                  cpu::AttentionDropout dropout) {
  const std::int64_t row = linear_index();
  if (row >= s.B * s.H * s.T) return;
  const std::int64_t t = row % s.T;
  A* g = dpreatt + row * s.T;    // (T)
  const A* a = att + row * s.T;  // (T)
  const auto datt = [&](std::int64_t t2) {
    if constexpr (std::is_same_v<A, float>) {
      return g[t2];
    } else {
      return attention_datt(dout, v, s, dropout, row * s.T + t2);
    }
  };
  float att_datt = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) att_datt += widen(a[t2]) * datt(t2);
  for (std::int64_t t2 = 0; t2 <= t; t2++) g[t2] = narrow<A>(widen(a[t2]) * (datt(t2) - att_datt));
  if constexpr (!std::is_same_v<A, float>) {
    for (std::int64_t t2 = t + 1; t2 < s.T; t2++) g[t2] = narrow<A>(0.0f);
  }
}

// One thread per (b, t, h, d): dq += scale · Σ_t2 dpreatt · k.
template <class A>
__global__ void attention_dq_kernel(A* dq, const A* dpreatt, const A* k, AttentionShape s,
                                    float scale) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.H * s.D) return;
  const std::int64_t d = index % s.D, h = index / s.D % s.H, t = index / (s.D * s.H) % s.T;
  const std::int64_t b = index / (s.D * s.H * s.T);
  const std::int64_t kvh = h / (s.H / s.Hkv);
  const A* g = dpreatt + ((b * s.H + h) * s.T + t) * s.T;  // (T)
  float total = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) {
    total += widen(g[t2]) * widen(k[kv_at(s, b, t2, kvh) + d]);
  }
  dq[index] = narrow<A>(widen(dq[index]) + scale * total);
}

// One thread per (b, t2, kvh, d): dk += scale · Σ dpreatt · q and dv += Σ dropout(att) · dout
// over the query heads h of this kv head and the rows t >= t2.
template <class A>
__global__ void attention_dkv_kernel(A* dk, A* dv, const A* dpreatt, const A* att, const A* q,
                                     const A* dout, AttentionShape s, float scale,
                                     cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.Hkv * s.D) return;
  const std::int64_t d = index % s.D, kvh = index / s.D % s.Hkv;
  const std::int64_t t2 = index / (s.D * s.Hkv) % s.T, b = index / (s.D * s.Hkv * s.T);
  const std::int64_t group = s.H / s.Hkv;
  float dk_total = 0.0f, dv_total = 0.0f;
  for (std::int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (std::int64_t t = t2; t < s.T; t++) {
      const std::int64_t score = ((b * s.H + h) * s.T + t) * s.T + t2;
      dk_total += widen(dpreatt[score]) * widen(q[q_at(s, b, t, h) + d]);
      dv_total += drop(widen(att[score]), dropout, score) * widen(dout[q_at(s, b, t, h) + d]);
    }
  }
  dk[index] = narrow<A>(widen(dk[index]) + scale * dk_total);
  dv[index] = narrow<A>(widen(dv[index]) + dv_total);
}

void check_arguments(const char* op, const AttentionShape& s,
                     const cpu::AttentionDropout& dropout) {
  cpu::require_dropout_probability(op, dropout.p);
  cpu::require_non_negative(op, "B", s.B);
  cpu::require_non_negative(op, "T", s.T);
  cpu::require_non_negative(op, "H", s.H);
  cpu::require_non_negative(op, "Hkv", s.Hkv);
  cpu::require_non_negative(op, "D", s.D);
  cpu::require(
      s.H == 0 || (s.Hkv > 0 && s.H % s.Hkv == 0), op,
      "kv heads Hkv = " + std::to_string(s.Hkv) + " must divide heads H = " + std::to_string(s.H));
}

unsigned blocks(std::int64_t work) {
  return blocks_for(work, kElementwiseBlockThreads);
}

}  // namespace

template <class A>
void attention_forward(NoDeduce<A>* out, A* preatt, A* att, const A* q, const A* k, const A* v,
                       int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const cpu::AttentionDropout& dropout) {
  const AttentionShape s{B, T, H, Hkv, D};
  check_arguments("cuda::attention_forward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  constexpr unsigned threads = kElementwiseBlockThreads;
  VRAMLAB_LAUNCH(attention_scores_kernel<A>, blocks(B * H * T * T), threads, 0, 0)
  (preatt, q, k, s, scale);
  VRAMLAB_LAUNCH(attention_softmax_kernel<A>, blocks(B * H * T), threads, 0, 0)
  (att, preatt, q, k, s, scale);
  if (D == 0 || out == nullptr) return;
  VRAMLAB_LAUNCH(attention_values_kernel<A>, blocks(B * T * H * D), threads, 0, 0)
  (out, att, v, s, dropout);
}

template <class A>
void attention_backward(A* dq, A* dk, A* dv, A* dpreatt, const A* dout, const A* q, const A* k,
                        const A* v, const A* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                        int64_t D, const cpu::AttentionDropout& dropout) {
  const AttentionShape s{B, T, H, Hkv, D};
  check_arguments("cuda::attention_backward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  constexpr unsigned threads = kElementwiseBlockThreads;
  if constexpr (std::is_same_v<A, float>) {
    VRAMLAB_LAUNCH(attention_datt_kernel, blocks(B * H * T * T), threads, 0, 0)
    (dpreatt, dout, v, s, dropout);
  }
  VRAMLAB_LAUNCH(attention_softmax_backward_kernel<A>, blocks(B * H * T), threads, 0, 0)
  (dpreatt, att, dout, v, s, dropout);
  if (D == 0) return;
  VRAMLAB_LAUNCH(attention_dq_kernel<A>, blocks(B * T * H * D), threads, 0, 0)
  (dq, dpreatt, k, s, scale);
  VRAMLAB_LAUNCH(attention_dkv_kernel<A>, blocks(B * T * Hkv * D), threads, 0, 0)
  (dk, dv, dpreatt, att, q, dout, s, scale, dropout);
}

#define VRAMLAB_INSTANTIATE(A)                                                                    \
  template void attention_forward<A>(NoDeduce<A>*, A*, A*, const A*, const A*, const A*, int64_t, \
                                     int64_t, int64_t, int64_t, int64_t,                          \
                                     const cpu::AttentionDropout&);                               \
  template void attention_backward<A>(A*, A*, A*, A*, const A*, const A*, const A*, const A*,     \
                                      const A*, int64_t, int64_t, int64_t, int64_t, int64_t,      \
                                      const cpu::AttentionDropout&);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
