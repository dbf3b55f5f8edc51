/// \file
/// \brief Causal scaled-dot-product attention that materializes the (B, H, T, T) scores, with
/// multi-head and grouped-query layouts (H query heads share Hkv key/value heads, H % Hkv == 0;
/// query head h reads kv head h / (H / Hkv)).
///
/// This is the "naive" attention whose O(T²) memory lesson 06 replaces with flash attention:
/// the forward keeps the pre-softmax scores `preatt` (masked entries are -inf) and the
/// probabilities `att` (masked entries 0); the backward writes the score gradients into `dpreatt`,
/// also (B, H, T, T). Backward kernels accumulate (+=) into dq, dk, dv.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = softmax(q·kᵀ/√D + causal mask) · v per (batch, head); H query heads, Hkv key/value heads.
/// - out    (B, T, H, D) written.
/// - preatt (B, H, T, T) scaled scores, -inf above the diagonal, written.
/// - att    (B, H, T, T) probabilities, 0 above the diagonal, written.
/// - q      (B, T, H, D)
/// - k      (B, T, Hkv, D)
/// - v      (B, T, Hkv, D)
/// \throws vramlab::UsageError on a negative size, Hkv = 0 with H > 0, or H % Hkv != 0.
void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D);
/// Gradients of attention_forward, accumulated into dq, dk, dv (dk and dv sum over the H / Hkv
/// query heads of a group). dpreatt (B, H, T, T), the scaled scores' gradient, is written (0 above
/// the diagonal); att (B, H, T, T) comes from the forward; every other pointer has the shape of its
/// forward namesake: dq, dout, q (B, T, H, D); dk, dv, k, v (B, T, Hkv, D).
/// \throws vramlab::UsageError as attention_forward.
void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D);

/// Reference of attention_forward. \tparam Real float or double.
template <typename Real>
void attention_forward_reference(Real* out, Real* preatt, Real* att, const Real* q, const Real* k,
                                 const Real* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                 int64_t D);
/// Reference of attention_backward. \tparam Real float or double.
template <typename Real>
void attention_backward_reference(Real* dq, Real* dk, Real* dv, Real* dpreatt, const Real* dout,
                                  const Real* q, const Real* k, const Real* v, const Real* att,
                                  int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D);

}  // namespace vramlab::kernels::cpu
