/// \file
/// \brief Token (+ optional learned position) embedding lookup, forward and backward.
///
/// The backward is a scatter-add into the token table. The fast path gives each thread a block of
/// channels and walks the tokens in order, so every element is summed in the same order as the
/// reference: results are bitwise identical to it and independent of the thread count.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out[b, t] = wte[tokens[b, t]] (+ wpe[t]).
/// - out    (B, T, C) written.
/// - tokens (B, T) ids in [0, V).
/// - wte    (V, C) token embeddings.
/// - wpe    (T_max >= T, C) position embeddings (GPT-2), or nullptr (Llama uses RoPE).
/// \throws vramlab::UsageError on a negative size or a token outside [0, V).
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V);
/// dwte[tokens[b, t]] += dout[b, t] and dwpe[t] += Σ_b dout[b, t].
/// - dwte   (V, C) accumulated.
/// - dwpe   (T_max >= T, C) accumulated, or nullptr.
/// - dout   (B, T, C)
/// - tokens (B, T)
/// \throws vramlab::UsageError on a negative size or a token outside [0, V).
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int64_t B, int64_t T, int64_t C, int64_t V);

/// embedding_forward on storage A (kernels/cpu/storage.h): out = round_A(wte + wpe).
/// \tparam A float, bf16_t or f16_t. \throws as embedding_forward.
template <typename A>
void embedding_forward(A* out, const int32_t* tokens, const A* wte, const A* wpe, int64_t B,
                       int64_t T, int64_t C, int64_t V);
/// embedding_backward with dout in A and dwte, dwpe in G: every row of dwte and dwpe is
/// round_G(widen(row) + Σ dout rows), summed in f32 (a token seen k times is rounded once).
/// \tparam A float, bf16_t or f16_t. \tparam G float or A. \throws as embedding_backward.
template <typename A, typename G>
void embedding_backward(G* dwte, G* dwpe, const A* dout, const int32_t* tokens, int64_t B,
                        int64_t T, int64_t C, int64_t V);
/// Reference of embedding_forward. \tparam Real float or double.
template <typename Real>
void embedding_forward_reference(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe,
                                 int64_t B, int64_t T, int64_t C, int64_t V);
/// Reference of embedding_backward. \tparam Real float or double.
template <typename Real>
void embedding_backward_reference(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens,
                                  int64_t B, int64_t T, int64_t C, int64_t V);

}  // namespace vramlab::kernels::cpu
