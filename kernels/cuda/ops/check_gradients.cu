// The loss scaler's check: Σ (double)(multiplier·g)² over gradients of any storage type, without
// changing them. Whether some multiplier·g is ±inf or NaN needs no flag of its own: a square is
// never negative, so once an inf or NaN enters the double sum nothing brings it back to finite.
//   v1: a grid of kPartialBlocks blocks striding over the gradients; each block's threads leave
//       their partial sums in shared memory, thread 0 adds them in thread order into its block's
//       partial, and a second one-thread launch adds the block partials in block order.
//   v2: one 1024-thread block, four-element vector loads when aligned, warp shuffles and one
//       shared-memory pass over the 32 warp sums (the partition depends only on n).
// Both are deterministic: the same n gives the same additions in the same order on every run.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

constexpr unsigned kPartialBlocks = static_cast<unsigned>(kCheckGradientsScratch - 1);
constexpr unsigned kPartialThreads = 256;
constexpr unsigned kReductionThreads = 1024;

// (multiplier·g)² with the product rounded to f32 first, as the optimizer will compute it.
__device__ inline double scaled_square(float g, float multiplier) {
  const double scaled = static_cast<double>(multiplier * g);
  return scaled * scaled;
}

template <class T>
__global__ void check_gradients_v1_partials_kernel(double* partials, const T* grads, std::int64_t n,
                                                   float multiplier) {
  VRAMLAB_SHARED(double, thread_totals, [kPartialThreads]);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  double partial = 0.0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    partial += scaled_square(detail::widen(grads[i]), multiplier);
  }
  thread_totals[threadIdx.x] = partial;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double block_total = 0.0;
  for (unsigned t = 0; t < kPartialThreads; t++) block_total += thread_totals[t];
  partials[blockIdx.x] = block_total;
}

__global__ void check_gradients_v1_total_kernel(double* out, const double* partials) {
  double total = 0.0;
  for (unsigned j = 0; j < kPartialBlocks; j++) total += partials[j];
  *out = total;
}

template <class T>
__global__ void check_gradients_v2_kernel(double* out, const T* grads, std::int64_t n,
                                          float multiplier, bool vectorized) {
  VRAMLAB_SHARED(double, warp_totals, [kReductionThreads / 32]);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  double partial = 0.0;
  std::int64_t scalar_start = 0;
  if (vectorized) {
    for (std::int64_t i = tid; i < n / 4; i += kReductionThreads) {
      const float4 q = detail::load_quad(grads, i);
      partial += (scaled_square(q.x, multiplier) + scaled_square(q.y, multiplier)) +
                 (scaled_square(q.z, multiplier) + scaled_square(q.w, multiplier));
    }
    scalar_start = n / 4 * 4;
  }
  for (std::int64_t i = scalar_start + tid; i < n; i += kReductionThreads) {
    partial += scaled_square(detail::widen(grads[i]), multiplier);
  }
  partial = detail::warp_sum(partial);
  if (lane == 0) warp_totals[warp] = partial;
  __syncthreads();
  if (warp != 0) return;
  partial = detail::warp_sum(warp_totals[lane]);
  if (lane == 0) *out = partial;
}

}  // namespace

template <class T>
void check_gradients(double* out, const T* grads, int64_t n, float multiplier,
                     KernelVersion version) {
  cpu::require_non_negative("cuda::check_gradients", "n", n);
  if (version == KernelVersion::v1) {
    // Every block writes its partial (0 when it has no element), so n = 0 needs no special case.
    VRAMLAB_LAUNCH(check_gradients_v1_partials_kernel<T>, kPartialBlocks, kPartialThreads, 0, 0)
    (out + 1, grads, n, multiplier);
    VRAMLAB_LAUNCH(check_gradients_v1_total_kernel, 1, 1, 0, 0)(out, out + 1);
  } else {
    VRAMLAB_LAUNCH(check_gradients_v2_kernel<T>, 1, kReductionThreads, 0, 0)
    (out, grads, n, multiplier, detail::aligned_to(grads, detail::kQuadBytes<T>));
  }
}

#define VRAMLAB_INSTANTIATE(T) \
  template void check_gradients<T>(double*, const T*, int64_t, float, KernelVersion);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
