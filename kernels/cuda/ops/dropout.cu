// Dropout CUDA kernels: one thread per element, each deciding keep or drop from its own index
// (common/dtype/dropout_mask.h), so the mask is the CPU kernel's bit for bit and a recomputed
// forward or the backward regenerates it without any saved state.
#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

template <class A>
__global__ void dropout_kernel(A* out, const A* inp, std::int64_t n, float p, std::uint64_t seed,
                               std::uint64_t offset) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (p == 0.0f) {
    out[i] = inp[i];  // an exact copy (a multiply by 1 would quiet a signalling NaN)
    return;
  }
  const bool keep = dropout_keep(seed, offset + static_cast<std::uint64_t>(i), p);
  out[i] = detail::narrow<A>(keep ? detail::widen(inp[i]) * dropout_scale(p) : 0.0f);
}

template <class A>
void launch(const char* op, A* out, const A* inp, int64_t n, float p, uint64_t seed,
            uint64_t offset) {
  cpu::require_non_negative(op, "n", n);
  cpu::require_dropout_probability(op, p);
  if (n == 0) return;
  VRAMLAB_LAUNCH(dropout_kernel<A>, blocks_for(n, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, n, p, seed, offset);
}

}  // namespace

template <class A>
void dropout_forward(A* out, const A* inp, int64_t n, float p, uint64_t seed, uint64_t offset) {
  launch("cuda::dropout_forward", out, inp, n, p, seed, offset);
}

template <class A>
void dropout_backward(A* dinp, const A* dout, int64_t n, float p, uint64_t seed, uint64_t offset) {
  launch("cuda::dropout_backward", dinp, dout, n, p, seed, offset);
}

#define VRAMLAB_INSTANTIATE(A)                                                        \
  template void dropout_forward<A>(A*, const A*, int64_t, float, uint64_t, uint64_t); \
  template void dropout_backward<A>(A*, const A*, int64_t, float, uint64_t, uint64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
