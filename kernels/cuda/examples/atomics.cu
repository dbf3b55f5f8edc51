// Every CUDA atomic the emulator provides, on global memory, from many blocks at once.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

__global__ void all_atomics_kernel(const int* x, int* histogram, float* float_sum,
                                   double* double_sum, unsigned long long* ull_sum, int* int_min,
                                   int* int_max, unsigned* uint_min, unsigned* uint_max,
                                   unsigned long long* ull_max, int* exch_winner, int* exch_seen,
                                   unsigned* cas_claim, std::size_t n, int bins) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int v = x[i];
  atomicAdd(&histogram[v], 1);
  atomicAdd(float_sum, static_cast<float>(v));
  atomicAdd(double_sum, static_cast<double>(v));
  atomicAdd(ull_sum, static_cast<unsigned long long>(v));
  atomicMin(int_min, v - bins / 2);
  atomicMax(int_max, v - bins / 2);
  atomicMin(uint_min, static_cast<unsigned>(v));
  atomicMax(uint_max, static_cast<unsigned>(v));
  atomicMax(ull_max, static_cast<unsigned long long>(v) << 33);
  const int previous = atomicExch(exch_winner, static_cast<int>(i));
  if (previous >= 0) exch_seen[previous] = 1;
  atomicCAS(&cas_claim[v], 0u, static_cast<unsigned>(i) + 1u);
}

}  // namespace

void all_atomics(const int* x, int* histogram, float* float_sum, double* double_sum,
                 unsigned long long* ull_sum, int* int_min, int* int_max, unsigned* uint_min,
                 unsigned* uint_max, unsigned long long* ull_max, int* exch_winner, int* exch_seen,
                 unsigned* cas_claim, std::size_t n, int bins, unsigned block_threads) {
  const unsigned blocks = static_cast<unsigned>((n + block_threads - 1) / block_threads);
  VRAMLAB_LAUNCH(all_atomics_kernel, dim3(blocks), dim3(block_threads), 0, 0)
  (x, histogram, float_sum, double_sum, ull_sum, int_min, int_max, uint_min, uint_max, ull_max,
   exch_winner, exch_seen, cas_claim, n, bins);
}

}  // namespace vramlab::cuda_examples
