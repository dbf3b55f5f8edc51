// Two matmuls for the emulator's benchmark and tests: one thread per output reading global memory
// (naive), and 16x16 tiles staged through shared memory (tiled), the classic first optimization.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

constexpr int kTile = 16;

__global__ void matmul_naive_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p)
    sum += a[static_cast<std::size_t>(row) * k + p] * b[static_cast<std::size_t>(p) * n + col];
  c[static_cast<std::size_t>(row) * n + col] = sum;
}

__global__ void matmul_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  VRAMLAB_SHARED(float, a_tile, [kTile][kTile]);  // (kTile rows of A, kTile columns of k)
  VRAMLAB_SHARED(float, b_tile, [kTile][kTile]);  // (kTile rows of k, kTile columns of B)
  const int ty = static_cast<int>(threadIdx.y);
  const int tx = static_cast<int>(threadIdx.x);
  const int row = static_cast<int>(blockIdx.y) * kTile + ty;
  const int col = static_cast<int>(blockIdx.x) * kTile + tx;
  float sum = 0.0f;
  for (int p0 = 0; p0 < k; p0 += kTile) {
    a_tile[ty][tx] = row < m && p0 + tx < k ? a[static_cast<std::size_t>(row) * k + p0 + tx] : 0.0f;
    b_tile[ty][tx] = p0 + ty < k && col < n ? b[static_cast<std::size_t>(p0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) sum += a_tile[ty][p] * b_tile[p][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
}

}  // namespace

void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  VRAMLAB_LAUNCH(matmul_naive_kernel, grid, dim3(kTile, kTile), 0, 0)(a, b, c, m, n, k);
}

void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  VRAMLAB_LAUNCH(matmul_tiled_kernel, grid, dim3(kTile, kTile), 0, 0)(a, b, c, m, n, k);
}

}  // namespace vramlab::cuda_examples
