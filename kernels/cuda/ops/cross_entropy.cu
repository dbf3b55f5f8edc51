// Fused softmax + cross-entropy CUDA kernels. Forward: per row, logsumexp over the V real classes
// (columns V..Vp are padding), the loss, and optionally the probabilities. Backward: one thread
// per (row, class < V) element, recomputing the probability from the saved logsumexp.
// dlogits: one thread per (row, class < V) element, from the saved probabilities (written, so it
// can overwrite the logits in place as the nn layer's backward does).
//   v1 forward: one thread per row (the CPU loop).
//   v2 forward: one warp per row, shuffle max and sum, coalesced reads.
// An out-of-range target stops the kernel with a device error (targets live on the device).
// Storage types: the forward and dlogits read logits/probs as A and write probs/dlogits rounded
// once to A; losses and logsumexp are f32 (cross_entropy_backward is float only).

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;
using detail::narrow;
using detail::warp_max;
using detail::warp_sum;
using detail::widen;

constexpr unsigned kRowsPerBlock = kRowBlockThreads / 32;

__device__ void check_target(std::int32_t target, std::int64_t V) {
  if (target < 0 || target >= V) VRAMLAB_DEVICE_FAIL("cross-entropy target outside [0, V)");
}

template <class A>
__global__ void cross_entropy_forward_v1_kernel(float* losses, float* logsumexp, A* probs,
                                                const A* logits, const std::int32_t* targets,
                                                std::int64_t N, std::int64_t V, std::int64_t Vp) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= N) return;
  check_target(targets[row], V);
  const A* x = logits + row * Vp;  // (Vp)
  float max_value = -INFINITY;
  for (std::int64_t i = 0; i < V; i++) max_value = fmaxf(max_value, widen(x[i]));
  float total = 0.0f;
  for (std::int64_t i = 0; i < V; i++) total += expf(widen(x[i]) - max_value);
  const float lse = max_value + logf(total);
  logsumexp[row] = lse;
  losses[row] = lse - widen(x[targets[row]]);
  if (probs != nullptr) {
    for (std::int64_t i = 0; i < Vp; i++) {
      probs[row * Vp + i] = narrow<A>(i < V ? expf(widen(x[i]) - lse) : 0.0f);
    }
  }
}

template <class A>
__global__ void cross_entropy_forward_v2_kernel(float* losses, float* logsumexp, A* probs,
                                                const A* logits, const std::int32_t* targets,
                                                std::int64_t N, std::int64_t V, std::int64_t Vp) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // the whole warp leaves together
  const unsigned lane = threadIdx.x % 32;
  const std::int32_t target = targets[row];
  check_target(target, V);
  const A* x = logits + row * Vp;  // (Vp)
  float max_value = -INFINITY;
  for (std::int64_t i = lane; i < V; i += 32) max_value = fmaxf(max_value, widen(x[i]));
  max_value = warp_max(max_value);
  float total = 0.0f;
  for (std::int64_t i = lane; i < V; i += 32) total += expf(widen(x[i]) - max_value);
  const float lse = max_value + logf(warp_sum(total));
  if (lane == 0) {
    logsumexp[row] = lse;
    losses[row] = lse - widen(x[target]);
  }
  if (probs != nullptr) {
    for (std::int64_t i = lane; i < Vp; i += 32)
      probs[row * Vp + i] = narrow<A>(i < V ? expf(widen(x[i]) - lse) : 0.0f);
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

template <class A>
__global__ void cross_entropy_dlogits_kernel(A* dlogits, const A* probs,
                                             const std::int32_t* targets, std::int64_t N,
                                             std::int64_t V, std::int64_t Vp, float scale) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= N * V) return;
  const std::int64_t row = index / V, i = index % V;
  check_target(targets[row], V);
  const float value = widen(probs[row * Vp + i]) * scale;
  dlogits[row * Vp + i] = narrow<A>(i == targets[row] ? value - scale : value);
}

void check_arguments(const char* op, std::int64_t N, std::int64_t V, std::int64_t Vp) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "V", V);
  cpu::require(N == 0 || V >= 1, op, "V = " + std::to_string(V) + " must be >= 1");
  cpu::require(Vp >= V, op,
               "padded row Vp = " + std::to_string(Vp) + " must be >= V = " + std::to_string(V));
}

}  // namespace

template <class A>
void cross_entropy_forward(float* losses, float* logsumexp, NoDeduce<A>* probs, const A* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp,
                           KernelVersion version) {
  check_arguments("cuda::cross_entropy_forward", N, V, Vp);
  if (N == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(cross_entropy_forward_v1_kernel<A>, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (losses, logsumexp, probs, logits, targets, N, V, Vp);
  } else {
    VRAMLAB_LAUNCH(cross_entropy_forward_v2_kernel<A>, blocks_for(N, kRowsPerBlock),
                   kRowBlockThreads, 0, 0)
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

template <class A>
void cross_entropy_dlogits(A* dlogits, const A* probs, const int32_t* targets, int64_t N, int64_t V,
                           int64_t Vp, float scale) {
  check_arguments("cuda::cross_entropy_dlogits", N, V, Vp);
  if (N == 0) return;
  VRAMLAB_LAUNCH(cross_entropy_dlogits_kernel<A>, blocks_for(N * V, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (dlogits, probs, targets, N, V, Vp, scale);
}

#define VRAMLAB_INSTANTIATE(A)                                                                    \
  template void cross_entropy_forward<A>(float*, float*, NoDeduce<A>*, const A*, const int32_t*,  \
                                         int64_t, int64_t, int64_t, KernelVersion);               \
  template void cross_entropy_dlogits<A>(A*, const A*, const int32_t*, int64_t, int64_t, int64_t, \
                                         float);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
