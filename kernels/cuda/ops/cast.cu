// The storage cast: one thread per element, widened to f32 (exact) and rounded once into the
// output's type, so every pair of f32/bf16/f16 is one kernel and the rounding is convert.h's
// nearest-even (overflow to ±inf, NaN kept as NaN).
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

template <class To, class From>
__global__ void cast_kernel(To* out, const From* inp, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = detail::narrow<To>(detail::widen(inp[i]));
}

}  // namespace

template <class To, class From>
void cast(To* out, const From* inp, int64_t n) {
  cpu::require_non_negative("cuda::cast", "n", n);
  if (n == 0) return;
  auto* const kernel = cast_kernel<To, From>;
  VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
  (out, inp, n);
}

#define VRAMLAB_INSTANTIATE_FROM(To, From) template void cast<To, From>(To*, const From*, int64_t);
#define VRAMLAB_INSTANTIATE(To)                   \
  VRAMLAB_INSTANTIATE_FROM(To, float)             \
  VRAMLAB_INSTANTIATE_FROM(To, ::vramlab::bf16_t) \
  VRAMLAB_INSTANTIATE_FROM(To, ::vramlab::f16_t)
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE
#undef VRAMLAB_INSTANTIATE_FROM

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
