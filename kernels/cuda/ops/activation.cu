// Activation CUDA kernels: GELU (tanh approximation), SiLU and SwiGLU, forward and backward. One
// thread per element, the CPU reference's formulas in float. GELU and SwiGLU take a storage type:
// inputs widened to f32, each output rounded once (accumulated gradients after the +=).
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // √(2/π)
constexpr float kGeluCubic = 0.044715f;

__device__ std::int64_t element_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

using detail::narrow;
using detail::widen;

template <class A>
__global__ void gelu_forward_kernel(A* out, const A* inp, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float x = widen(inp[i]);
  out[i] = narrow<A>(0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x))));
}

template <class A>
__global__ void gelu_backward_kernel(A* dinp, const A* inp, const A* dout, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float x = widen(inp[i]);
  const float tanh_u = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const float sech2_u = 1.0f - tanh_u * tanh_u;
  const float grad = 0.5f * (1.0f + tanh_u) +
                     0.5f * x * sech2_u * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  dinp[i] = narrow<A>(widen(dinp[i]) + grad * widen(dout[i]));
}

__global__ void silu_forward_kernel(float* out, const float* inp, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i < n) out[i] = inp[i] * sigmoid(inp[i]);
}

__global__ void silu_backward_kernel(float* dinp, const float* inp, const float* dout,
                                     std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float s = sigmoid(inp[i]);
  dinp[i] += s * (1.0f + inp[i] * (1.0f - s)) * dout[i];
}

template <class A>
__global__ void swiglu_forward_kernel(A* out, const A* gate, const A* up, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float g = widen(gate[i]);
  out[i] = narrow<A>(g * sigmoid(g) * widen(up[i]));
}

template <class A>
__global__ void swiglu_backward_kernel(A* dgate, A* dup, const A* dout, const A* gate, const A* up,
                                       std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float g = widen(gate[i]), u = widen(up[i]), dy = widen(dout[i]);
  const float s = sigmoid(g);
  dgate[i] = narrow<A>(widen(dgate[i]) + s * (1.0f + g * (1.0f - s)) * u * dy);
  dup[i] = narrow<A>(widen(dup[i]) + g * s * dy);
}

}  // namespace

template <class A>
void gelu_forward(A* out, const A* inp, int64_t n) {
  cpu::require_non_negative("cuda::gelu_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(gelu_forward_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, n);
}

template <class A>
void gelu_backward(A* dinp, const A* inp, const A* dout, int64_t n) {
  cpu::require_non_negative("cuda::gelu_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(gelu_backward_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dinp, inp, dout, n);
}

void silu_forward(float* out, const float* inp, int64_t n) {
  cpu::require_non_negative("cuda::silu_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(silu_forward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, n);
}

void silu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  cpu::require_non_negative("cuda::silu_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(silu_backward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dinp, inp, dout, n);
}

template <class A>
void swiglu_forward(A* out, const A* gate, const A* up, int64_t n) {
  cpu::require_non_negative("cuda::swiglu_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(swiglu_forward_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, gate, up, n);
}

template <class A>
void swiglu_backward(A* dgate, A* dup, const A* dout, const A* gate, const A* up, int64_t n) {
  cpu::require_non_negative("cuda::swiglu_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(swiglu_backward_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dgate, dup, dout, gate, up, n);
}

#define VRAMLAB_INSTANTIATE(A)                                      \
  template void gelu_forward<A>(A*, const A*, int64_t);             \
  template void gelu_backward<A>(A*, const A*, const A*, int64_t);  \
  template void swiglu_forward<A>(A*, const A*, const A*, int64_t); \
  template void swiglu_backward<A>(A*, A*, const A*, const A*, const A*, int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
