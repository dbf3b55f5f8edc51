/// \file
/// \brief Rotary position embedding (RoPE, Su et al. 2021) over (B, T, H, D), forward and backward.
///
/// Each adjacent pair (x[2i], x[2i+1]) of a head vector at position p is rotated by the angle
/// p · θ^(-2i/D). Angles are computed in double for both paths (a float p·freq loses about 4e-4
/// rad at p = 4096). The backward rotates by the opposite angle (the transpose of a rotation).
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = rotate(inp); out, inp (B, T, H, D), D even. \p out may alias \p inp (each pair is read
/// before it is written). \p theta is the base (10000 in Llama 2, 500000 in Llama 3);
/// \p position_offset the position of t = 0 (for generation with a cache).
/// \throws vramlab::UsageError on a negative size, an odd D, or theta <= 0.
void rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                  double theta = 10000.0, int64_t position_offset = 0);
/// dinp += rotate⁻¹(dout); dinp, dout (B, T, H, D); \p theta and \p position_offset as
/// rope_forward. \throws vramlab::UsageError as rope_forward.
void rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                   double theta = 10000.0, int64_t position_offset = 0);

/// rope_forward on storage A (kernels/cpu/storage.h): rotated in f32, rounded once.
/// \tparam A float, bf16_t or f16_t. \throws as rope_forward.
template <typename A>
void rope_forward(A* out, const A* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                  double theta = 10000.0, int64_t position_offset = 0);
/// rope_backward on storage A: dinp = round_A(widen(dinp) + rotate⁻¹(dout)).
/// \tparam A float, bf16_t or f16_t. \throws as rope_backward.
template <typename A>
void rope_backward(A* dinp, const A* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                   double theta = 10000.0, int64_t position_offset = 0);
/// Reference of rope_forward. \tparam Real float or double.
template <typename Real>
void rope_forward_reference(Real* out, const Real* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                            double theta = 10000.0, int64_t position_offset = 0);
/// Reference of rope_backward. \tparam Real float or double.
template <typename Real>
void rope_backward_reference(Real* dinp, const Real* dout, int64_t B, int64_t T, int64_t H,
                             int64_t D, double theta = 10000.0, int64_t position_offset = 0);

}  // namespace vramlab::kernels::cpu
