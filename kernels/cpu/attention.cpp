// Causal attention with materialized scores. Fast forward: one (b, h) head per task, keys
// transposed once per task so the scores are vectorized over keys. Fast backward in two phases so
// no two tasks write the same gradient: (1) per (b, h), the score gradients and dq; (2) per key
// row (b, kv head, t2), dk and dv summed over the group's heads and the rows t >= t2, in a fixed
// order (deterministic for any thread count). Attention dropout regenerates its mask from the
// score's index wherever it is needed (forward output, score gradients, dv), so no mask is stored.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {
namespace {

void check_arguments(const char* op, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                     const AttentionDropout& dropout) {
  require_dropout_probability(op, dropout.p);
  require_non_negative(op, "B", B);
  require_non_negative(op, "T", T);
  require_non_negative(op, "H", H);
  require_non_negative(op, "Hkv", Hkv);
  require_non_negative(op, "D", D);
  require(H == 0 || (Hkv > 0 && H % Hkv == 0), op,
          "kv heads Hkv = " + std::to_string(Hkv) + " must divide heads H = " + std::to_string(H));
}

// Copies kv head `kvh` of batch `b` from (B, T, Hkv, D) into a (D, T) buffer, so that the scores
// of one query against all keys become D contiguous axpy passes (vector lanes over keys, no
// horizontal sums).
void transpose_head(float* transposed, const float* x, int64_t b, int64_t kvh, int64_t T,
                    int64_t Hkv, int64_t D) {
  for (int64_t t2 = 0; t2 < T; t2++) {
    const float* row = x + ((b * T + t2) * Hkv + kvh) * D;
    for (int64_t d = 0; d < D; d++) transposed[d * T + t2] = row[d];
  }
}

// result[t2] = scale · Σ_d row[d] · transposed[d, t2] for t2 < count, four d at a time so each
// load/store of result feeds four FMAs. The summation order over d is fixed (deterministic).
void row_times_transposed(float* result, const float* row, float scale, const float* transposed,
                          int64_t count, int64_t T, int64_t D) {
  std::fill(result, result + count, 0.0f);
  int64_t d = 0;
  for (; d + 4 <= D; d += 4) {
    const float r0 = row[d], r1 = row[d + 1], r2 = row[d + 2], r3 = row[d + 3];
    const float* c0 = transposed + d * T;
    const float* c1 = c0 + T;
    const float* c2 = c1 + T;
    const float* c3 = c2 + T;
#pragma omp simd
    for (int64_t t2 = 0; t2 < count; t2++) {
      result[t2] += (r0 * c0[t2] + r1 * c1[t2]) + (r2 * c2[t2] + r3 * c3[t2]);
    }
  }
  for (; d < D; d++) {
    const float r = row[d];
    const float* c = transposed + d * T;
#pragma omp simd
    for (int64_t t2 = 0; t2 < count; t2++) result[t2] += r * c[t2];
  }
#pragma omp simd
  for (int64_t t2 = 0; t2 < count; t2++) result[t2] *= scale;
}

// acc[d] += scale · Σ_j weights[j·weight_stride] · rows[j·row_stride + d] for j < count, four rows
// at a time so each load/store of acc feeds four FMAs; fixed order (deterministic).
void accumulate_weighted_rows(float* acc, const float* weights, int64_t weight_stride,
                              const float* rows, int64_t row_stride, int64_t count, float scale,
                              int64_t D) {
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float w0 = scale * weights[j * weight_stride];
    const float w1 = scale * weights[(j + 1) * weight_stride];
    const float w2 = scale * weights[(j + 2) * weight_stride];
    const float w3 = scale * weights[(j + 3) * weight_stride];
    const float* r0 = rows + j * row_stride;
    const float* r1 = r0 + row_stride;
    const float* r2 = r1 + row_stride;
    const float* r3 = r2 + row_stride;
#pragma omp simd
    for (int64_t d = 0; d < D; d++) acc[d] += (w0 * r0[d] + w1 * r1[d]) + (w2 * r2[d] + w3 * r3[d]);
  }
  for (; j < count; j++) {
    const float w = scale * weights[j * weight_stride];
    const float* r = rows + j * row_stride;
#pragma omp simd
    for (int64_t d = 0; d < D; d++) acc[d] += w * r[d];
  }
}

// dropped[j] = keep(first + j·stride) ? values[j·stride] · scale : 0 for j < count: the dropout
// of `count` scores whose mask indices (offset included) start at `first`, `stride` apart.
void drop_scores(float* dropped, const float* values, int64_t stride, int64_t count,
                 const AttentionDropout& dropout, uint64_t first) {
  const float scale = dropout_scale(dropout.p);
  for (int64_t j = 0; j < count; j++) {
    const uint64_t index = first + static_cast<uint64_t>(j * stride);
    dropped[j] = dropout_keep(dropout.seed, index, dropout.p) ? values[j * stride] * scale : 0.0f;
  }
}

// The mask index of score (b, h, t, t2) = offset + its position in (B, H, T, T).
uint64_t score_index(const AttentionDropout& dropout, int64_t score) {
  return dropout.offset + static_cast<uint64_t>(score);
}

}  // namespace

void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const AttentionDropout& dropout) {
  check_arguments("attention_forward", B, T, H, Hkv, D, dropout);
  if (H == 0 || T == 0) return;
  const bool dropping = dropout.p > 0.0f;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float minus_infinity = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> k_transposed(static_cast<size_t>(D * T));        // (D, T) of one kv head
    std::vector<float> dropped(dropping ? static_cast<size_t>(T) : 0);  // (T) one row of att
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        transpose_head(k_transposed.data(), k, b, kvh, T, Hkv, D);
        for (int64_t t = 0; t < T; t++) {
          const float* q_row = q + ((b * T + t) * H + h) * D;
          float* preatt_row = preatt + ((b * H + h) * T + t) * T;
          float* att_row = att + ((b * H + h) * T + t) * T;
          row_times_transposed(preatt_row, q_row, scale, k_transposed.data(), t + 1, T, D);
          float max_value = minus_infinity;
#pragma omp simd reduction(max : max_value)
          for (int64_t t2 = 0; t2 <= t; t2++) {
            max_value = preatt_row[t2] > max_value ? preatt_row[t2] : max_value;
          }
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (int64_t t2 = 0; t2 <= t; t2++) {
            att_row[t2] = fast_exp(preatt_row[t2] - max_value);
            sum += att_row[t2];
          }
          const float inv_sum = 1.0f / sum;
#pragma omp simd
          for (int64_t t2 = 0; t2 <= t; t2++) att_row[t2] *= inv_sum;
          for (int64_t t2 = t + 1; t2 < T; t2++) {
            preatt_row[t2] = minus_infinity;
            att_row[t2] = 0.0f;
          }
          if (out == nullptr) continue;
          const float* weights = att_row;
          if (dropping) {
            drop_scores(dropped.data(), att_row, 1, t + 1, dropout,
                        score_index(dropout, ((b * H + h) * T + t) * T));
            weights = dropped.data();
          }
          float* out_row = out + ((b * T + t) * H + h) * D;
          std::fill(out_row, out_row + D, 0.0f);
          accumulate_weighted_rows(out_row, weights, 1, v + (b * T * Hkv + kvh) * D, Hkv * D, t + 1,
                                   1.0f, D);
        }
      }
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const AttentionDropout& dropout) {
  check_arguments("attention_backward", B, T, H, Hkv, D, dropout);
  if (H == 0 || T == 0) return;
  const bool dropping = dropout.p > 0.0f;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Phase 1: per query row, datt = dout·vᵀ, dpreatt = softmax backward, dq += scale·dpreatt·k.
#pragma omp parallel
  {
    std::vector<float> v_transposed(static_cast<size_t>(D * T));  // (D, T) of one kv head
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        transpose_head(v_transposed.data(), v, b, kvh, T, Hkv, D);
        for (int64_t t = 0; t < T; t++) {
          const float* dout_row = dout + ((b * T + t) * H + h) * D;
          const float* att_row = att + ((b * H + h) * T + t) * T;
          float* dpreatt_row = dpreatt + ((b * H + h) * T + t) * T;
          row_times_transposed(dpreatt_row, dout_row, 1.0f, v_transposed.data(), t + 1, T, D);
          if (dropping) {
            // dout·vᵀ is the gradient of the dropped probabilities; through the mask to att's.
            drop_scores(dpreatt_row, dpreatt_row, 1, t + 1, dropout,
                        score_index(dropout, ((b * H + h) * T + t) * T));
          }
          float att_datt = 0.0f;
#pragma omp simd reduction(+ : att_datt)
          for (int64_t t2 = 0; t2 <= t; t2++) att_datt += att_row[t2] * dpreatt_row[t2];
#pragma omp simd
          for (int64_t t2 = 0; t2 <= t; t2++) {
            dpreatt_row[t2] = att_row[t2] * (dpreatt_row[t2] - att_datt);
          }
          for (int64_t t2 = t + 1; t2 < T; t2++) dpreatt_row[t2] = 0.0f;
          float* dq_row = dq + ((b * T + t) * H + h) * D;
          accumulate_weighted_rows(dq_row, dpreatt_row, 1, k + (b * T * Hkv + kvh) * D, Hkv * D,
                                   t + 1, scale, D);
        }
      }
    }
  }
  // Phase 2: per key row, dk += scale·Σ dpreatt·q and dv += Σ dropout(att)·dout over the group's
  // heads.
#pragma omp parallel
  {
    std::vector<float> dropped(dropping ? static_cast<size_t>(T) : 0);  // (T) one column of att
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      for (int64_t kvh = 0; kvh < Hkv; kvh++) {
        for (int64_t t2 = 0; t2 < T; t2++) {
          float* dk_row = dk + ((b * T + t2) * Hkv + kvh) * D;
          float* dv_row = dv + ((b * T + t2) * Hkv + kvh) * D;
          for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
            // Column t2 of this head's scores, rows t = t2 .. T-1.
            const int64_t first = ((b * H + h) * T + t2) * T + t2;
            const int64_t rows = ((b * T + t2) * H + h) * D;
            accumulate_weighted_rows(dk_row, dpreatt + first, T, q + rows, H * D, T - t2, scale, D);
            if (dropping) {
              drop_scores(dropped.data(), att + first, T, T - t2, dropout,
                          score_index(dropout, first));
              accumulate_weighted_rows(dv_row, dropped.data(), 1, dout + rows, H * D, T - t2, 1.0f,
                                       D);
            } else {
              accumulate_weighted_rows(dv_row, att + first, T, dout + rows, H * D, T - t2, 1.0f, D);
            }
          }
        }
      }
    }
  }
}

template <typename Real>
void attention_forward_reference(Real* out, Real* preatt, Real* att, const Real* q, const Real* k,
                                 const Real* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                 int64_t D, const AttentionDropout& dropout) {
  check_arguments("attention_forward_reference", B, T, H, Hkv, D, dropout);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
  const Real keep_scale = Real(1) / (Real(1) - static_cast<Real>(dropout.p));
  // The probability that multiplies v: att · keep / (1 − p).
  const auto dropped = [&](int64_t score) {
    const bool keep = dropout_uniform(dropout.seed, score_index(dropout, score)) >= dropout.p;
    return keep ? att[score] * keep_scale : Real(0);
  };
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        const int64_t row = ((b * H + h) * T + t) * T;
        Real max_value = -std::numeric_limits<Real>::infinity();
        for (int64_t t2 = 0; t2 < T; t2++) {
          if (t2 > t) {
            preatt[row + t2] = -std::numeric_limits<Real>::infinity();
            continue;
          }
          Real dot = 0;
          for (int64_t d = 0; d < D; d++) {
            dot += q[((b * T + t) * H + h) * D + d] * k[((b * T + t2) * Hkv + kvh) * D + d];
          }
          preatt[row + t2] = dot * scale;
          max_value = std::max(max_value, preatt[row + t2]);
        }
        Real sum = 0;
        for (int64_t t2 = 0; t2 <= t; t2++) sum += std::exp(preatt[row + t2] - max_value);
        for (int64_t t2 = 0; t2 < T; t2++) {
          att[row + t2] = t2 <= t ? std::exp(preatt[row + t2] - max_value) / sum : Real(0);
        }
        if (out == nullptr) continue;
        for (int64_t d = 0; d < D; d++) {
          Real value = 0;
          for (int64_t t2 = 0; t2 <= t; t2++) {
            value += dropped(row + t2) * v[((b * T + t2) * Hkv + kvh) * D + d];
          }
          out[((b * T + t) * H + h) * D + d] = value;
        }
      }
    }
  }
}

template <typename Real>
void attention_backward_reference(Real* dq, Real* dk, Real* dv, Real* dpreatt, const Real* dout,
                                  const Real* q, const Real* k, const Real* v, const Real* att,
                                  int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                  const AttentionDropout& dropout) {
  check_arguments("attention_backward_reference", B, T, H, Hkv, D, dropout);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
  const Real keep_scale = Real(1) / (Real(1) - static_cast<Real>(dropout.p));
  // ∂(dropped probability)/∂att: keep / (1 − p).
  const auto mask = [&](int64_t score) {
    const bool keep = dropout_uniform(dropout.seed, score_index(dropout, score)) >= dropout.p;
    return keep ? keep_scale : Real(0);
  };
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        const int64_t row = ((b * H + h) * T + t) * T;
        const Real* dout_row = dout + ((b * T + t) * H + h) * D;
        // out = Σ dropped·v with dropped = att·mask: gradients of att and v.
        for (int64_t t2 = 0; t2 < T; t2++) dpreatt[row + t2] = 0;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const Real m = mask(row + t2);
          Real ddropped = 0;
          for (int64_t d = 0; d < D; d++) {
            ddropped += dout_row[d] * v[((b * T + t2) * Hkv + kvh) * D + d];
            dv[((b * T + t2) * Hkv + kvh) * D + d] += att[row + t2] * m * dout_row[d];
          }
          dpreatt[row + t2] = ddropped * m;
        }
        // att = softmax(preatt): dpreatt = att ⊙ (datt - Σ att·datt).
        Real att_datt = 0;
        for (int64_t t2 = 0; t2 <= t; t2++) att_datt += att[row + t2] * dpreatt[row + t2];
        for (int64_t t2 = 0; t2 <= t; t2++) {
          dpreatt[row + t2] = att[row + t2] * (dpreatt[row + t2] - att_datt);
        }
        // preatt = scale·q·k: gradients of q and k.
        for (int64_t t2 = 0; t2 <= t; t2++) {
          for (int64_t d = 0; d < D; d++) {
            dq[((b * T + t) * H + h) * D + d] +=
                scale * dpreatt[row + t2] * k[((b * T + t2) * Hkv + kvh) * D + d];
            dk[((b * T + t2) * Hkv + kvh) * D + d] +=
                scale * dpreatt[row + t2] * q[((b * T + t) * H + h) * D + d];
          }
        }
      }
    }
  }
}

template void attention_forward_reference<float>(float*, float*, float*, const float*, const float*,
                                                 const float*, int64_t, int64_t, int64_t, int64_t,
                                                 int64_t, const AttentionDropout&);
template void attention_forward_reference<double>(double*, double*, double*, const double*,
                                                  const double*, const double*, int64_t, int64_t,
                                                  int64_t, int64_t, int64_t,
                                                  const AttentionDropout&);
template void attention_backward_reference<float>(float*, float*, float*, float*, const float*,
                                                  const float*, const float*, const float*,
                                                  const float*, int64_t, int64_t, int64_t, int64_t,
                                                  int64_t, const AttentionDropout&);
template void attention_backward_reference<double>(double*, double*, double*, double*,
                                                   const double*, const double*, const double*,
                                                   const double*, const double*, int64_t, int64_t,
                                                   int64_t, int64_t, int64_t,
                                                   const AttentionDropout&);

}  // namespace vramlab::kernels::cpu
