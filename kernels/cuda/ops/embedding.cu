// Token + position embedding CUDA kernels. Forward: one thread per output element. Backward is
// deterministic without atomics: for dwte one thread per channel walks every position in order
// (positions with the same token then add in the CPU's order); for dwpe one thread per (t, c)
// sums the batch in order. An out-of-range token stops the kernel with a device error.
// Storage types: tables and output A; dwte and dwpe G. Each gradient element is rounded once:
// dwte[token] = round(widen(dwte[token]) + Σ over that token's positions, in f32). A float dwte
// keeps the one pass over the positions; a 16-bit one sums each token's positions at the token's
// first occurrence (quadratic in the positions per channel: a teaching kernel, not a fast one).
#include <type_traits>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::narrow;
using detail::widen;

__device__ std::int64_t checked_token(const std::int32_t* tokens, std::int64_t position,
                                      std::int64_t V) {
  const std::int64_t token = tokens[position];
  if (token < 0 || token >= V) VRAMLAB_DEVICE_FAIL("embedding token outside [0, V)");
  return token;
}

template <class A>
__global__ void embedding_forward_kernel(A* out, const std::int32_t* tokens, const A* wte,
                                         const A* wpe, std::int64_t B, std::int64_t T,
                                         std::int64_t C, std::int64_t V) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= B * T * C) return;
  const std::int64_t position = index / C, c = index % C, t = position % T;
  const std::int64_t token = checked_token(tokens, position, V);
  out[index] =
      narrow<A>(widen(wte[token * C + c]) + (wpe != nullptr ? widen(wpe[t * C + c]) : 0.0f));
}

template <class A, class G>
__global__ void embedding_backward_wte_kernel(G* dwte, const A* dout, const std::int32_t* tokens,
                                              std::int64_t positions, std::int64_t C,
                                              std::int64_t V) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  if constexpr (std::is_same_v<G, float>) {
    for (std::int64_t position = 0; position < positions; position++) {
      dwte[checked_token(tokens, position, V) * C + c] += widen(dout[position * C + c]);
    }
  } else {
    for (std::int64_t first = 0; first < positions; first++) {
      const std::int64_t token = checked_token(tokens, first, V);
      bool seen = false;
      for (std::int64_t earlier = 0; earlier < first && !seen; earlier++) {
        seen = tokens[earlier] == token;
      }
      if (seen) continue;
      float total = 0.0f;
      for (std::int64_t position = first; position < positions; position++) {
        if (tokens[position] == token) total += widen(dout[position * C + c]);
      }
      dwte[token * C + c] = narrow<G>(widen(dwte[token * C + c]) + total);
    }
  }
}

template <class A, class G>
__global__ void embedding_backward_wpe_kernel(G* dwpe, const A* dout, std::int64_t B,
                                              std::int64_t T, std::int64_t C) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= T * C) return;
  float total = 0.0f;
  for (std::int64_t b = 0; b < B; b++) total += widen(dout[b * T * C + index]);
  dwpe[index] = narrow<G>(widen(dwpe[index]) + total);
}

void check_sizes(const char* op, std::int64_t B, std::int64_t T, std::int64_t C, std::int64_t V) {
  cpu::require_non_negative(op, "B", B);
  cpu::require_non_negative(op, "T", T);
  cpu::require_non_negative(op, "C", C);
  cpu::require_non_negative(op, "V", V);
}

}  // namespace

template <class A>
void embedding_forward(A* out, const int32_t* tokens, const A* wte, const NoDeduce<A>* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V) {
  check_sizes("cuda::embedding_forward", B, T, C, V);
  if (B * T * C == 0) return;
  VRAMLAB_LAUNCH(embedding_forward_kernel<A>, blocks_for(B * T * C, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, tokens, wte, wpe, B, T, C, V);
}

template <class A, class G>
void embedding_backward(G* dwte, NoDeduce<G>* dwpe, const A* dout, const int32_t* tokens, int64_t B,
                        int64_t T, int64_t C, int64_t V) {
  check_sizes("cuda::embedding_backward", B, T, C, V);
  if (B * T * C == 0) return;
  auto* const wte_kernel = embedding_backward_wte_kernel<A, G>;
  VRAMLAB_LAUNCH(wte_kernel, blocks_for(C, kElementwiseBlockThreads), kElementwiseBlockThreads, 0,
                 0)
  (dwte, dout, tokens, B * T, C, V);
  if (dwpe != nullptr) {
    auto* const wpe_kernel = embedding_backward_wpe_kernel<A, G>;
    VRAMLAB_LAUNCH(wpe_kernel, blocks_for(T * C, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dwpe, dout, B, T, C);
  }
}

#define VRAMLAB_INSTANTIATE(A)                                                                  \
  template void embedding_forward<A>(A*, const int32_t*, const A*, const NoDeduce<A>*, int64_t, \
                                     int64_t, int64_t, int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE
#define VRAMLAB_INSTANTIATE(A, G)                                                             \
  template void embedding_backward<A, G>(G*, NoDeduce<G>*, const A*, const int32_t*, int64_t, \
                                         int64_t, int64_t, int64_t);
VRAMLAB_FOR_EACH_OP_TYPES(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
