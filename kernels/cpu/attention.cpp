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
#include "kernels/cpu/storage.h"
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
template <typename A>
void transpose_head(float* transposed, const A* x, int64_t b, int64_t kvh, int64_t T, int64_t Hkv,
                    int64_t D) {
  for (int64_t t2 = 0; t2 < T; t2++) {
    const A* row = x + ((b * T + t2) * Hkv + kvh) * D;  // (D)
    for (int64_t d = 0; d < D; d++) transposed[d * T + t2] = widen(row[d]);
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
template <typename A>
void accumulate_weighted_rows(float* acc, const float* weights, int64_t weight_stride,
                              const A* rows, int64_t row_stride, int64_t count, float scale,
                              int64_t D) {
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float w0 = scale * weights[j * weight_stride];
    const float w1 = scale * weights[(j + 1) * weight_stride];
    const float w2 = scale * weights[(j + 2) * weight_stride];
    const float w3 = scale * weights[(j + 3) * weight_stride];
    const A* r0 = rows + j * row_stride;
    const A* r1 = r0 + row_stride;
    const A* r2 = r1 + row_stride;
    const A* r3 = r2 + row_stride;
#pragma omp simd
    for (int64_t d = 0; d < D; d++) {
      acc[d] += (w0 * widen(r0[d]) + w1 * widen(r1[d])) + (w2 * widen(r2[d]) + w3 * widen(r3[d]));
    }
  }
  for (; j < count; j++) {
    const float w = scale * weights[j * weight_stride];
    const A* r = rows + j * row_stride;
#pragma omp simd
    for (int64_t d = 0; d < D; d++) acc[d] += w * widen(r[d]);
  }
}

// dropped[j] = keep(first + j·stride) ? values[j·stride] · scale : 0 for j < count: the dropout
// of `count` scores whose mask indices (offset included) start at `first`, `stride` apart.
template <typename A>
void drop_scores(float* dropped, const A* values, int64_t stride, int64_t count,
                 const AttentionDropout& dropout, uint64_t first) {
  const float scale = dropout_scale(dropout.p);
  for (int64_t j = 0; j < count; j++) {
    const uint64_t index = first + static_cast<uint64_t>(j * stride);
    dropped[j] =
        dropout_keep(dropout.seed, index, dropout.p) ? widen(values[j * stride]) * scale : 0.0f;
  }
}

// The mask index of score (b, h, t, t2) = offset + its position in (B, H, T, T).
uint64_t score_index(const AttentionDropout& dropout, int64_t score) {
  return dropout.offset + static_cast<uint64_t>(score);
}

}  // namespace

// With 16-bit storage the scores, probabilities, query row and output row of one query live in
// f32 scratch rows and are written rounded at the end; the float kernel computes in preatt, att
// and out themselves (the same arithmetic, so the same bits before rounding).
template <typename A>
void attention_forward(A* out, A* preatt, A* att, const A* q, const A* k, const A* v, int64_t B,
                       int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const AttentionDropout& dropout) {
  check_arguments("attention_forward", B, T, H, Hkv, D, dropout);
  if (H == 0 || T == 0) return;
  constexpr bool kScratch = kNarrowStorage<A>;
  const bool dropping = dropout.p > 0.0f;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float minus_infinity = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> k_transposed(static_cast<size_t>(D * T));        // (D, T) of one kv head
    std::vector<float> dropped(dropping ? static_cast<size_t>(T) : 0);  // (T) one row of att
    std::vector<float> scores(kScratch ? static_cast<size_t>(T) : 0);   // (T) one row of preatt
    std::vector<float> probs(kScratch ? static_cast<size_t>(T) : 0);    // (T) one row of att
    std::vector<float> q32(kScratch ? static_cast<size_t>(D) : 0);      // (D) one query
    std::vector<float> out32(kScratch ? static_cast<size_t>(D) : 0);    // (D) one output row
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        transpose_head(k_transposed.data(), k, b, kvh, T, Hkv, D);
        for (int64_t t = 0; t < T; t++) {
          const A* q_row = q + ((b * T + t) * H + h) * D;      // (D)
          A* preatt_row = preatt + ((b * H + h) * T + t) * T;  // (T)
          A* att_row = att + ((b * H + h) * T + t) * T;        // (T)
          float* score_row;
          float* prob_row;
          const float* query;
          if constexpr (kScratch) {
            score_row = scores.data();
            prob_row = probs.data();
            for (int64_t d = 0; d < D; d++) q32[static_cast<size_t>(d)] = widen(q_row[d]);
            query = q32.data();
          } else {
            score_row = preatt_row;
            prob_row = att_row;
            query = q_row;
          }
          row_times_transposed(score_row, query, scale, k_transposed.data(), t + 1, T, D);
          float max_value = minus_infinity;
#pragma omp simd reduction(max : max_value)
          for (int64_t t2 = 0; t2 <= t; t2++) {
            max_value = score_row[t2] > max_value ? score_row[t2] : max_value;
          }
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (int64_t t2 = 0; t2 <= t; t2++) {
            prob_row[t2] = fast_exp(score_row[t2] - max_value);
            sum += prob_row[t2];
          }
          const float inv_sum = 1.0f / sum;
#pragma omp simd
          for (int64_t t2 = 0; t2 <= t; t2++) prob_row[t2] *= inv_sum;
          if constexpr (kScratch) {
            // preatt first: when preatt is att, the probabilities must be what remains.
            for (int64_t t2 = 0; t2 <= t; t2++) preatt_row[t2] = narrow<A>(score_row[t2]);
            for (int64_t t2 = 0; t2 <= t; t2++) att_row[t2] = narrow<A>(prob_row[t2]);
          }
          for (int64_t t2 = t + 1; t2 < T; t2++) {
            preatt_row[t2] = narrow<A>(minus_infinity);
            att_row[t2] = narrow<A>(0.0f);
          }
          if (out == nullptr) continue;
          const float* weights = prob_row;
          if (dropping) {
            drop_scores(dropped.data(), prob_row, 1, t + 1, dropout,
                        score_index(dropout, ((b * H + h) * T + t) * T));
            weights = dropped.data();
          }
          A* out_row = out + ((b * T + t) * H + h) * D;  // (D)
          float* out_acc;
          if constexpr (kScratch) {
            out_acc = out32.data();
          } else {
            out_acc = out_row;
          }
          std::fill(out_acc, out_acc + D, 0.0f);
          accumulate_weighted_rows(out_acc, weights, 1, v + (b * T * Hkv + kvh) * D, Hkv * D, t + 1,
                                   1.0f, D);
          if constexpr (kScratch) {
            for (int64_t d = 0; d < D; d++) out_row[d] = narrow<A>(out_acc[d]);
          }
        }
      }
    }
  }
}

namespace {

void attention_backward_f32(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                            const float* q, const float* k, const float* v, const float* att,
                            int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                            const AttentionDropout& dropout) {
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

// 16-bit storage: one task per (b, kv head) so the score gradients of a head can stay in an f32
// (T, T) scratch from phase 1 to phase 2 (dpreatt itself only receives them rounded), and dk, dv
// of the kv head are summed in f32 rows and rounded once. The additions into every gradient row
// happen in the order of attention_backward_f32, so before rounding the bits are the same.
template <typename A>
void attention_backward_narrow(A* dq, A* dk, A* dv, A* dpreatt, const A* dout, const A* q,
                               const A* k, const A* v, const A* att, int64_t B, int64_t T,
                               int64_t H, int64_t Hkv, int64_t D, const AttentionDropout& dropout) {
  const bool dropping = dropout.p > 0.0f;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto TT = static_cast<size_t>(T), TD = static_cast<size_t>(T * D);
#pragma omp parallel
  {
    std::vector<float> v_transposed(TD);               // (D, T) of one kv head
    std::vector<float> dscores(TT * TT);               // (T, T) one head's score gradients
    std::vector<float> dk_rows(TD);                    // (T, D) dk of this kv head
    std::vector<float> dv_rows(TD);                    // (T, D) dv of this kv head
    std::vector<float> row32(static_cast<size_t>(D));  // (D) one dout row
    std::vector<float> acc(static_cast<size_t>(D));    // (D) one dq row
    std::vector<float> att32(TT);                      // (T) one row or column of att
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      for (int64_t kvh = 0; kvh < Hkv; kvh++) {
        transpose_head(v_transposed.data(), v, b, kvh, T, Hkv, D);
        for (int64_t t2 = 0; t2 < T; t2++) {
          const int64_t at = ((b * T + t2) * Hkv + kvh) * D;
          for (int64_t d = 0; d < D; d++) {
            dk_rows[static_cast<size_t>(t2 * D + d)] = widen(dk[at + d]);
            dv_rows[static_cast<size_t>(t2 * D + d)] = widen(dv[at + d]);
          }
        }
        for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
          for (int64_t t = 0; t < T; t++) {
            const A* dout_row = dout + ((b * T + t) * H + h) * D;  // (D)
            for (int64_t d = 0; d < D; d++) row32[static_cast<size_t>(d)] = widen(dout_row[d]);
            const A* att_row = att + ((b * H + h) * T + t) * T;  // (T)
            for (int64_t t2 = 0; t2 <= t; t2++) att32[static_cast<size_t>(t2)] = widen(att_row[t2]);
            float* drow = dscores.data() + t * T;
            row_times_transposed(drow, row32.data(), 1.0f, v_transposed.data(), t + 1, T, D);
            if (dropping) {
              drop_scores(drow, drow, 1, t + 1, dropout,
                          score_index(dropout, ((b * H + h) * T + t) * T));
            }
            float att_datt = 0.0f;
#pragma omp simd reduction(+ : att_datt)
            for (int64_t t2 = 0; t2 <= t; t2++)
              att_datt += att32[static_cast<size_t>(t2)] * drow[t2];
#pragma omp simd
            for (int64_t t2 = 0; t2 <= t; t2++) {
              drow[t2] = att32[static_cast<size_t>(t2)] * (drow[t2] - att_datt);
            }
            for (int64_t t2 = t + 1; t2 < T; t2++) drow[t2] = 0.0f;
            A* dq_row = dq + ((b * T + t) * H + h) * D;  // (D)
            for (int64_t d = 0; d < D; d++) acc[static_cast<size_t>(d)] = widen(dq_row[d]);
            accumulate_weighted_rows(acc.data(), drow, 1, k + (b * T * Hkv + kvh) * D, Hkv * D,
                                     t + 1, scale, D);
            for (int64_t d = 0; d < D; d++) dq_row[d] = narrow<A>(acc[static_cast<size_t>(d)]);
            A* dpreatt_row = dpreatt + ((b * H + h) * T + t) * T;  // (T)
            for (int64_t t2 = 0; t2 < T; t2++) dpreatt_row[t2] = narrow<A>(drow[t2]);
          }
          for (int64_t t2 = 0; t2 < T; t2++) {
            const int64_t first = ((b * H + h) * T + t2) * T + t2;
            const int64_t rows = ((b * T + t2) * H + h) * D;
            accumulate_weighted_rows(dk_rows.data() + t2 * D, dscores.data() + t2 * T + t2, T,
                                     q + rows, H * D, T - t2, scale, D);
            if (dropping) {
              drop_scores(att32.data(), att + first, T, T - t2, dropout,
                          score_index(dropout, first));
            } else {
              for (int64_t j = 0; j < T - t2; j++) {
                att32[static_cast<size_t>(j)] = widen(att[first + j * T]);
              }
            }
            accumulate_weighted_rows(dv_rows.data() + t2 * D, att32.data(), 1, dout + rows, H * D,
                                     T - t2, 1.0f, D);
          }
        }
        for (int64_t t2 = 0; t2 < T; t2++) {
          const int64_t at = ((b * T + t2) * Hkv + kvh) * D;
          for (int64_t d = 0; d < D; d++) {
            dk[at + d] = narrow<A>(dk_rows[static_cast<size_t>(t2 * D + d)]);
            dv[at + d] = narrow<A>(dv_rows[static_cast<size_t>(t2 * D + d)]);
          }
        }
      }
    }
  }
}

}  // namespace

template <typename A>
void attention_backward(A* dq, A* dk, A* dv, A* dpreatt, const A* dout, const A* q, const A* k,
                        const A* v, const A* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                        int64_t D, const AttentionDropout& dropout) {
  check_arguments("attention_backward", B, T, H, Hkv, D, dropout);
  if (H == 0 || T == 0) return;
  if constexpr (kNarrowStorage<A>) {
    attention_backward_narrow(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D, dropout);
  } else {
    attention_backward_f32(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D, dropout);
  }
}

void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const AttentionDropout& dropout) {
  attention_forward<float>(out, preatt, att, q, k, v, B, T, H, Hkv, D, dropout);
}

void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const AttentionDropout& dropout) {
  attention_backward<float>(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D, dropout);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                           \
  template void attention_forward<A>(A*, A*, A*, const A*, const A*, const A*, int64_t, int64_t, \
                                     int64_t, int64_t, int64_t, const AttentionDropout&);        \
  template void attention_backward<A>(A*, A*, A*, A*, const A*, const A*, const A*, const A*,    \
                                      const A*, int64_t, int64_t, int64_t, int64_t, int64_t,     \
                                      const AttentionDropout&);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

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
