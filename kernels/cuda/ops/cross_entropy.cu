// Fused softmax + cross-entropy CUDA kernels. Forward: per row, logsumexp over the V real classes
// (columns V..Vp are padding), the loss, and optionally the probabilities. Backward: one thread
// per (row, class < V) element, recomputing the probability from the saved logsumexp.
// dlogits: one thread per (row, class < V) element, from the saved probabilities (written, so it
// can overwrite the logits in place as the nn layer's backward does).
//   v1 forward: one thread per row (the CPU loop).
//   v2 forward: one warp per row, shuffle max and sum, coalesced reads.
// An out-of-range target stops the kernel with a device error (targets live on the device).

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;
using detail::warp_max;
using detail::warp_sum;

constexpr unsigned kRowsPerBlock = kRowBlockThreads / 32;

__device__ void check_target(std::int32_t target, std::int64_t V) {
  if (target < 0 || target >= V) VRAMLAB_DEVICE_FAIL("cross-entropy target outside [0, V)");
}

__global__ void cross_entropy_forward_v1_kernel(float* losses, float* logsumexp, float* probs,
                                                const float* logits, const std::int32_t* targets,
                                                std::int64_t N, std::int64_t V, std::int64_t Vp) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= N) return;
  check_target(targets[row], V);
  const float* x = logits + row * Vp;  // (Vp)
  float max_value = -INFINITY;
  for (std::int64_t i = 0; i < V; i++) max_value = fmaxf(max_value, x[i]);
  float total = 0.0f;
  for (std::int64_t i = 0; i < V; i++) total += expf(x[i] - max_value);
  const float lse = max_value + logf(total);
  logsumexp[row] = lse;
  losses[row] = lse - x[targets[row]];
  if (probs != nullptr) {
    for (std::int64_t i = 0; i < Vp; i++) probs[row * Vp + i] = i < V ? expf(x[i] - lse) : 0.0f;
  }
}

__global__ void cross_entropy_forward_v2_kernel(float* losses, float* logsumexp, float* probs,
                                                const float* logits, const std::int32_t* targets,
                                                std::int64_t N, std::int64_t V, std::int64_t Vp) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // the whole warp leaves together
  const unsigned lane = threadIdx.x % 32;
  const std::int32_t target = targets[row];
  check_target(target, V);
  const float* x = logits + row * Vp;  // (Vp)
  float max_value = -INFINITY;
  for (std::int64_t i = lane; i < V; i += 32) max_value = fmaxf(max_value, x[i]);
  max_value = warp_max(max_value);
  float total = 0.0f;
  for (std::int64_t i = lane; i < V; i += 32) total += expf(x[i] - max_value);
  const float lse = max_value + logf(warp_sum(total));
  if (lane == 0) {
    logsumexp[row] = lse;
    losses[row] = lse - x[target];
  }
  if (probs != nullptr) {
    for (std::int64_t i = lane; i < Vp; i += 32)
      probs[row * Vp + i] = i < V ? expf(x[i] - lse) : 0.0f;
  }
}

__global__ void cross_entropy_backward_kernel(float* dlogits, const float* dlosses,
                                              const float* logits, const float* logsumexp,
                                              const std::int32_t* targets, std::int64_t N,
                                              std::int64_t V, std::int64_t Vp) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= N * V) return;
  const std::int64_t row = index / V, i = index % V;
  check_target(targets[row], V);
  const float probability = expf(logits[row * Vp + i] - logsumexp[row]);
  const float indicator = i == targets[row] ? 1.0f : 0.0f;
  dlogits[row * Vp + i] += dlosses[row] * (probability - indicator);
}

__global__ void cross_entropy_dlogits_kernel(float* dlogits, const float* probs,
                                             const std::int32_t* targets, std::int64_t N,
                                             std::int64_t V, std::int64_t Vp, float scale) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= N * V) return;
  const std::int64_t row = index / V, i = index % V;
  check_target(targets[row], V);
  const float value = probs[row * Vp + i] * scale;
  dlogits[row * Vp + i] = i == targets[row] ? value - scale : value;
}

void check_arguments(const char* op, std::int64_t N, std::int64_t V, std::int64_t Vp) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "V", V);
  cpu::require(N == 0 || V >= 1, op, "V = " + std::to_string(V) + " must be >= 1");
  cpu::require(Vp >= V, op,
               "padded row Vp = " + std::to_string(Vp) + " must be >= V = " + std::to_string(V));
}

}  // namespace

void cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp,
                           KernelVersion version) {
  check_arguments("cuda::cross_entropy_forward", N, V, Vp);
  if (N == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(cross_entropy_forward_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (losses, logsumexp, probs, logits, targets, N, V, Vp);
  } else {
    VRAMLAB_LAUNCH(cross_entropy_forward_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads,
                   0, 0)
    (losses, logsumexp, probs, logits, targets, N, V, Vp);
  }
}

void cross_entropy_backward(float* dlogits, const float* dlosses, const float* logits,
                            const float* logsumexp, const int32_t* targets, int64_t N, int64_t V,
                            int64_t Vp) {
  check_arguments("cuda::cross_entropy_backward", N, V, Vp);
  if (N == 0) return;
  VRAMLAB_LAUNCH(cross_entropy_backward_kernel, blocks_for(N * V, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dlogits, dlosses, logits, logsumexp, targets, N, V, Vp);
}

void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets, int64_t N,
                           int64_t V, int64_t Vp, float scale) {
  check_arguments("cuda::cross_entropy_dlogits", N, V, Vp);
  if (N == 0) return;
  VRAMLAB_LAUNCH(cross_entropy_dlogits_kernel, blocks_for(N * V, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dlogits, probs, targets, N, V, Vp, scale);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
