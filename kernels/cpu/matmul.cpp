// Linear-layer matmul: OpenBLAS for the fast path, three loops for the reference.
#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <climits>

#include "kernels/cpu/kernel_checks.h"

namespace vramlab::kernels::cpu {
namespace {

void check_sizes(const char* op, int64_t N, int64_t C, int64_t OC) {
  require_non_negative(op, "N", N);
  require_non_negative(op, "C", C);
  require_non_negative(op, "OC", OC);
}

blasint to_blas(const char* what, int64_t value) {
  require_non_negative("sgemm", what, value);
  require(value <= INT_MAX, "sgemm",
          std::string(what) + " = " + std::to_string(value) + " exceeds OpenBLAS's 32-bit index");
  return static_cast<blasint>(value);
}

}  // namespace

void sgemm(bool transpose_a, bool transpose_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc) {
  const blasint m = to_blas("M", M), n = to_blas("N", N), k = to_blas("K", K);
  const blasint a_stride = to_blas("lda", lda), b_stride = to_blas("ldb", ldb);
  const blasint c_stride = to_blas("ldc", ldc);
  // Row-major leading dimensions must cover a stored row (BLAS would print an error and return).
  // Empty operands never reach BLAS, so a 0 leading dimension is fine for them.
  const int64_t a_columns = transpose_a ? M : K, b_columns = transpose_b ? K : N;
  require(lda >= a_columns, "sgemm",
          "lda = " + std::to_string(lda) + " is below A's row length " + std::to_string(a_columns));
  require(ldb >= b_columns, "sgemm",
          "ldb = " + std::to_string(ldb) + " is below B's row length " + std::to_string(b_columns));
  require(ldc >= N, "sgemm",
          "ldc = " + std::to_string(ldc) + " is below C's row length " + std::to_string(N));
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves C untouched only when beta == 1; honour beta explicitly for an empty product.
    for (int64_t i = 0; i < M; i++) {
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, a_stride, B, b_stride,
              beta, C, c_stride);
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC) {
  check_sizes("matmul_forward", N, C, OC);
  if (N == 0 || OC == 0) return;
  if (bias != nullptr) {
    // Start from the broadcast bias and let sgemm add the product (beta = 1): one pass fewer.
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < N; row++) {
      float* out_row = out + row * OC;
#pragma omp simd
      for (int64_t o = 0; o < OC; o++) out_row[o] = bias[o];
    }
  }
  sgemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, bias != nullptr ? 1.0f : 0.0f, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int64_t C, int64_t OC) {
  check_sizes("matmul_backward", N, C, OC);
  if (dinp != nullptr) sgemm(false, false, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  sgemm(true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias != nullptr && N > 0) {
    // Each thread owns a slice of output features and sums the rows in order: deterministic.
#pragma omp parallel for schedule(static)
    for (int64_t block = 0; block < (OC + 63) / 64; block++) {
      const int64_t begin = block * 64;
      const int64_t end = begin + 64 < OC ? begin + 64 : OC;
      float sums[64] = {};
      for (int64_t row = 0; row < N; row++) {
        const float* dout_row = dout + row * OC;
#pragma omp simd
        for (int64_t o = begin; o < end; o++) sums[o - begin] += dout_row[o];
      }
      for (int64_t o = begin; o < end; o++) dbias[o] += sums[o - begin];
    }
  }
}

template <typename Real>
void matmul_forward_reference(Real* out, const Real* inp, const Real* weight, const Real* bias,
                              int64_t N, int64_t C, int64_t OC) {
  check_sizes("matmul_forward_reference", N, C, OC);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t o = 0; o < OC; o++) {
      Real sum = bias != nullptr ? bias[o] : Real(0);
      for (int64_t c = 0; c < C; c++) sum += inp[row * C + c] * weight[o * C + c];
      out[row * OC + o] = sum;
    }
  }
}

template <typename Real>
void matmul_backward_reference(Real* dinp, Real* dweight, Real* dbias, const Real* dout,
                               const Real* inp, const Real* weight, int64_t N, int64_t C,
                               int64_t OC) {
  check_sizes("matmul_backward_reference", N, C, OC);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t o = 0; o < OC; o++) {
      const Real grad = dout[row * OC + o];
      for (int64_t c = 0; c < C; c++) {
        if (dinp != nullptr) dinp[row * C + c] += grad * weight[o * C + c];
        dweight[o * C + c] += grad * inp[row * C + c];
      }
      if (dbias != nullptr) dbias[o] += grad;
    }
  }
}

template void matmul_forward_reference<float>(float*, const float*, const float*, const float*,
                                              int64_t, int64_t, int64_t);
template void matmul_forward_reference<double>(double*, const double*, const double*, const double*,
                                               int64_t, int64_t, int64_t);
template void matmul_backward_reference<float>(float*, float*, float*, const float*, const float*,
                                               const float*, int64_t, int64_t, int64_t);
template void matmul_backward_reference<double>(double*, double*, double*, const double*,
                                                const double*, const double*, int64_t, int64_t,
                                                int64_t);

}  // namespace vramlab::kernels::cpu
