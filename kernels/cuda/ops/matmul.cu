// The GEMM launcher: out = inp · weightᵀ + bias and its gradients. On a GPU (nvcc) the products
// are cuBLAS SGEMMs on the process's cuBLAS handle (row-major buffers seen as column-major
// transposes, as llm.c does) and the bias goes through the bias-add kernels; under emulation the
// whole op is the CPU kernel (OpenBLAS), since a fiber per multiply-add would take minutes.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

#if VRAMLAB_SIMT_EMULATED
#include "kernels/cpu/matmul.h"
#else
#include <limits>

#include "common/cuda/cublas_handle.h"
#endif

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

void check_sizes(const char* op, std::int64_t N, std::int64_t C, std::int64_t OC) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "C", C);
  cpu::require_non_negative(op, "OC", OC);
}

#if !VRAMLAB_SIMT_EMULATED
// cuBLAS takes int sizes.
int blas_size(const char* op, const char* what, std::int64_t value) {
  cpu::require(value <= std::numeric_limits<int>::max(), op,
               std::string(what) + " = " + std::to_string(value) + " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}
#endif

}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC) {
  check_sizes("cuda::matmul_forward", N, C, OC);
#if VRAMLAB_SIMT_EMULATED
  cpu::matmul_forward(out, inp, weight, bias, N, C, OC);
#else
  if (N == 0 || OC == 0) return;
  const char* op = "cuda::matmul_forward";
  const float one = 1.0f, zero = 0.0f;
  // out (N, OC) row-major is outᵀ (OC, N) column-major = weight(C, OC)ᵀ · inp(C, N).
  cuda_runtime::check_cublas(
      cublasSgemm(cuda_runtime::default_cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N,
                  blas_size(op, "OC", OC), blas_size(op, "N", N), blas_size(op, "C", C), &one,
                  weight, blas_size(op, "C", C), inp, blas_size(op, "C", C), &zero, out,
                  blas_size(op, "OC", OC)),
      op);
  if (bias != nullptr) bias_add_forward(out, bias, N, OC);
#endif
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int64_t C, int64_t OC) {
  check_sizes("cuda::matmul_backward", N, C, OC);
#if VRAMLAB_SIMT_EMULATED
  cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
#else
  if (N == 0 || C == 0 || OC == 0) return;
  const char* op = "cuda::matmul_backward";
  const int n = blas_size(op, "N", N), c = blas_size(op, "C", C), oc = blas_size(op, "OC", OC);
  const float one = 1.0f;
  cublasHandle_t handle = cuda_runtime::default_cublas_handle();
  if (dinp != nullptr) {
    // dinp (N, C) += dout (N, OC) · weight (OC, C); column-major: dinpᵀ += weightᵀ · doutᵀ.
    cuda_runtime::check_cublas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, c, n, oc, &one, weight,
                                           c, dout, oc, &one, dinp, c),
                               op);
  }
  // dweight (OC, C) += doutᵀ · inp; column-major: dweightᵀ (C, OC) += inpᵀ (C, N) · dout (N, OC).
  cuda_runtime::check_cublas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, c, oc, n, &one, inp, c,
                                         dout, oc, &one, dweight, c),
                             op);
  if (dbias != nullptr) bias_add_backward(dbias, dout, N, OC);
#endif
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
