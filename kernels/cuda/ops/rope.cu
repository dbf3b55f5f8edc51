// Rotary position embedding CUDA kernels: one thread per (b, t, h, pair). The angle is computed
// in double exactly as the CPU kernel does, so both rotate by the same float cosine and sine.
// Storage types: the pair widened to f32, each result rounded once (after the += backward).
#include <cmath>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

// direction = +1 rotates (forward, out =), −1 rotates back (backward, dinp +=).
template <class A>
__global__ void rope_kernel(A* out, const A* inp, std::int64_t B, std::int64_t T, std::int64_t H,
                            std::int64_t D, double theta, std::int64_t position_offset,
                            float direction, bool accumulate) {
  const std::int64_t pairs = D / 2;
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= B * T * H * pairs) return;
  const std::int64_t i = index % pairs;
  const std::int64_t t = index / (pairs * H) % T;
  const double angle = static_cast<double>(position_offset + t) *
                       pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
  const float cosine = static_cast<float>(cos(angle));
  const float sine = direction * static_cast<float>(sin(angle));
  const std::int64_t at = index * 2;  // (b, t, h, 2i) in (B, T, H, D)
  const float x0 = detail::widen(inp[at]), x1 = detail::widen(inp[at + 1]);
  const float y0 = x0 * cosine - x1 * sine, y1 = x0 * sine + x1 * cosine;
  if (accumulate) {
    out[at] = detail::narrow<A>(detail::widen(out[at]) + y0);
    out[at + 1] = detail::narrow<A>(detail::widen(out[at + 1]) + y1);
  } else {
    out[at] = detail::narrow<A>(y0);
    out[at + 1] = detail::narrow<A>(y1);
  }
}

void check_arguments(const char* op, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                     double theta) {
  cpu::require_non_negative(op, "B", B);
  cpu::require_non_negative(op, "T", T);
  cpu::require_non_negative(op, "H", H);
  cpu::require_non_negative(op, "D", D);
  cpu::require(D % 2 == 0, op, "head size D = " + std::to_string(D) + " must be even");
  cpu::require(theta > 0.0, op, "theta = " + std::to_string(theta) + " must be > 0");
}

template <class A>
void launch(A* out, const A* inp, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
            double theta, std::int64_t position_offset, float direction, bool accumulate) {
  const std::int64_t work = B * T * H * (D / 2);
  if (work == 0) return;
  VRAMLAB_LAUNCH(rope_kernel<A>, blocks_for(work, kElementwiseBlockThreads),
                 kElementwiseBlockThreads, 0, 0)
  (out, inp, B, T, H, D, theta, position_offset, direction, accumulate);
}

}  // namespace

template <class A>
void rope_forward(A* out, const A* inp, int64_t B, int64_t T, int64_t H, int64_t D, double theta,
                  int64_t position_offset) {
  check_arguments("cuda::rope_forward", B, T, H, D, theta);
  launch(out, inp, B, T, H, D, theta, position_offset, 1.0f, false);
}

template <class A>
void rope_backward(A* dinp, const A* dout, int64_t B, int64_t T, int64_t H, int64_t D, double theta,
                   int64_t position_offset) {
  check_arguments("cuda::rope_backward", B, T, H, D, theta);
  launch(dinp, dout, B, T, H, D, theta, position_offset, -1.0f, true);
}

#define VRAMLAB_INSTANTIATE(A)                                                            \
  template void rope_forward<A>(A*, const A*, int64_t, int64_t, int64_t, int64_t, double, \
                                int64_t);                                                 \
  template void rope_backward<A>(A*, const A*, int64_t, int64_t, int64_t, int64_t, double, int64_t);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
