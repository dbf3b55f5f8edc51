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

__global__ void dropout_kernel(float* out, const float* inp, std::int64_t n, float p,
                               std::uint64_t seed, std::uint64_t offset) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (p == 0.0f) {
    out[i] = inp[i];  // an exact copy (a multiply by 1 would quiet a signalling NaN)
    return;
  }
  const bool keep = dropout_keep(seed, offset + static_cast<std::uint64_t>(i), p);
  out[i] = keep ? inp[i] * dropout_scale(p) : 0.0f;
}

void launch(const char* op, float* out, const float* inp, int64_t n, float p, uint64_t seed,
            uint64_t offset) {
  cpu::require_non_negative(op, "n", n);
  cpu::require_dropout_probability(op, p);
  if (n == 0) return;
  VRAMLAB_LAUNCH(dropout_kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads,
                 0, 0)
  (out, inp, n, p, seed, offset);
}

}  // namespace

void dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                     uint64_t offset) {
  launch("cuda::dropout_forward", out, inp, n, p, seed, offset);
}

void dropout_backward(float* dinp, const float* dout, int64_t n, float p, uint64_t seed,
                      uint64_t offset) {
  launch("cuda::dropout_backward", dinp, dout, n, p, seed, offset);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
