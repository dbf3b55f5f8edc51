// Causal attention with materialized scores. Fast forward: one (b, h, t) query row per task.
// Fast backward in two phases so no two tasks write the same gradient: (1) per query row, the
// score gradients and dq; (2) per key row (b, kv head, t2), dk and dv summed over the group's
// heads and the rows t >= t2, in a fixed order (deterministic for any thread count).
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {
namespace {

void check_arguments(const char* op, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D) {
  require_non_negative(op, "B", B);
  require_non_negative(op, "T", T);
  require_non_negative(op, "H", H);
  require_non_negative(op, "Hkv", Hkv);
  require_non_negative(op, "D", D);
  require(H == 0 || (Hkv > 0 && H % Hkv == 0), op,
          "kv heads Hkv = " + std::to_string(Hkv) + " must divide heads H = " + std::to_string(H));
}

}  // namespace

void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D) {
  check_arguments("attention_forward", B, T, H, Hkv, D);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float minus_infinity = -std::numeric_limits<float>::infinity();
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t t = 0; t < T; t++) {
        const int64_t kvh = h / group;
        const float* q_row = q + ((b * T + t) * H + h) * D;
        float* preatt_row = preatt + ((b * H + h) * T + t) * T;
        float* att_row = att + ((b * H + h) * T + t) * T;
        float max_value = minus_infinity;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float* k_row = k + ((b * T + t2) * Hkv + kvh) * D;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; d++) dot += q_row[d] * k_row[d];
          preatt_row[t2] = dot * scale;
          max_value = std::max(max_value, dot * scale);
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
        float* out_row = out + ((b * T + t) * H + h) * D;
        std::fill(out_row, out_row + D, 0.0f);
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float* v_row = v + ((b * T + t2) * Hkv + kvh) * D;
          const float weight = att_row[t2];
#pragma omp simd
          for (int64_t d = 0; d < D; d++) out_row[d] += weight * v_row[d];
        }
      }
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D) {
  check_arguments("attention_backward", B, T, H, Hkv, D);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Phase 1: per query row, datt = dout·vᵀ, dpreatt = softmax backward, dq += scale·dpreatt·k.
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t t = 0; t < T; t++) {
        const int64_t kvh = h / group;
        const float* dout_row = dout + ((b * T + t) * H + h) * D;
        const float* att_row = att + ((b * H + h) * T + t) * T;
        float* dpreatt_row = dpreatt + ((b * H + h) * T + t) * T;
        float att_datt = 0.0f;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float* v_row = v + ((b * T + t2) * Hkv + kvh) * D;
          float datt = 0.0f;
#pragma omp simd reduction(+ : datt)
          for (int64_t d = 0; d < D; d++) datt += dout_row[d] * v_row[d];
          dpreatt_row[t2] = datt;
          att_datt += att_row[t2] * datt;
        }
#pragma omp simd
        for (int64_t t2 = 0; t2 <= t; t2++) {
          dpreatt_row[t2] = att_row[t2] * (dpreatt_row[t2] - att_datt);
        }
        for (int64_t t2 = t + 1; t2 < T; t2++) dpreatt_row[t2] = 0.0f;
        float* dq_row = dq + ((b * T + t) * H + h) * D;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float* k_row = k + ((b * T + t2) * Hkv + kvh) * D;
          const float weight = scale * dpreatt_row[t2];
#pragma omp simd
          for (int64_t d = 0; d < D; d++) dq_row[d] += weight * k_row[d];
        }
      }
    }
  }
  // Phase 2: per key row, dk += scale·Σ dpreatt·q and dv += Σ att·dout over the group's heads.
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t b = 0; b < B; b++) {
    for (int64_t kvh = 0; kvh < Hkv; kvh++) {
      for (int64_t t2 = 0; t2 < T; t2++) {
        float* dk_row = dk + ((b * T + t2) * Hkv + kvh) * D;
        float* dv_row = dv + ((b * T + t2) * Hkv + kvh) * D;
        for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
          for (int64_t t = t2; t < T; t++) {
            const float dscore = scale * dpreatt[((b * H + h) * T + t) * T + t2];
            const float probability = att[((b * H + h) * T + t) * T + t2];
            const float* q_row = q + ((b * T + t) * H + h) * D;
            const float* dout_row = dout + ((b * T + t) * H + h) * D;
#pragma omp simd
            for (int64_t d = 0; d < D; d++) {
              dk_row[d] += dscore * q_row[d];
              dv_row[d] += probability * dout_row[d];
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
                                 int64_t D) {
  check_arguments("attention_forward_reference", B, T, H, Hkv, D);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
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
        for (int64_t d = 0; d < D; d++) {
          Real value = 0;
          for (int64_t t2 = 0; t2 <= t; t2++) {
            value += att[row + t2] * v[((b * T + t2) * Hkv + kvh) * D + d];
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
                                  int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D) {
  check_arguments("attention_backward_reference", B, T, H, Hkv, D);
  if (H == 0) return;
  const int64_t group = H / Hkv;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(D));
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      for (int64_t h = 0; h < H; h++) {
        const int64_t kvh = h / group;
        const int64_t row = ((b * H + h) * T + t) * T;
        const Real* dout_row = dout + ((b * T + t) * H + h) * D;
        // out = Σ att·v: gradients of att and v.
        for (int64_t t2 = 0; t2 < T; t2++) dpreatt[row + t2] = 0;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          Real datt = 0;
          for (int64_t d = 0; d < D; d++) {
            datt += dout_row[d] * v[((b * T + t2) * Hkv + kvh) * D + d];
            dv[((b * T + t2) * Hkv + kvh) * D + d] += att[row + t2] * dout_row[d];
          }
          dpreatt[row + t2] = datt;
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
                                                 int64_t);
template void attention_forward_reference<double>(double*, double*, double*, const double*,
                                                  const double*, const double*, int64_t, int64_t,
                                                  int64_t, int64_t, int64_t);
template void attention_backward_reference<float>(float*, float*, float*, float*, const float*,
                                                  const float*, const float*, const float*,
                                                  const float*, int64_t, int64_t, int64_t, int64_t,
                                                  int64_t);
template void attention_backward_reference<double>(double*, double*, double*, double*,
                                                   const double*, const double*, const double*,
                                                   const double*, const double*, int64_t, int64_t,
                                                   int64_t, int64_t, int64_t);

}  // namespace vramlab::kernels::cpu
