// Elementwise CUDA kernels: residual add, bias add, scale (forward and backward). One thread per
// element (v1 only: these are memory-bound one-liners with nothing to share between threads).
// The bias gradient is one thread per column summing rows in order, so it is deterministic.
// residual_forward and bias_add_backward take storage types (the GEMMs' bias gradient is G).
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

__device__ std::int64_t global_thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

using detail::narrow;
using detail::widen;

template <class A>
__global__ void residual_forward_kernel(A* out, const A* a, const A* b, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) out[i] = narrow<A>(widen(a[i]) + widen(b[i]));
}

__global__ void residual_backward_kernel(float* da, float* db, const float* dout, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

__global__ void bias_add_forward_kernel(float* x, const float* bias, std::int64_t N,
                                        std::int64_t C) {
  const std::int64_t i = global_thread_index();
  if (i < N * C) x[i] += bias[i % C];
}

template <class A, class G>
__global__ void bias_add_backward_kernel(G* dbias, const A* dout, std::int64_t N, std::int64_t C) {
  const std::int64_t c = global_thread_index();
  if (c >= C) return;
  float column_sum = 0.0f;
  for (std::int64_t row = 0; row < N; row++) column_sum += widen(dout[row * C + c]);
  dbias[c] = narrow<G>(widen(dbias[c]) + column_sum);
}

__global__ void scale_forward_kernel(float* out, const float* inp, float scale, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) out[i] = scale * inp[i];
}

__global__ void scale_backward_kernel(float* dinp, const float* dout, float scale, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) dinp[i] += scale * dout[i];
}

}  // namespace

template <class A>
void residual_forward(A* out, const A* a, const A* b, int64_t n) {
  cpu::require_non_negative("cuda::residual_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(residual_forward_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, a, b, n);
}

void residual_backward(float* da, float* db, const float* dout, int64_t n) {
  cpu::require_non_negative("cuda::residual_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(residual_backward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (da, db, dout, n);
}

void bias_add_forward(float* x, const float* bias, int64_t N, int64_t C) {
  cpu::require_non_negative("cuda::bias_add_forward", "N", N);
  cpu::require_non_negative("cuda::bias_add_forward", "C", C);
  if (N * C == 0) return;
  VRAMLAB_LAUNCH(bias_add_forward_kernel, blocks_for(N * C, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (x, bias, N, C);
}

template <class A, class G>
void bias_add_backward(G* dbias, const A* dout, int64_t N, int64_t C) {
  cpu::require_non_negative("cuda::bias_add_backward", "N", N);
  cpu::require_non_negative("cuda::bias_add_backward", "C", C);
  if (C == 0) return;
  auto* const kernel = bias_add_backward_kernel<A, G>;
  VRAMLAB_LAUNCH(kernel, blocks_for(C, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
  (dbias, dout, N, C);
}

void scale_forward(float* out, const float* inp, float scale, int64_t n) {
  cpu::require_non_negative("cuda::scale_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(scale_forward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, scale, n);
}

void scale_backward(float* dinp, const float* dout, float scale, int64_t n) {
  cpu::require_non_negative("cuda::scale_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(scale_backward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dinp, dout, scale, n);
}

#define VRAMLAB_INSTANTIATE(A) template void residual_forward<A>(A*, const A*, const A*, int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE
#define VRAMLAB_INSTANTIATE(A, G) \
  template void bias_add_backward<A, G>(G*, const A*, int64_t, int64_t);
VRAMLAB_FOR_EACH_OP_TYPES(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

const char* kernel_version_name(KernelVersion version) {
  return version == KernelVersion::v1 ? "v1" : "v2";
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
