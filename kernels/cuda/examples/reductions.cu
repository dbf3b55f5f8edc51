// Block reductions two ways: a shared-memory tree and warp shuffles. Both work for any blockDim,
// including sizes that are not a multiple of 32 and blocks smaller than a warp.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

// The smallest power of two >= v (v >= 1).
__device__ unsigned next_power_of_two(unsigned v) {
  unsigned p = 1;
  while (p < v) p <<= 1;
  return p;
}

__global__ void block_sum_shared_kernel(const int* x, int* block_sums, std::size_t n) {
  VRAMLAB_DYNAMIC_SHARED(int, partial);  // (blockDim.x)
  const unsigned tid = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + tid;
  partial[tid] = i < n ? x[i] : 0;
  __syncthreads();
  for (unsigned stride = next_power_of_two(blockDim.x) / 2; stride > 0; stride /= 2) {
    if (tid < stride && tid + stride < blockDim.x) partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

// Sum over the first `lanes` lanes of the calling warp; every one of them must call it.
__device__ float warp_sum(float v, unsigned lanes) {
  const unsigned lane = threadIdx.x % warpSize;
  const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(mask, v, offset);
    if (lane + offset < lanes) v += other;
  }
  return v;
}

__global__ void block_sum_warp_kernel(const float* x, float* block_sums, std::size_t n) {
  VRAMLAB_SHARED(float, warp_sums, [32]);  // (warps per block)
  const unsigned tid = threadIdx.x;
  const unsigned warp = tid / warpSize;
  const unsigned warps = (blockDim.x + warpSize - 1) / warpSize;
  const unsigned lanes_in_my_warp = min(32u, blockDim.x - warp * warpSize);
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + tid;
  float v = warp_sum(i < n ? x[i] : 0.0f, lanes_in_my_warp);
  if (tid % warpSize == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_sum(tid < warps ? warp_sums[tid] : 0.0f, lanes_in_my_warp);
    if (tid == 0) block_sums[blockIdx.x] = v;
  }
}

}  // namespace

void block_sum_shared(const int* x, int* block_sums, std::size_t n, unsigned block_threads) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(block_sum_shared_kernel, dim3(blocks), dim3(block_threads),
                 block_threads * sizeof(int), 0)
  (x, block_sums, n);
}

void block_sum_warp(const float* x, float* block_sums, std::size_t n, unsigned block_threads) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(block_sum_warp_kernel, dim3(blocks), dim3(block_threads), 0, 0)(x, block_sums, n);
}

}  // namespace vramlab::cuda_examples
