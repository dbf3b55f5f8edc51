// Kernels with deliberately planted bugs. The emulator's tests (tests/simt/) prove that each one
// is caught; nvcc compiles them too, like every example kernel. Do not fix them.
#include "kernels/cuda/examples/planted_bugs.h"

namespace vramlab::cuda_examples {
namespace {

__global__ void sum_missing_barrier_kernel(const int* x, int* block_sums, std::size_t n) {
  VRAMLAB_SHARED(int, partial, [256]);  // (blockDim.x)
  const unsigned tid = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + tid;
  partial[tid] = i < n ? x[i] : 0;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    // BUG: a __syncthreads() belongs here.
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

__global__ void shift_missing_barrier_kernel(const int* x, int* y) {
  VRAMLAB_SHARED(int, staged, [1024]);  // (blockDim.x)
  const unsigned tid = threadIdx.x;
  staged[tid] = x[tid];
  // BUG: a __syncthreads() belongs here.
  y[tid] = tid > 0 ? staged[tid - 1] : 0;
}

__global__ void static_shared_overflow_kernel(int* out) {
  VRAMLAB_SHARED(int, window, [64]);  // (64)
  int* slot = &window[0];
  slot[threadIdx.x + 1] = static_cast<int>(threadIdx.x);  // BUG: thread 63 writes window[64]
  __syncthreads();
  out[threadIdx.x] = window[threadIdx.x];
}

__global__ void dynamic_shared_overflow_kernel(int* out) {
  VRAMLAB_DYNAMIC_SHARED(int, buffer);  // (blockDim.x)
  buffer[threadIdx.x + 1] =
      static_cast<int>(threadIdx.x);  // BUG: the last thread writes past the end
  __syncthreads();
  out[threadIdx.x] = buffer[threadIdx.x];
}

__global__ void barrier_in_divergent_branch_kernel(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();  // BUG: only half of the block reaches this barrier
  }
  out[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
}

__global__ void warp_deadlock_kernel(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();  // BUG: waits for lanes 16..31, which wait for us below
  } else {
    __syncwarp();
  }
  out[threadIdx.x] = 1;
}

__global__ void not_implemented_kernel([[maybe_unused]] float* y, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  VRAMLAB_DEVICE_FAIL("NOT IMPLEMENTED: planted_not_implemented (exercise stub)");
}

__global__ void lane_outside_mask_kernel(int* out) {
  const unsigned mask =
      threadIdx.x == 5 ? 0x1u : 0xffffffffu;  // BUG: lane 5 is not in its own mask
  out[threadIdx.x] = __shfl_sync(mask, static_cast<int>(threadIdx.x), 0);
}

}  // namespace

void planted_sum_missing_barrier(const int* x, int* block_sums, std::size_t n,
                                 unsigned block_threads) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(sum_missing_barrier_kernel, dim3(blocks), dim3(block_threads), 0, 0)
  (x, block_sums, n);
}

void planted_shift_missing_barrier(const int* x, int* y, unsigned n) {
  VRAMLAB_LAUNCH(shift_missing_barrier_kernel, dim3(1), dim3(n), 0, 0)(x, y);
}

void planted_static_shared_overflow(int* out) {
  VRAMLAB_LAUNCH(static_shared_overflow_kernel, dim3(1), dim3(64), 0, 0)(out);
}

void planted_dynamic_shared_overflow(int* out, unsigned block_threads) {
  VRAMLAB_LAUNCH(dynamic_shared_overflow_kernel, dim3(1), dim3(block_threads),
                 block_threads * sizeof(int), 0)
  (out);
}

void planted_barrier_in_divergent_branch(int* out) {
  VRAMLAB_LAUNCH(barrier_in_divergent_branch_kernel, dim3(1), dim3(64), 0, 0)(out);
}

void planted_warp_deadlock(int* out) {
  VRAMLAB_LAUNCH(warp_deadlock_kernel, dim3(1), dim3(32), 0, 0)(out);
}

void planted_not_implemented(float* y, std::size_t n) {
  const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
  VRAMLAB_LAUNCH(not_implemented_kernel, dim3(blocks), dim3(128), 0, 0)(y, n);
}

void planted_lane_outside_mask(int* out) {
  VRAMLAB_LAUNCH(lane_outside_mask_kernel, dim3(1), dim3(32), 0, 0)(out);
}

}  // namespace vramlab::cuda_examples
