// Row softmax CUDA kernels, forward and backward.
//   v1: the CPU loop, one thread per row (three passes: max, sum, write).
//   v2: one warp per row; max and sum by butterfly shuffles, the row read from global memory with
//       32 lanes side by side (coalesced) instead of one thread striding through it.

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;
using detail::warp_max;
using detail::warp_sum;

constexpr unsigned kRowsPerBlock = kRowBlockThreads / 32;

__global__ void softmax_forward_v1_kernel(float* out, const float* inp, std::int64_t N,
                                          std::int64_t C) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* x = inp + row * C;  // (C)
  float max_value = -INFINITY;
  for (std::int64_t c = 0; c < C; c++) max_value = fmaxf(max_value, x[c]);
  float total = 0.0f;
  for (std::int64_t c = 0; c < C; c++) total += expf(x[c] - max_value);
  for (std::int64_t c = 0; c < C; c++) out[row * C + c] = expf(x[c] - max_value) / total;
}

__global__ void softmax_forward_v2_kernel(float* out, const float* inp, std::int64_t N,
                                          std::int64_t C) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // the whole warp leaves together
  const unsigned lane = threadIdx.x % 32;
  const float* x = inp + row * C;  // (C)
  float max_value = -INFINITY;
  for (std::int64_t c = lane; c < C; c += 32) max_value = fmaxf(max_value, x[c]);
  max_value = warp_max(max_value);
  float total = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) total += expf(x[c] - max_value);
  const float inverse_total = 1.0f / warp_sum(total);
  for (std::int64_t c = lane; c < C; c += 32) {
    out[row * C + c] = expf(x[c] - max_value) * inverse_total;
  }
}

__global__ void softmax_backward_v1_kernel(float* dinp, const float* dout, const float* out,
                                           std::int64_t N, std::int64_t C) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= N) return;
  float dot = 0.0f;
  for (std::int64_t c = 0; c < C; c++) dot += dout[row * C + c] * out[row * C + c];
  for (std::int64_t c = 0; c < C; c++) {
    dinp[row * C + c] += out[row * C + c] * (dout[row * C + c] - dot);
  }
}

__global__ void softmax_backward_v2_kernel(float* dinp, const float* dout, const float* out,
                                           std::int64_t N, std::int64_t C) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  float dot = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) dot += dout[row * C + c] * out[row * C + c];
  dot = warp_sum(dot);
  for (std::int64_t c = lane; c < C; c += 32) {
    dinp[row * C + c] += out[row * C + c] * (dout[row * C + c] - dot);
  }
}

}  // namespace

void softmax_forward(float* out, const float* inp, int64_t N, int64_t C, KernelVersion version) {
  cpu::require_non_negative("cuda::softmax_forward", "N", N);
  cpu::require_non_negative("cuda::softmax_forward", "C", C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(softmax_forward_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (out, inp, N, C);
  } else {
    VRAMLAB_LAUNCH(softmax_forward_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads, 0, 0)
    (out, inp, N, C);
  }
}

void softmax_backward(float* dinp, const float* dout, const float* out, int64_t N, int64_t C,
                      KernelVersion version) {
  cpu::require_non_negative("cuda::softmax_backward", "N", N);
  cpu::require_non_negative("cuda::softmax_backward", "C", C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(softmax_backward_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dinp, dout, out, N, C);
  } else {
    VRAMLAB_LAUNCH(softmax_backward_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads, 0, 0)
    (dinp, dout, out, N, C);
  }
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
