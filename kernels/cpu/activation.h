/// \file
/// \brief Activations, forward and backward: GELU (tanh approximation, GPT-2), SiLU, and SwiGLU
/// (silu(gate) · up, Llama's MLP). Backward kernels accumulate (+=) into their gradient outputs.
///
/// GELU(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), written in the fast path as
/// x·sigmoid(2u) (the same function, no cancellation near tanh = -1) with a vectorizable exp.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = GELU_tanh(inp); out, inp (n). \throws vramlab::UsageError when n < 0.
void gelu_forward(float* out, const float* inp, int64_t n);
/// dinp += GELU'(inp) · dout; dinp, inp (the forward input), dout (n).
/// \throws vramlab::UsageError when n < 0.
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);

/// out = inp · sigmoid(inp); out, inp (n). \throws vramlab::UsageError when n < 0.
void silu_forward(float* out, const float* inp, int64_t n);
/// dinp += SiLU'(inp) · dout; dinp, inp, dout (n). \throws vramlab::UsageError when n < 0.
void silu_backward(float* dinp, const float* inp, const float* dout, int64_t n);

/// out = silu(gate) · up; out, gate, up (n), e.g. n = B·T·hidden.
/// \throws vramlab::UsageError when n < 0.
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n);
/// dgate += SiLU'(gate) · up · dout, dup += silu(gate) · dout; every pointer (n).
/// \throws vramlab::UsageError when n < 0.
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n);

/// gelu_forward on storage A (kernels/cpu/storage.h): computed in f32, out rounded once.
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
void gelu_forward(A* out, const A* inp, int64_t n);
/// gelu_backward on storage A: dinp = round_A(widen(dinp) + GELU'(inp) · dout).
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
void gelu_backward(A* dinp, const A* inp, const A* dout, int64_t n);
/// swiglu_forward on storage A: computed in f32, out rounded once.
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
void swiglu_forward(A* out, const A* gate, const A* up, int64_t n);
/// swiglu_backward on storage A: each gradient g = round_A(widen(g) + its f32 contribution).
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
void swiglu_backward(A* dgate, A* dup, const A* dout, const A* gate, const A* up, int64_t n);

/// Reference of gelu_forward (std::tanh). \tparam Real float or double.
template <typename Real>
void gelu_forward_reference(Real* out, const Real* inp, int64_t n);
/// Reference of gelu_backward. \tparam Real float or double.
template <typename Real>
void gelu_backward_reference(Real* dinp, const Real* inp, const Real* dout, int64_t n);
/// Reference of silu_forward (std::exp). \tparam Real float or double.
template <typename Real>
void silu_forward_reference(Real* out, const Real* inp, int64_t n);
/// Reference of silu_backward. \tparam Real float or double.
template <typename Real>
void silu_backward_reference(Real* dinp, const Real* inp, const Real* dout, int64_t n);
/// Reference of swiglu_forward. \tparam Real float or double.
template <typename Real>
void swiglu_forward_reference(Real* out, const Real* gate, const Real* up, int64_t n);
/// Reference of swiglu_backward. \tparam Real float or double.
template <typename Real>
void swiglu_backward_reference(Real* dgate, Real* dup, const Real* dout, const Real* gate,
                               const Real* up, int64_t n);

}  // namespace vramlab::kernels::cpu
