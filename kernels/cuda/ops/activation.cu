// Activation CUDA kernels: GELU (tanh approximation), SiLU and SwiGLU, forward and backward. One
// thread per element, the CPU reference's formulas in float.
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

__global__ void gelu_forward_kernel(float* out, const float* inp, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float x = inp[i];
  out[i] = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout,
                                     std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float x = inp[i];
  const float tanh_u = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const float sech2_u = 1.0f - tanh_u * tanh_u;
  const float grad = 0.5f * (1.0f + tanh_u) +
                     0.5f * x * sech2_u * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  dinp[i] += grad * dout[i];
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

__global__ void swiglu_forward_kernel(float* out, const float* gate, const float* up,
                                      std::int64_t n) {
  const std::int64_t i = element_index();
  if (i < n) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

__global__ void swiglu_backward_kernel(float* dgate, float* dup, const float* dout,
                                       const float* gate, const float* up, std::int64_t n) {
  const std::int64_t i = element_index();
  if (i >= n) return;
  const float s = sigmoid(gate[i]);
  dgate[i] += s * (1.0f + gate[i] * (1.0f - s)) * up[i] * dout[i];
  dup[i] += gate[i] * s * dout[i];
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) {
  cpu::require_non_negative("cuda::gelu_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(gelu_forward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, n);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  cpu::require_non_negative("cuda::gelu_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(gelu_backward_kernel, blocks_for(n, kElementwiseBlockThreads),
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

void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) {
  cpu::require_non_negative("cuda::swiglu_forward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(swiglu_forward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, gate, up, n);
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n) {
  cpu::require_non_negative("cuda::swiglu_backward", "n", n);
  if (n == 0) return;
  VRAMLAB_LAUNCH(swiglu_backward_kernel, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dgate, dup, dout, gate, up, n);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
