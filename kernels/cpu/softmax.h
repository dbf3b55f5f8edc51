/// \file
/// \brief Row-wise softmax, numerically stable (the row maximum is subtracted before exp).
/// The backward accumulates (+=) into dinp.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out[row] = softmax(inp[row]); out, inp (N, C). \throws vramlab::UsageError on a negative size.
void softmax_forward(float* out, const float* inp, int64_t N, int64_t C);
/// dinp += out ⊙ (dout - Σ_c dout·out) per row; dinp, dout, out (the forward output) (N, C).
/// \throws vramlab::UsageError on a negative size.
void softmax_backward(float* dinp, const float* dout, const float* out, int64_t N, int64_t C);

/// Reference of softmax_forward (std::exp). \tparam Real float or double.
template <typename Real>
void softmax_forward_reference(Real* out, const Real* inp, int64_t N, int64_t C);
/// Reference of softmax_backward. \tparam Real float or double.
template <typename Real>
void softmax_backward_reference(Real* dinp, const Real* dout, const Real* out, int64_t N,
                                int64_t C);

}  // namespace vramlab::kernels::cpu
