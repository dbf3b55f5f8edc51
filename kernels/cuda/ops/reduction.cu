// Reductions over a whole vector (Σx, Σx²), accumulated in double like the CPU kernels.
//   v1: one thread walks the vector (the CPU loop verbatim: correct, and as slow as one thread).
//   v2: one block of 1024 threads; each thread sums a strided share with float4 loads (when x is
//       16-byte aligned), then warp shuffles and one shared-memory pass over the 32 warp sums.
//       The partition depends only on n, so the result is the same bits on every run.
// sum takes a storage type (bf16/f16 widened exactly; four-element loads of 8 bytes then).
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

constexpr unsigned kReductionThreads = 1024;

template <class A>
__device__ double term(A x, bool squares) {
  const double value = detail::widen(x);
  return squares ? value * value : value;
}

template <class A>
__global__ void reduce_v1_kernel(double* out, const A* x, std::int64_t n, bool squares) {
  double total = 0.0;
  for (std::int64_t i = 0; i < n; i++) total += term(x[i], squares);
  *out = total;
}

template <class A>
__global__ void reduce_v2_kernel(double* out, const A* x, std::int64_t n, bool squares,
                                 bool vectorized) {
  VRAMLAB_SHARED(double, warp_totals, [kReductionThreads / 32]);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  double partial = 0.0;
  std::int64_t scalar_start = 0;
  if (vectorized) {
    for (std::int64_t i = tid; i < n / 4; i += kReductionThreads) {
      const float4 q = detail::load_quad(x, i);
      partial +=
          (term(q.x, squares) + term(q.y, squares)) + (term(q.z, squares) + term(q.w, squares));
    }
    scalar_start = n / 4 * 4;
  }
  for (std::int64_t i = scalar_start + tid; i < n; i += kReductionThreads) {
    partial += term(x[i], squares);
  }
  partial = detail::warp_sum(partial);
  if (lane == 0) warp_totals[warp] = partial;
  __syncthreads();
  if (warp != 0) return;
  partial = detail::warp_sum(warp_totals[lane]);
  if (lane == 0) *out = partial;
}

template <class A>
void reduce(const char* op, double* out, const A* x, std::int64_t n, bool squares,
            KernelVersion version) {
  cpu::require_non_negative(op, "n", n);
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(reduce_v1_kernel<A>, 1, 1, 0, 0)(out, x, n, squares);
  } else {
    VRAMLAB_LAUNCH(reduce_v2_kernel<A>, 1, kReductionThreads, 0, 0)
    (out, x, n, squares, detail::aligned_to(x, detail::kQuadBytes<A>));
  }
}

}  // namespace

template <class A>
void sum(double* out, const A* x, int64_t n, KernelVersion version) {
  reduce("cuda::sum", out, x, n, false, version);
}

void sum_of_squares(double* out, const float* x, int64_t n, KernelVersion version) {
  reduce("cuda::sum_of_squares", out, x, n, true, version);
}

#define VRAMLAB_INSTANTIATE(A) template void sum<A>(double*, const A*, int64_t, KernelVersion);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
