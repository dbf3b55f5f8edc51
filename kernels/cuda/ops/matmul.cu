// The GEMM launcher: out = inp · weightᵀ + bias and its gradients. On a GPU (nvcc) the products
// are cuBLAS SGEMMs on the process's cuBLAS handle (row-major buffers seen as column-major
// transposes, as llm.c does) and the bias goes through the bias-add kernels; under emulation the
// whole op is the CPU kernel (OpenBLAS), since a fiber per multiply-add would take minutes.
// Storage types: on a GPU, bf16/f16 operands go to cublasGemmEx with CUBLAS_COMPUTE_32F (f32
// products and sums, the result rounded once into the output's type; an f32 dweight from 16-bit
// operands is one of GemmEx's supported combinations). The forward's bias is broadcast into out
// first and added by the GEMM (beta = 1), so out is rounded once, not after the GEMM and again
// after the bias. Under emulation 16-bit operands are widened into f32 host scratch (emulated
// device memory is host memory; the scratch is outside any allocator, as the loss-sum scratch),
// the f32 CPU kernel runs, and the outputs are rounded once. Float operands keep their paths.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

#include <type_traits>

#if VRAMLAB_SIMT_EMULATED
#include <vector>

#include "kernels/cpu/matmul.h"
#else
#include <limits>

#include "common/cuda/cublas_handle.h"
#include "common/cuda/cublas_library.h"
#endif

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

void check_sizes(const char* op, std::int64_t N, std::int64_t C, std::int64_t OC) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "C", C);
  cpu::require_non_negative(op, "OC", OC);
}

#if VRAMLAB_SIMT_EMULATED
// One f32 operand of the emulated GEMM: a float buffer itself, or a widened copy of a 16-bit one
// in host scratch (nullptr stays nullptr) that round_into writes back, rounded once.
template <class T>
class F32Operand {
 public:
  F32Operand(const T* x, std::int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      pointer_ = const_cast<float*>(x);
    } else if (x != nullptr) {
      values_.resize(static_cast<std::size_t>(n));  // (n)
      for (std::size_t i = 0; i < values_.size(); i++) values_[i] = detail::widen(x[i]);
      pointer_ = values_.data();
    }
  }
  [[nodiscard]] float* get() const { return pointer_; }
  // A float operand was written in place: nothing to do.
  void round_into(T* x) const {
    if constexpr (!std::is_same_v<T, float>) {
      if (x == nullptr) return;
      for (std::size_t i = 0; i < values_.size(); i++) x[i] = detail::narrow<T>(values_[i]);
    }
  }

 private:
  std::vector<float> values_;
  float* pointer_ = nullptr;
};
#else
// cuBLAS takes int sizes.
int blas_size(const char* op, const char* what, std::int64_t value) {
  cpu::require(value <= std::numeric_limits<int>::max(), op,
               std::string(what) + " = " + std::to_string(value) + " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}

template <class T>
constexpr cudaDataType_t blas_type() {
  if constexpr (std::is_same_v<T, bf16_t>) {
    return CUDA_R_16BF;
  } else if constexpr (std::is_same_v<T, f16_t>) {
    return CUDA_R_16F;
  } else {
    return CUDA_R_32F;
  }
}

// out[row, c] = bias[c]: the C the forward's GemmEx adds with beta = 1 (a copy, exact).
template <class A>
__global__ void bias_broadcast_kernel(A* out, const A* bias, std::int64_t N, std::int64_t OC) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N * OC) out[i] = bias[i % OC];
}
#endif

}  // namespace

template <class A>
void matmul_forward(A* out, const A* inp, const A* weight, const NoDeduce<A>* bias, int64_t N,
                    int64_t C, int64_t OC) {
  check_sizes("cuda::matmul_forward", N, C, OC);
#if VRAMLAB_SIMT_EMULATED
  const F32Operand<A> out32(out, N * OC), inp32(inp, N * C), weight32(weight, OC * C);
  const F32Operand<A> bias32(bias, OC);
  cpu::matmul_forward(out32.get(), inp32.get(), weight32.get(), bias32.get(), N, C, OC);
  out32.round_into(out);
#else
  if (N == 0 || OC == 0) return;
  const char* op = "cuda::matmul_forward";
  const float one = 1.0f, zero = 0.0f;
  const int n = blas_size(op, "N", N), c = blas_size(op, "C", C), oc = blas_size(op, "OC", OC);
  cublasHandle_t handle = cuda_runtime::default_cublas_handle();
  const cuda_runtime::CublasLibrary& blas = cuda_runtime::cublas();
  // out (N, OC) row-major is outᵀ (OC, N) column-major = weight(C, OC)ᵀ · inp(C, N).
  if constexpr (std::is_same_v<A, float>) {
    cuda_runtime::check_cublas(blas.sgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, oc, n, c, &one, weight,
                                          c, inp, c, &zero, out, oc),
                               op);
    if (bias != nullptr) bias_add_forward(out, bias, N, OC);
  } else {
    if (bias != nullptr) {
      VRAMLAB_LAUNCH(bias_broadcast_kernel<A>,
                     detail::blocks_for(N * OC, detail::kElementwiseBlockThreads),
                     detail::kElementwiseBlockThreads, 0, 0)
      (out, bias, N, OC);
    }
    const float* beta = bias != nullptr ? &one : &zero;
    cuda_runtime::check_cublas(
        blas.gemm_ex(handle, CUBLAS_OP_T, CUBLAS_OP_N, oc, n, c, &one, weight, blas_type<A>(), c,
                     inp, blas_type<A>(), c, beta, out, blas_type<A>(), oc, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        op);
  }
#endif
}

template <class A, class G>
void matmul_backward(NoDeduce<A>* dinp, G* dweight, NoDeduce<G>* dbias, const A* dout, const A* inp,
                     const A* weight, int64_t N, int64_t C, int64_t OC) {
  check_sizes("cuda::matmul_backward", N, C, OC);
#if VRAMLAB_SIMT_EMULATED
  const F32Operand<A> dinp32(dinp, N * C), dout32(dout, N * OC), inp32(inp, N * C);
  const F32Operand<A> weight32(weight, OC * C);
  const F32Operand<G> dweight32(dweight, OC * C), dbias32(dbias, OC);
  cpu::matmul_backward(dinp32.get(), dweight32.get(), dbias32.get(), dout32.get(), inp32.get(),
                       weight32.get(), N, C, OC);
  dinp32.round_into(dinp);
  dweight32.round_into(dweight);
  dbias32.round_into(dbias);
#else
  if (N == 0 || C == 0 || OC == 0) return;
  const char* op = "cuda::matmul_backward";
  const int n = blas_size(op, "N", N), c = blas_size(op, "C", C), oc = blas_size(op, "OC", OC);
  const float one = 1.0f;
  cublasHandle_t handle = cuda_runtime::default_cublas_handle();
  const cuda_runtime::CublasLibrary& blas = cuda_runtime::cublas();
  if constexpr (std::is_same_v<A, float> && std::is_same_v<G, float>) {
    if (dinp != nullptr) {
      // dinp (N, C) += dout (N, OC) · weight (OC, C); column-major: dinpᵀ += weightᵀ · doutᵀ.
      cuda_runtime::check_cublas(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, c, n, oc, &one,
                                            weight, c, dout, oc, &one, dinp, c),
                                 op);
    }
    // dweight (OC, C) += doutᵀ · inp; column-major: dweightᵀ (C, OC) += inpᵀ (C, N) · dout (N, OC).
    cuda_runtime::check_cublas(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, c, oc, n, &one, inp, c,
                                          dout, oc, &one, dweight, c),
                               op);
  } else {
    // The same two products with beta = 1: each gradient is read, added to in f32, rounded once.
    if (dinp != nullptr) {
      cuda_runtime::check_cublas(
          blas.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, c, n, oc, &one, weight, blas_type<A>(), c,
                       dout, blas_type<A>(), oc, &one, dinp, blas_type<A>(), c, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          op);
    }
    cuda_runtime::check_cublas(
        blas.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_T, c, oc, n, &one, inp, blas_type<A>(), c, dout,
                     blas_type<A>(), oc, &one, dweight, blas_type<G>(), c, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        op);
  }
  if (dbias != nullptr) bias_add_backward<A, G>(dbias, dout, N, OC);
#endif
}

#define VRAMLAB_INSTANTIATE(A)                                                                  \
  template void matmul_forward<A>(A*, const A*, const A*, const NoDeduce<A>*, int64_t, int64_t, \
                                  int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE
#define VRAMLAB_INSTANTIATE(A, G)                                                         \
  template void matmul_backward<A, G>(NoDeduce<A>*, G*, NoDeduce<G>*, const A*, const A*, \
                                      const A*, int64_t, int64_t, int64_t);
VRAMLAB_FOR_EACH_OP_TYPES(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
