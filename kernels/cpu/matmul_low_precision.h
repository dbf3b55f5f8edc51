/// \file
/// \brief The linear-layer matmul with bf16 or f16 STORAGE of the input and weight (mixed
/// precision): products and sums in f32, outputs and gradients in f32.
///
/// bf16 goes through OpenBLAS cblas_sbgemm when the linked OpenBLAS exports it
/// (VRAMLAB_HAVE_CBLAS_SBGEMM, found at configure time; Debian's 0.3.21 does not); otherwise, and
/// always for f16, the operands are widened to f32 (exactly) in a scratch buffer and
/// multiplied with cblas_sgemm. Either way the result equals the f32 matmul of the rounded operands
/// up to f32 summation error. Backward kernels accumulate (+=) like matmul_backward.
#pragma once

#include <cstdint>

#include "common/dtype/convert.h"

namespace vramlab::kernels::cpu {

/// out = inp · weightᵀ + bias with bf16 operands: out (N, OC) f32, written; inp (N, C) bf16;
/// weight (OC, C) bf16; bias (OC) f32 or nullptr. \throws vramlab::UsageError on a bad size.
void matmul_forward(float* out, const bf16_t* inp, const bf16_t* weight, const float* bias,
                    int64_t N, int64_t C, int64_t OC);
/// The f16 overload: shapes as the bf16 one, inp and weight f16.
/// \throws vramlab::UsageError on a bad size.
void matmul_forward(float* out, const f16_t* inp, const f16_t* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC);

/// Gradients of the bf16-storage matmul, accumulated in f32: dinp (N, C) f32 or nullptr,
/// dweight (OC, C) f32, dbias (OC) f32 or nullptr, dout (N, OC) f32, inp (N, C) bf16,
/// weight (OC, C) bf16. \throws vramlab::UsageError on a bad size.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const bf16_t* inp, const bf16_t* weight, int64_t N, int64_t C, int64_t OC);
/// The f16 overload: shapes as the bf16 one, inp and weight f16.
/// \throws vramlab::UsageError on a bad size.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const f16_t* inp,
                     const f16_t* weight, int64_t N, int64_t C, int64_t OC);

/// Widens bf16 values to f32 (exact), in parallel; out, inp (n).
/// \throws vramlab::UsageError when n < 0.
void widen_to_f32(float* out, const bf16_t* inp, int64_t n);
/// Widens f16 values to f32 (exact), in parallel; out, inp (n).
/// \throws vramlab::UsageError when n < 0.
void widen_to_f32(float* out, const f16_t* inp, int64_t n);

}  // namespace vramlab::kernels::cpu
