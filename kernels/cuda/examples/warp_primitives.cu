// Warp shuffles with any width, votes in divergent code, and the counting barriers: the example
// kernels that pin down the emulator's warp and barrier semantics against CUDA's documented ones.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

// The lanes of the calling warp that exist (the last warp of a block may be partial).
__device__ unsigned existing_lanes_mask() {
  const unsigned warp_start = threadIdx.x / warpSize * warpSize;
  const unsigned lanes = min(32u, blockDim.x - warp_start);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

__global__ void shuffle_probe_kernel(const int* x, int* out_idx, int* out_up, int* out_down,
                                     int* out_xor, double* out_xor_double, int src_lane,
                                     unsigned delta, int lane_mask, int width) {
  const unsigned tid = threadIdx.x;
  const unsigned mask = existing_lanes_mask();
  const int v = x[tid];
  out_idx[tid] = __shfl_sync(mask, v, src_lane, width);
  out_up[tid] = __shfl_up_sync(mask, v, delta, width);
  out_down[tid] = __shfl_down_sync(mask, v, delta, width);
  out_xor[tid] = __shfl_xor_sync(mask, v, lane_mask, width);
  out_xor_double[tid] = __shfl_xor_sync(mask, static_cast<double>(v) * 0.5, lane_mask, width);
}

__global__ void divergent_votes_kernel(const int* x, unsigned* out_ballot, int* out_any,
                                       int* out_all, int threshold) {
  const unsigned tid = threadIdx.x;
  const unsigned lane = tid % warpSize;
  const unsigned every_third = 0x49249249u;  // lanes 0, 3, 6, ..., 30
  const unsigned existing = existing_lanes_mask();
  const int predicate = x[tid] > threshold;
  if (lane % 3 == 0) {
    const unsigned mask = every_third & existing;
    out_ballot[tid] = __ballot_sync(mask, predicate);
    out_any[tid] = __any_sync(mask, predicate);
    out_all[tid] = __all_sync(mask, predicate);
  } else {
    const unsigned mask = ~every_third & existing;
    out_ballot[tid] = __ballot_sync(mask, predicate);
    out_any[tid] = __any_sync(mask, predicate);
    out_all[tid] = __all_sync(mask, predicate);
  }
  __syncwarp(existing);
}

__global__ void barrier_votes_kernel(const int* x, int* out, std::size_t n, int threshold) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int predicate = i < n && x[i] > threshold;
  const int count = __syncthreads_count(predicate);
  const int all = __syncthreads_and(predicate);
  const int any = __syncthreads_or(predicate);
  if (threadIdx.x == blockDim.x - 1) {
    out[3 * blockIdx.x + 0] = count;
    out[3 * blockIdx.x + 1] = all;
    out[3 * blockIdx.x + 2] = any;
  }
}

}  // namespace

void shuffle_probe(const int* x, int* out_idx, int* out_up, int* out_down, int* out_xor,
                   double* out_xor_double, unsigned n, int src_lane, unsigned delta, int lane_mask,
                   int width) {
  VRAMLAB_LAUNCH(shuffle_probe_kernel, dim3(1), dim3(n), 0, 0)
  (x, out_idx, out_up, out_down, out_xor, out_xor_double, src_lane, delta, lane_mask, width);
}

void divergent_votes(const int* x, unsigned* out_ballot, int* out_any, int* out_all, unsigned n,
                     int threshold) {
  VRAMLAB_LAUNCH(divergent_votes_kernel, dim3(1), dim3(n), 0, 0)
  (x, out_ballot, out_any, out_all, threshold);
}

void barrier_votes(const int* x, int* out, std::size_t n, unsigned block_threads, int threshold) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(barrier_votes_kernel, dim3(blocks), dim3(block_threads), 0, 0)
  (x, out, n, threshold);
}

}  // namespace vramlab::cuda_examples
