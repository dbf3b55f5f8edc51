/// \file
/// \brief Causal scaled-dot-product attention that materializes the (B, H, T, T) scores, with
/// multi-head and grouped-query layouts (H query heads share Hkv key/value heads, H % Hkv == 0;
/// query head h reads kv head h / (H / Hkv)).
///
/// This is the "naive" attention whose O(T²) memory lesson 06 replaces with flash attention:
/// the forward keeps the pre-softmax scores `preatt` (masked entries are -inf) and the
/// probabilities `att` (masked entries 0); the backward writes the score gradients into `dpreatt`,
/// also (B, H, T, T). Backward kernels accumulate (+=) into dq, dk, dv.
///
/// Attention dropout (AttentionDropout, kernels/cpu/dropout.h) drops probabilities after the
/// softmax, as torch's scaled_dot_product_attention(dropout_p): att stays the probabilities
/// (saved), the output uses att[b, h, t, s] · keep / (1 − p) with keep from mask element
/// offset + ((b·H + h)·T + t)·T + s, and the backward regenerates the same mask. p = 0 gives
/// bitwise the result without dropout.
#pragma once

#include <cstdint>

#include "kernels/cpu/dropout.h"

namespace vramlab::kernels::cpu {

/// out = dropout(softmax(q·kᵀ/√D + causal mask)) · v per (batch, head); H query heads, Hkv
/// key/value heads.
/// - out    (B, T, H, D) written; nullptr computes only preatt and att (a recompute that needs
///          just the probabilities).
/// - preatt (B, H, T, T) scaled scores, -inf above the diagonal, written.
/// - att    (B, H, T, T) probabilities, 0 above the diagonal, written.
/// - q      (B, T, H, D)
/// - k      (B, T, Hkv, D)
/// - v      (B, T, Hkv, D)
/// - dropout applied to the probabilities that multiply v (not to att); the default is none.
/// \throws vramlab::InternalError on a negative size, Hkv = 0 with H > 0, H % Hkv != 0, or a
/// dropout probability outside [0, 1).
void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const AttentionDropout& dropout = {});
/// Gradients of attention_forward, accumulated into dq, dk, dv (dk and dv sum over the H / Hkv
/// query heads of a group). dpreatt (B, H, T, T), the scaled scores' gradient, is written (0 above
/// the diagonal); att (B, H, T, T) comes from the forward; every other pointer has the shape of its
/// forward namesake: dq, dout, q (B, T, H, D); dk, dv, k, v (B, T, Hkv, D). \p dropout must be
/// the forward's: the score gradient is (dout·vᵀ) · keep / (1 − p) before the softmax backward,
/// and dv uses the dropped probabilities.
/// \throws vramlab::InternalError as attention_forward.
void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const AttentionDropout& dropout = {});

/// attention_forward on storage A (kernels/cpu/storage.h): each row's scores and probabilities
/// are computed in an f32 scratch row (softmax in f32) and written rounded; the output sums the
/// f32 probabilities. \tparam A float, bf16_t or f16_t. \throws as attention_forward.
template <typename A>
void attention_forward(A* out, A* preatt, A* att, const A* q, const A* k, const A* v, int64_t B,
                       int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const AttentionDropout& dropout = {});
/// attention_backward on storage A: the score gradients stay in f32 between the softmax backward
/// and dk (dpreatt receives them rounded); dq, dk, dv are rounded once.
/// \tparam A float, bf16_t or f16_t. \throws as attention_backward.
template <typename A>
void attention_backward(A* dq, A* dk, A* dv, A* dpreatt, const A* dout, const A* q, const A* k,
                        const A* v, const A* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                        int64_t D, const AttentionDropout& dropout = {});
/// Reference of attention_forward (the dropout scale 1 / (1 − p) in Real). \tparam Real float or
/// double.
template <typename Real>
void attention_forward_reference(Real* out, Real* preatt, Real* att, const Real* q, const Real* k,
                                 const Real* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                 int64_t D, const AttentionDropout& dropout = {});
/// Reference of attention_backward. \tparam Real float or double.
template <typename Real>
void attention_backward_reference(Real* dq, Real* dk, Real* dv, Real* dpreatt, const Real* dout,
                                  const Real* q, const Real* k, const Real* v, const Real* att,
                                  int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                  const AttentionDropout& dropout = {});

}  // namespace vramlab::kernels::cpu
