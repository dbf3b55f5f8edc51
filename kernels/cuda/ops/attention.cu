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

#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

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
__global__ void attention_scores_kernel(float* preatt, const float* q, const float* k,
                                        AttentionShape s, float scale) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.H * s.T * s.T) return;
  const std::int64_t t2 = index % s.T, t = index / s.T % s.T;
  const std::int64_t h = index / (s.T * s.T) % s.H, b = index / (s.T * s.T * s.H);
  if (t2 > t) {
    preatt[index] = -INFINITY;
    return;
  }
  const float* q_row = q + q_at(s, b, t, h);
  const float* k_row = k + kv_at(s, b, t2, h / (s.H / s.Hkv));
  float dot = 0.0f;
  for (std::int64_t d = 0; d < s.D; d++) dot += q_row[d] * k_row[d];
  preatt[index] = dot * scale;
}

// One thread per (b, h, t) row: att = softmax over t2 <= t, 0 above the diagonal.
__global__ void attention_softmax_kernel(float* att, const float* preatt, AttentionShape s) {
  const std::int64_t row = linear_index();
  if (row >= s.B * s.H * s.T) return;
  const std::int64_t t = row % s.T;
  const float* x = preatt + row * s.T;  // (T)
  float max_value = -INFINITY;
  for (std::int64_t t2 = 0; t2 <= t; t2++) max_value = fmaxf(max_value, x[t2]);
  float total = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) total += expf(x[t2] - max_value);
  for (std::int64_t t2 = 0; t2 < s.T; t2++) {
    att[row * s.T + t2] = t2 <= t ? expf(x[t2] - max_value) / total : 0.0f;
  }
}

// One thread per (b, t, h, d).
__global__ void attention_values_kernel(float* out, const float* att, const float* v,
                                        AttentionShape s, cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.H * s.D) return;
  const std::int64_t d = index % s.D, h = index / s.D % s.H, t = index / (s.D * s.H) % s.T;
  const std::int64_t b = index / (s.D * s.H * s.T);
  const std::int64_t kvh = h / (s.H / s.Hkv);
  const std::int64_t row = ((b * s.H + h) * s.T + t) * s.T;
  float value = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) {
    value += drop(att[row + t2], dropout, row + t2) * v[kv_at(s, b, t2, kvh) + d];
  }
  out[index] = value;
}

// One thread per (b, h, t, t2): dpreatt = datt = (dout·v) · keep / (1 − p) (0 above the
// diagonal).
__global__ void attention_datt_kernel(float* dpreatt, const float* dout, const float* v,
                                      AttentionShape s, cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.H * s.T * s.T) return;
  const std::int64_t t2 = index % s.T, t = index / s.T % s.T;
  const std::int64_t h = index / (s.T * s.T) % s.H, b = index / (s.T * s.T * s.H);
  if (t2 > t) {
    dpreatt[index] = 0.0f;
    return;
  }
  const float* dout_row = dout + q_at(s, b, t, h);
  const float* v_row = v + kv_at(s, b, t2, h / (s.H / s.Hkv));
  float datt = 0.0f;
  for (std::int64_t d = 0; d < s.D; d++) datt += dout_row[d] * v_row[d];
  dpreatt[index] = drop(datt, dropout, index);
}

// One thread per (b, h, t) row, in place: dpreatt = att ⊙ (datt − Σ att·datt).
__global__ void attention_softmax_backward_kernel(float* dpreatt, const float* att,
                                                  AttentionShape s) {
  const std::int64_t row = linear_index();
  if (row >= s.B * s.H * s.T) return;
  const std::int64_t t = row % s.T;
  float* g = dpreatt + row * s.T;    // (T)
  const float* a = att + row * s.T;  // (T)
  float att_datt = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) att_datt += a[t2] * g[t2];
  for (std::int64_t t2 = 0; t2 <= t; t2++) g[t2] = a[t2] * (g[t2] - att_datt);
}

// One thread per (b, t, h, d): dq += scale · Σ_t2 dpreatt · k.
__global__ void attention_dq_kernel(float* dq, const float* dpreatt, const float* k,
                                    AttentionShape s, float scale) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.H * s.D) return;
  const std::int64_t d = index % s.D, h = index / s.D % s.H, t = index / (s.D * s.H) % s.T;
  const std::int64_t b = index / (s.D * s.H * s.T);
  const std::int64_t kvh = h / (s.H / s.Hkv);
  const float* g = dpreatt + ((b * s.H + h) * s.T + t) * s.T;  // (T)
  float total = 0.0f;
  for (std::int64_t t2 = 0; t2 <= t; t2++) total += g[t2] * k[kv_at(s, b, t2, kvh) + d];
  dq[index] += scale * total;
}

// One thread per (b, t2, kvh, d): dk += scale · Σ dpreatt · q and dv += Σ dropout(att) · dout
// over the query heads h of this kv head and the rows t >= t2.
__global__ void attention_dkv_kernel(float* dk, float* dv, const float* dpreatt, const float* att,
                                     const float* q, const float* dout, AttentionShape s,
                                     float scale, cpu::AttentionDropout dropout) {
  const std::int64_t index = linear_index();
  if (index >= s.B * s.T * s.Hkv * s.D) return;
  const std::int64_t d = index % s.D, kvh = index / s.D % s.Hkv;
  const std::int64_t t2 = index / (s.D * s.Hkv) % s.T, b = index / (s.D * s.Hkv * s.T);
  const std::int64_t group = s.H / s.Hkv;
  float dk_total = 0.0f, dv_total = 0.0f;
  for (std::int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (std::int64_t t = t2; t < s.T; t++) {
      const std::int64_t score = ((b * s.H + h) * s.T + t) * s.T + t2;
      dk_total += dpreatt[score] * q[q_at(s, b, t, h) + d];
      dv_total += drop(att[score], dropout, score) * dout[q_at(s, b, t, h) + d];
    }
  }
  dk[index] += scale * dk_total;
  dv[index] += dv_total;
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

void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const cpu::AttentionDropout& dropout) {
  const AttentionShape s{B, T, H, Hkv, D};
  check_arguments("cuda::attention_forward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  constexpr unsigned threads = kElementwiseBlockThreads;
  VRAMLAB_LAUNCH(attention_scores_kernel, blocks(B * H * T * T), threads, 0, 0)
  (preatt, q, k, s, scale);
  VRAMLAB_LAUNCH(attention_softmax_kernel, blocks(B * H * T), threads, 0, 0)(att, preatt, s);
  if (D == 0 || out == nullptr) return;
  VRAMLAB_LAUNCH(attention_values_kernel, blocks(B * T * H * D), threads, 0, 0)
  (out, att, v, s, dropout);
}

void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const cpu::AttentionDropout& dropout) {
  const AttentionShape s{B, T, H, Hkv, D};
  check_arguments("cuda::attention_backward", s, dropout);
  if (B * T * H == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  constexpr unsigned threads = kElementwiseBlockThreads;
  VRAMLAB_LAUNCH(attention_datt_kernel, blocks(B * H * T * T), threads, 0, 0)
  (dpreatt, dout, v, s, dropout);
  VRAMLAB_LAUNCH(attention_softmax_backward_kernel, blocks(B * H * T), threads, 0, 0)
  (dpreatt, att, s);
  if (D == 0) return;
  VRAMLAB_LAUNCH(attention_dq_kernel, blocks(B * T * H * D), threads, 0, 0)
  (dq, dpreatt, k, s, scale);
  VRAMLAB_LAUNCH(attention_dkv_kernel, blocks(B * T * Hkv * D), threads, 0, 0)
  (dk, dv, dpreatt, att, q, dout, s, scale, dropout);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
