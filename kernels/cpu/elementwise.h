/// \file
/// \brief Elementwise building blocks: residual add, bias add and scaling, forward and backward.
/// Backward kernels accumulate (+=) into their gradient outputs.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = a + b (the residual connection); out, a, b (n); \p out may alias \p a or \p b.
/// \throws vramlab::UsageError when n < 0.
void residual_forward(float* out, const float* a, const float* b, int64_t n);
/// residual_forward on storage A (kernels/cpu/storage.h): out = round_A(widen(a) + widen(b)).
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
void residual_forward(A* out, const A* a, const A* b, int64_t n);
/// da += dout, db += dout, all (n). \throws vramlab::UsageError when n < 0.
void residual_backward(float* da, float* db, const float* dout, int64_t n);

/// x[row, c] += bias[c] in place; x (N, C), bias (C).
/// \throws vramlab::UsageError on a negative size.
void bias_add_forward(float* x, const float* bias, int64_t N, int64_t C);
/// dbias[c] += Σ_rows dout[row, c], rows summed in order (deterministic); dbias (C), dout (N, C).
/// \throws vramlab::UsageError on a negative size.
void bias_add_backward(float* dbias, const float* dout, int64_t N, int64_t C);

/// out = scale · inp; out, inp (n); \p out may alias \p inp.
/// \throws vramlab::UsageError when n < 0.
void scale_forward(float* out, const float* inp, float scale, int64_t n);
/// dinp += scale · dout, both (n). \throws vramlab::UsageError when n < 0.
void scale_backward(float* dinp, const float* dout, float scale, int64_t n);

/// Reference of residual_forward. \tparam Real float or double.
template <typename Real>
void residual_forward_reference(Real* out, const Real* a, const Real* b, int64_t n);
/// Reference of residual_backward. \tparam Real float or double.
template <typename Real>
void residual_backward_reference(Real* da, Real* db, const Real* dout, int64_t n);
/// Reference of bias_add_forward. \tparam Real float or double.
template <typename Real>
void bias_add_forward_reference(Real* x, const Real* bias, int64_t N, int64_t C);
/// Reference of bias_add_backward. \tparam Real float or double.
template <typename Real>
void bias_add_backward_reference(Real* dbias, const Real* dout, int64_t N, int64_t C);
/// Reference of scale_forward. \tparam Real float or double.
template <typename Real>
void scale_forward_reference(Real* out, const Real* inp, Real scale, int64_t n);
/// Reference of scale_backward. \tparam Real float or double.
template <typename Real>
void scale_backward_reference(Real* dinp, const Real* dout, Real scale, int64_t n);

}  // namespace vramlab::kernels::cpu
