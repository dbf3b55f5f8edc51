// Int8 block quantisation CUDA kernels. quantize: one warp per block, each lane striding over the
// block's elements; the block's max |x| is a warp shuffle max (a max is exact in any order, so
// the scale is the CPU kernel's bits) and a shuffle sum counts the non-finite lanes. The scale
// and the rounding of each element are common/dtype/int8_block.h's, shared with the CPU kernel.
// dequantize: one thread per element.
#include <cfloat>

#include "common/dtype/int8_block.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;

constexpr unsigned kWarpSize = 32;

// One warp per block j: scales[j] and q over the block's elements.
template <class A>
__global__ void quantize_int8_kernel(std::int8_t* q, float* scales, const A* x, std::int64_t n,
                                     std::int64_t block, std::int64_t blocks) {
  const std::int64_t j = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) /
                         static_cast<std::int64_t>(kWarpSize);
  if (j >= blocks) return;  // the whole warp leaves: its shuffles stay full-warp
  const std::int64_t lane = threadIdx.x % kWarpSize;
  const std::int64_t first = j * block;
  const std::int64_t count = block < n - first ? block : n - first;
  float amax = 0.0f;
  int non_finite = 0;
  for (std::int64_t i = lane; i < count; i += kWarpSize) {
    const float a = fabsf(detail::widen(x[first + i]));
    amax = a > amax ? a : amax;  // a NaN never wins; non_finite counts it
    non_finite += a <= FLT_MAX ? 0 : 1;
  }
  amax = detail::warp_max(amax);
  non_finite = detail::warp_sum(non_finite);
  const float scale = int8_block_scale(amax, non_finite == 0);
  if (lane == 0) scales[j] = scale;
  for (std::int64_t i = lane; i < count; i += kWarpSize) {
    q[first + i] = int8_quantize(detail::widen(x[first + i]), scale);
  }
}

template <class A>
__global__ void dequantize_int8_kernel(A* x, const std::int8_t* q, const float* scales,
                                       std::int64_t n, std::int64_t block) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = detail::narrow<A>(static_cast<float>(q[i]) * scales[i / block]);
}

void check_arguments(const char* op, int64_t n, int64_t block) {
  cpu::require_non_negative(op, "n", n);
  cpu::require(block >= 1, op, "block = " + std::to_string(block) + " must be >= 1");
}

}  // namespace

template <class A>
void quantize_int8(int8_t* q, float* scales, const A* x, int64_t n, int64_t block) {
  check_arguments("cuda::quantize_int8", n, block);
  if (n == 0) return;
  const int64_t blocks = n / block + (n % block != 0 ? 1 : 0);
  VRAMLAB_LAUNCH(quantize_int8_kernel<A>, blocks_for(blocks * kWarpSize, kRowBlockThreads),
                 kRowBlockThreads, 0, 0)
  (q, scales, x, n, block, blocks);
}

template <class A>
void dequantize_int8(A* x, const int8_t* q, const float* scales, int64_t n, int64_t block) {
  check_arguments("cuda::dequantize_int8", n, block);
  if (n == 0) return;
  VRAMLAB_LAUNCH(dequantize_int8_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (x, q, scales, n, block);
}

#define VRAMLAB_INSTANTIATE(A)                                                 \
  template void quantize_int8<A>(int8_t*, float*, const A*, int64_t, int64_t); \
  template void dequantize_int8<A>(A*, const int8_t*, const float*, int64_t, int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
