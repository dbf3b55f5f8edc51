/// \file
/// \brief Dropout whose mask is a pure function of (seed, offset + element index): element i is
/// kept when dropout_uniform(seed, offset + i) >= p (common/dtype/dropout_mask.h) and a kept
/// element is scaled by 1 / (1 − p), as torch.nn.functional.dropout in training mode. Nothing but
/// (p, seed, offset) has to be kept for the backward or for a recomputed forward (gradient
/// checkpointing): both regenerate the same mask bitwise, on any backend.
///
/// Unlike the other backward kernels, dropout_backward WRITES dinp (it may alias dout): the
/// runtime applies it in place to the gradient flowing back through the dropout.
#pragma once

#include <cstdint>
#include <sstream>

#include "kernels/cpu/kernel_checks.h"

namespace vramlab::kernels::cpu {

/// Dropout inside the fused attention ops, applied to the probabilities that multiply v.
/// Score (b, h, t, s) uses mask element offset + ((b·H + h)·T + t)·T + s. The default, p = 0,
/// is no dropout (bitwise the result without it).
struct AttentionDropout {
  float p = 0.0f;       ///< drop probability, in [0, 1)
  uint64_t seed = 0;    ///< the mask's stream (dropout_uniform's seed)
  uint64_t offset = 0;  ///< added to every element index, e.g. to give each layer its own mask
};

/// out[i] = keep(i) ? inp[i] / (1 − p) : 0 with keep(i) = dropout_uniform(seed, offset + i) >= p;
/// out, inp (n), may alias. p = 0 copies inp exactly.
/// \throws vramlab::InternalError when n < 0 or p is outside [0, 1).
void dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                     uint64_t offset);
/// dinp[i] = keep(i) ? dout[i] / (1 − p) : 0 with dropout_forward's mask for the same
/// (p, seed, offset): WRITTEN, not accumulated; dinp, dout (n), may alias.
/// \throws vramlab::InternalError as dropout_forward.
void dropout_backward(float* dinp, const float* dout, int64_t n, float p, uint64_t seed,
                      uint64_t offset);

/// dropout_forward on storage A (kernels/cpu/storage.h): out = round_A(widen(inp) · keep / (1 −
/// p)); p = 0 copies the bits. \tparam A float, bf16_t or f16_t. \throws as dropout_forward.
template <typename A>
void dropout_forward(A* out, const A* inp, int64_t n, float p, uint64_t seed, uint64_t offset);
/// dropout_backward on storage A (written, not accumulated). \tparam A float, bf16_t or f16_t.
/// \throws as dropout_backward.
template <typename A>
void dropout_backward(A* dinp, const A* dout, int64_t n, float p, uint64_t seed, uint64_t offset);
/// Reference of dropout_forward (the scale 1 / (1 − p) computed in Real). \tparam Real float or
/// double.
template <typename Real>
void dropout_forward_reference(Real* out, const Real* inp, int64_t n, float p, uint64_t seed,
                               uint64_t offset);
/// Reference of dropout_backward. \tparam Real float or double.
template <typename Real>
void dropout_backward_reference(Real* dinp, const Real* dout, int64_t n, float p, uint64_t seed,
                                uint64_t offset);

/// Throws InternalError "OP: dropout probability p = P must be in [0, 1)" unless 0 <= p < 1
/// (NaN included). Inline: the nvcc-built CUDA kernels check with it and do not link kernels/cpu.
/// \param op the calling kernel's name. \param p the probability.
/// \throws vramlab::InternalError when \p p is outside [0, 1).
inline void require_dropout_probability(const char* op, float p) {
  if (p >= 0.0f && p < 1.0f) return;
  std::ostringstream message;
  message.precision(9);
  message << "dropout probability p = " << p << " must be in [0, 1)";
  require(false, op, message.str());
}

}  // namespace vramlab::kernels::cpu
