// Indexing examples: dynamic shared memory (reverse each block's chunk) and 3D grids of 3D blocks.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

__global__ void reverse_chunks_kernel(const float* x, float* y, std::size_t n) {
  VRAMLAB_DYNAMIC_SHARED(float, chunk);  // (blockDim.x)
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x;
  const std::size_t count = n - start < blockDim.x ? n - start : blockDim.x;
  if (threadIdx.x < count) chunk[threadIdx.x] = x[start + threadIdx.x];
  __syncthreads();
  if (threadIdx.x < count) y[start + threadIdx.x] = chunk[count - 1 - threadIdx.x];
}

__global__ void index_3d_kernel(long long* out) {
  const std::size_t gx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t gy = static_cast<std::size_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  const std::size_t gz = static_cast<std::size_t>(blockIdx.z) * blockDim.z + threadIdx.z;
  const std::size_t nx = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t ny = static_cast<std::size_t>(gridDim.y) * blockDim.y;
  const std::size_t block_linear =
      blockIdx.x + static_cast<std::size_t>(gridDim.x) *
                       (blockIdx.y + static_cast<std::size_t>(gridDim.y) * blockIdx.z);
  const std::size_t thread_linear =
      threadIdx.x + static_cast<std::size_t>(blockDim.x) *
                        (threadIdx.y + static_cast<std::size_t>(blockDim.y) * threadIdx.z);
  const std::size_t threads_per_block =
      static_cast<std::size_t>(blockDim.x) * blockDim.y * blockDim.z;
  out[gx + nx * (gy + ny * gz)] =
      static_cast<long long>(block_linear * threads_per_block + thread_linear);
}

}  // namespace

void reverse_chunks(const float* x, float* y, std::size_t n, unsigned block_threads) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(reverse_chunks_kernel, dim3(blocks), dim3(block_threads),
                 block_threads * sizeof(float), 0)
  (x, y, n);
}

void index_3d(long long* out, dim3 grid, dim3 block) {
  VRAMLAB_LAUNCH(index_3d_kernel, grid, block, 0, 0)(out);
}

}  // namespace vramlab::cuda_examples
