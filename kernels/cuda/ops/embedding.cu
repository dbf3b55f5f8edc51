// Token + position embedding CUDA kernels. Forward: one thread per output element. Backward is
// deterministic without atomics: for dwte one thread per channel walks every position in order
// (positions with the same token then add in the CPU's order); for dwpe one thread per (t, c)
// sums the batch in order. An out-of-range token stops the kernel with a device error.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

__device__ std::int64_t checked_token(const std::int32_t* tokens, std::int64_t position,
                                      std::int64_t V) {
  const std::int64_t token = tokens[position];
  if (token < 0 || token >= V) VRAMLAB_DEVICE_FAIL("embedding token outside [0, V)");
  return token;
}

__global__ void embedding_forward_kernel(float* out, const std::int32_t* tokens, const float* wte,
                                         const float* wpe, std::int64_t B, std::int64_t T,
                                         std::int64_t C, std::int64_t V) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= B * T * C) return;
  const std::int64_t position = index / C, c = index % C, t = position % T;
  const std::int64_t token = checked_token(tokens, position, V);
  out[index] = wte[token * C + c] + (wpe != nullptr ? wpe[t * C + c] : 0.0f);
}

__global__ void embedding_backward_wte_kernel(float* dwte, const float* dout,
                                              const std::int32_t* tokens, std::int64_t positions,
                                              std::int64_t C, std::int64_t V) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (std::int64_t position = 0; position < positions; position++) {
    dwte[checked_token(tokens, position, V) * C + c] += dout[position * C + c];
  }
}

__global__ void embedding_backward_wpe_kernel(float* dwpe, const float* dout, std::int64_t B,
                                              std::int64_t T, std::int64_t C) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= T * C) return;
  float total = 0.0f;
  for (std::int64_t b = 0; b < B; b++) total += dout[b * T * C + index];
  dwpe[index] += total;
}

void check_sizes(const char* op, std::int64_t B, std::int64_t T, std::int64_t C, std::int64_t V) {
  cpu::require_non_negative(op, "B", B);
  cpu::require_non_negative(op, "T", T);
  cpu::require_non_negative(op, "C", C);
  cpu::require_non_negative(op, "V", V);
}

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V) {
  check_sizes("cuda::embedding_forward", B, T, C, V);
  if (B * T * C == 0) return;
  VRAMLAB_LAUNCH(embedding_forward_kernel, blocks_for(B * T * C, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, tokens, wte, wpe, B, T, C, V);
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int64_t B, int64_t T, int64_t C, int64_t V) {
  check_sizes("cuda::embedding_backward", B, T, C, V);
  if (B * T * C == 0) return;
  VRAMLAB_LAUNCH(embedding_backward_wte_kernel, blocks_for(C, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dwte, dout, tokens, B * T, C, V);
  if (dwpe != nullptr) {
    VRAMLAB_LAUNCH(embedding_backward_wpe_kernel, blocks_for(T * C, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dwpe, dout, B, T, C);
  }
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
