// Kernels that do nothing but exist or synchronize: the emulator benchmark times them to get the
// cost of one emulated thread and of one barrier per thread.
#include "kernels/cuda/examples/examples.h"

namespace vramlab::cuda_examples {
namespace {

__global__ void empty_kernel_body() {}

__global__ void barrier_loop_kernel(int barriers) {
  for (int i = 0; i < barriers; ++i) __syncthreads();
}

}  // namespace

void empty_kernel(unsigned blocks, unsigned block_threads) {
  VRAMLAB_LAUNCH(empty_kernel_body, dim3(blocks), dim3(block_threads), 0, 0)();
}

void barrier_loop(unsigned blocks, unsigned block_threads, int barriers) {
  VRAMLAB_LAUNCH(barrier_loop_kernel, dim3(blocks), dim3(block_threads), 0, 0)(barriers);
}

}  // namespace vramlab::cuda_examples
