/// \file
/// \brief LayerNorm (GPT-2) and RMSNorm (Llama) over the last dimension, forward and backward.
///
/// The forward saves the per-row statistics the backward needs (mean and 1/σ for LayerNorm, 1/rms
/// for RMSNorm), as llm.c does. Backward kernels accumulate (+=) into their gradient outputs; the
/// fast backward sums dweight/dbias over rows in order per column block (deterministic). The fast
/// forward accumulates the row statistics in double.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = (inp - mean) · rstd · weight + bias per row, rstd = 1/√(var + eps) (biased variance).
/// out, inp (N, C), N = B·T; mean, rstd (N), saved for the backward; weight, bias (C).
/// \throws vramlab::UsageError on a negative size.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps = 1e-5f);
/// LayerNorm gradients, accumulated into dinp, dweight, dbias. dinp, dout, inp (N, C);
/// dweight, dbias, weight (C); mean, rstd (N) from the forward.
/// \throws vramlab::UsageError on a negative size.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int64_t C);

/// out = inp · rstd · weight per row, rstd = 1/√(mean(inp²) + eps). out, inp (N, C); rstd (N),
/// saved; weight (C). \throws vramlab::UsageError on a negative size.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps = 1e-5f);
/// RMSNorm gradients, accumulated into dinp and dweight. dinp, dout, inp (N, C); dweight,
/// weight (C); rstd (N) from the forward. \throws vramlab::UsageError on a negative size.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C);

/// layernorm_forward on storage A (kernels/cpu/storage.h): statistics in double as the float
/// kernel, mean and rstd f32, out rounded once. \tparam A float, bf16_t or f16_t.
/// \throws vramlab::UsageError on a negative size.
template <typename A>
void layernorm_forward(A* out, float* mean, float* rstd, const A* inp, const A* weight,
                       const A* bias, int64_t N, int64_t C, float eps = 1e-5f);
/// layernorm_backward on storage A with parameter gradients in G: dinp = round_A(dinp + ·),
/// dweight, dbias = round_G(· + the f32 column sums). \tparam A float, bf16_t or f16_t.
/// \tparam G float or A. \throws vramlab::UsageError on a negative size.
template <typename A, typename G>
void layernorm_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C);
/// rmsnorm_forward on storage A (rstd f32). \tparam A float, bf16_t or f16_t.
/// \throws vramlab::UsageError on a negative size.
template <typename A>
void rmsnorm_forward(A* out, float* rstd, const A* inp, const A* weight, int64_t N, int64_t C,
                     float eps = 1e-5f);
/// rmsnorm_backward on storage A with dweight in G. \tparam A float, bf16_t or f16_t.
/// \tparam G float or A. \throws vramlab::UsageError on a negative size.
template <typename A, typename G>
void rmsnorm_backward(A* dinp, G* dweight, const A* dout, const A* inp, const A* weight,
                      const float* rstd, int64_t N, int64_t C);
/// Reference of layernorm_forward. \tparam Real float or double.
template <typename Real>
void layernorm_forward_reference(Real* out, Real* mean, Real* rstd, const Real* inp,
                                 const Real* weight, const Real* bias, int64_t N, int64_t C,
                                 Real eps = Real(1e-5));
/// Reference of layernorm_backward. \tparam Real float or double.
template <typename Real>
void layernorm_backward_reference(Real* dinp, Real* dweight, Real* dbias, const Real* dout,
                                  const Real* inp, const Real* weight, const Real* mean,
                                  const Real* rstd, int64_t N, int64_t C);
/// Reference of rmsnorm_forward. \tparam Real float or double.
template <typename Real>
void rmsnorm_forward_reference(Real* out, Real* rstd, const Real* inp, const Real* weight,
                               int64_t N, int64_t C, Real eps = Real(1e-5));
/// Reference of rmsnorm_backward. \tparam Real float or double.
template <typename Real>
void rmsnorm_backward_reference(Real* dinp, Real* dweight, const Real* dout, const Real* inp,
                                const Real* weight, const Real* rstd, int64_t N, int64_t C);

}  // namespace vramlab::kernels::cpu
