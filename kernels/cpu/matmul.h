/// \file
/// \brief Matrix multiply of a linear layer, forward and backward: out = inp · weightᵀ + bias.
///
/// The fast path calls OpenBLAS cblas_sgemm (row-major, transposes passed as flags), the reference
/// is three plain loops. Like every backward in this folder, matmul_backward ACCUMULATES (+=) into
/// its gradient outputs; the caller zeroes them once per step.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out = inp · weightᵀ + bias (fast path: one cblas_sgemm plus the bias in the same pass);
/// N = B·T rows.
/// - out    (N, OC) written.
/// - inp    (N, C)
/// - weight (OC, C), PyTorch's nn.Linear layout.
/// - bias   (OC) or nullptr for no bias.
/// \throws vramlab::UsageError on a negative size or one OpenBLAS's 32-bit indices cannot hold.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC);

/// Gradients of matmul_forward, accumulated: dinp += dout · weight, dweight += doutᵀ · inp,
/// dbias += Σ_rows dout.
/// - dinp    (N, C) accumulated, or nullptr to skip (e.g. the first layer's input).
/// - dweight (OC, C) accumulated.
/// - dbias   (OC) accumulated, or nullptr when the layer has no bias.
/// - dout    (N, OC)
/// - inp     (N, C)
/// - weight  (OC, C)
/// \throws vramlab::UsageError on a negative or too large size.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int64_t C, int64_t OC);

/// Readable reference of matmul_forward (plain loops, accumulation in Real).
/// \tparam Real float or double. Parameters as matmul_forward.
template <typename Real>
void matmul_forward_reference(Real* out, const Real* inp, const Real* weight, const Real* bias,
                              int64_t N, int64_t C, int64_t OC);

/// Readable reference of matmul_backward. \tparam Real float or double. Parameters as
/// matmul_backward.
template <typename Real>
void matmul_backward_reference(Real* dinp, Real* dweight, Real* dbias, const Real* dout,
                               const Real* inp, const Real* weight, int64_t N, int64_t C,
                               int64_t OC);

/// C = alpha · op(A) · op(B) + beta · C in row-major storage, a thin checked wrapper of
/// cblas_sgemm for the other kernels and the benchmarks.
/// \param transpose_a use Aᵀ, \param transpose_b use Bᵀ.
/// \param M rows of op(A) and C, \param N columns of op(B) and C, \param K inner dimension.
/// \param alpha scale of the product.
/// \param A (M, K), or (K, M) when transposed; row stride lda.
/// \param lda row stride of A in elements.
/// \param B (K, N), or (N, K) when transposed; row stride ldb.
/// \param ldb row stride of B in elements.
/// \param beta scale of the old C (0: C is only written).
/// \param C (M, N) with row stride ldc.
/// \param ldc row stride of C in elements.
/// \throws vramlab::UsageError on a negative size, one above 2^31 - 1, or a leading dimension
/// shorter than the row it strides over.
void sgemm(bool transpose_a, bool transpose_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc);

}  // namespace vramlab::kernels::cpu
