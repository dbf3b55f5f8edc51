// LayerNorm and RMSNorm CUDA kernels, forward and backward.
//   v1: the CPU loop, one thread per row (and, for the weight/bias gradients, one thread per
//       column walking the rows in order).
//   v2: one warp per row with butterfly shuffle reductions (float4 loads of the row when C is a
//       multiple of 4 and the row is 16-byte aligned); weight/bias gradients reduced per 32-column
//       tile by 8 row lanes through shared memory, in a fixed order (deterministic, no atomics).
// Storage types: inputs (A) widened to f32 as they are read, outputs rounded once as they are
// written (mean and rstd stay f32); weight/bias gradients are G. The vectorized loads read four
// elements at once (a float4, or 8 bytes of 16-bit values) when the rows are aligned to that.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;
using detail::load_quad;
using detail::narrow;
using detail::warp_sum;
using detail::widen;

constexpr unsigned kRowsPerBlock = kRowBlockThreads / 32;
constexpr unsigned kColumnTile = 32;     // columns per block of the parameter-gradient kernels
constexpr unsigned kColumnRowLanes = 8;  // rows summed in parallel per column

__device__ std::int64_t thread_row() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::int64_t warp_row() {
  return static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
}

// Σ x over one row, by the 32 lanes of a warp; float4 loads when `vectorized`.
template <class A>
__device__ float warp_row_sum(const A* x, std::int64_t C, bool vectorized) {
  const unsigned lane = threadIdx.x % 32;
  float partial = 0.0f;
  if (vectorized) {
    for (std::int64_t i = lane; i < C / 4; i += 32) {
      const float4 q = load_quad(x, i);
      partial += (q.x + q.y) + (q.z + q.w);
    }
  } else {
    for (std::int64_t c = lane; c < C; c += 32) partial += widen(x[c]);
  }
  return warp_sum(partial);
}

// Σ (x − center)² over one row, by a warp.
template <class A>
__device__ float warp_row_squares(const A* x, float center, std::int64_t C, bool vectorized) {
  const unsigned lane = threadIdx.x % 32;
  float partial = 0.0f;
  if (vectorized) {
    for (std::int64_t i = lane; i < C / 4; i += 32) {
      const float4 q = load_quad(x, i);
      const float a = q.x - center, b = q.y - center, c = q.z - center, d = q.w - center;
      partial += (a * a + b * b) + (c * c + d * d);
    }
  } else {
    for (std::int64_t c = lane; c < C; c += 32) {
      const float value = widen(x[c]);
      partial += (value - center) * (value - center);
    }
  }
  return warp_sum(partial);
}

// ---- LayerNorm forward ----

template <class A>
__global__ void layernorm_forward_v1_kernel(A* out, float* mean, float* rstd, const A* inp,
                                            const A* weight, const A* bias, std::int64_t N,
                                            std::int64_t C, float eps) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const A* x = inp + row * C;  // (C)
  float m = 0.0f;
  for (std::int64_t c = 0; c < C; c++) m += widen(x[c]);
  m /= static_cast<float>(C);
  float variance = 0.0f;
  for (std::int64_t c = 0; c < C; c++) variance += (widen(x[c]) - m) * (widen(x[c]) - m);
  variance /= static_cast<float>(C);
  const float s = 1.0f / sqrtf(variance + eps);
  for (std::int64_t c = 0; c < C; c++) {
    out[row * C + c] = narrow<A>((widen(x[c]) - m) * s * widen(weight[c]) + widen(bias[c]));
  }
  mean[row] = m;
  rstd[row] = s;
}

template <class A>
__global__ void layernorm_forward_v2_kernel(A* out, float* mean, float* rstd, const A* inp,
                                            const A* weight, const A* bias, std::int64_t N,
                                            std::int64_t C, float eps, bool vectorized) {
  const std::int64_t row = warp_row();
  if (row >= N) return;  // the whole warp leaves together
  const unsigned lane = threadIdx.x % 32;
  const A* x = inp + row * C;  // (C)
  const float m = warp_row_sum(x, C, vectorized) / static_cast<float>(C);
  const float variance = warp_row_squares(x, m, C, vectorized) / static_cast<float>(C);
  const float s = rsqrtf(variance + eps);
  for (std::int64_t c = lane; c < C; c += 32) {
    out[row * C + c] = narrow<A>((widen(x[c]) - m) * s * widen(weight[c]) + widen(bias[c]));
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// ---- LayerNorm backward ----

template <class A>
__global__ void layernorm_backward_input_v1_kernel(A* dinp, const A* dout, const A* inp,
                                                   const A* weight, const float* mean,
                                                   const float* rstd, std::int64_t N,
                                                   std::int64_t C) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const A* x = inp + row * C;    // (C)
  const A* dy = dout + row * C;  // (C)
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = (widen(x[c]) - mean[row]) * rstd[row];
    dnorm_mean += widen(dy[c]) * widen(weight[c]);
    dnorm_norm_mean += widen(dy[c]) * widen(weight[c]) * norm;
  }
  dnorm_mean /= static_cast<float>(C);
  dnorm_norm_mean /= static_cast<float>(C);
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = (widen(x[c]) - mean[row]) * rstd[row];
    const float contribution =
        rstd[row] * (widen(dy[c]) * widen(weight[c]) - dnorm_mean - norm * dnorm_norm_mean);
    dinp[row * C + c] = narrow<A>(widen(dinp[row * C + c]) + contribution);
  }
}

template <class A>
__global__ void layernorm_backward_input_v2_kernel(A* dinp, const A* dout, const A* inp,
                                                   const A* weight, const float* mean,
                                                   const float* rstd, std::int64_t N,
                                                   std::int64_t C) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const A* x = inp + row * C;    // (C)
  const A* dy = dout + row * C;  // (C)
  const float m = mean[row], s = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) {
    const float dnorm = widen(dy[c]) * widen(weight[c]);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (widen(x[c]) - m) * s;
  }
  dnorm_mean = warp_sum(dnorm_mean) / static_cast<float>(C);
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / static_cast<float>(C);
  for (std::int64_t c = lane; c < C; c += 32) {
    const float norm = (widen(x[c]) - m) * s;
    const float contribution =
        s * (widen(dy[c]) * widen(weight[c]) - dnorm_mean - norm * dnorm_norm_mean);
    dinp[row * C + c] = narrow<A>(widen(dinp[row * C + c]) + contribution);
  }
}

// dweight[c] += Σ_row dout·norm, dbias[c] += Σ_row dout (dbias may be nullptr: RMSNorm passes
// mean == nullptr and centers at 0).
template <class A, class G>
__global__ void norm_parameter_grads_v1_kernel(G* dweight, G* dbias, const A* dout, const A* inp,
                                               const float* mean, const float* rstd, std::int64_t N,
                                               std::int64_t C) {
  const std::int64_t c = thread_row();
  if (c >= C) return;
  float dweight_sum = 0.0f, dbias_sum = 0.0f;
  for (std::int64_t row = 0; row < N; row++) {
    const float center = mean != nullptr ? mean[row] : 0.0f;
    const float dy = widen(dout[row * C + c]);
    dweight_sum += dy * (widen(inp[row * C + c]) - center) * rstd[row];
    dbias_sum += dy;
  }
  dweight[c] = narrow<G>(widen(dweight[c]) + dweight_sum);
  if (dbias != nullptr) dbias[c] = narrow<G>(widen(dbias[c]) + dbias_sum);
}

// Block (32, 8): column c = blockIdx.x·32 + threadIdx.x; lane y sums rows y, y+8, ...; the 8
// partials are added in order by lane y = 0.
template <class A, class G>
__global__ void norm_parameter_grads_v2_kernel(G* dweight, G* dbias, const A* dout, const A* inp,
                                               const float* mean, const float* rstd, std::int64_t N,
                                               std::int64_t C) {
  VRAMLAB_SHARED(float, dweight_partial, [kColumnRowLanes][kColumnTile]);
  VRAMLAB_SHARED(float, dbias_partial, [kColumnRowLanes][kColumnTile]);
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  float dweight_sum = 0.0f, dbias_sum = 0.0f;
  if (c < C) {
    for (std::int64_t row = threadIdx.y; row < N; row += kColumnRowLanes) {
      const float center = mean != nullptr ? mean[row] : 0.0f;
      const float dy = widen(dout[row * C + c]);
      dweight_sum += dy * (widen(inp[row * C + c]) - center) * rstd[row];
      dbias_sum += dy;
    }
  }
  dweight_partial[threadIdx.y][threadIdx.x] = dweight_sum;
  dbias_partial[threadIdx.y][threadIdx.x] = dbias_sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (unsigned lane = 1; lane < kColumnRowLanes; lane++) {
    dweight_sum += dweight_partial[lane][threadIdx.x];
    dbias_sum += dbias_partial[lane][threadIdx.x];
  }
  dweight[c] = narrow<G>(widen(dweight[c]) + dweight_sum);
  if (dbias != nullptr) dbias[c] = narrow<G>(widen(dbias[c]) + dbias_sum);
}

// ---- RMSNorm ----

template <class A>
__global__ void rmsnorm_forward_v1_kernel(A* out, float* rstd, const A* inp, const A* weight,
                                          std::int64_t N, std::int64_t C, float eps) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const A* x = inp + row * C;  // (C)
  float mean_square = 0.0f;
  for (std::int64_t c = 0; c < C; c++) mean_square += widen(x[c]) * widen(x[c]);
  mean_square /= static_cast<float>(C);
  const float s = 1.0f / sqrtf(mean_square + eps);
  for (std::int64_t c = 0; c < C; c++) {
    out[row * C + c] = narrow<A>(widen(x[c]) * s * widen(weight[c]));
  }
  rstd[row] = s;
}

template <class A>
__global__ void rmsnorm_forward_v2_kernel(A* out, float* rstd, const A* inp, const A* weight,
                                          std::int64_t N, std::int64_t C, float eps,
                                          bool vectorized) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const A* x = inp + row * C;  // (C)
  const float s = rsqrtf(warp_row_squares(x, 0.0f, C, vectorized) / static_cast<float>(C) + eps);
  for (std::int64_t c = lane; c < C; c += 32) {
    out[row * C + c] = narrow<A>(widen(x[c]) * s * widen(weight[c]));
  }
  if (lane == 0) rstd[row] = s;
}

template <class A>
__global__ void rmsnorm_backward_input_v1_kernel(A* dinp, const A* dout, const A* inp,
                                                 const A* weight, const float* rstd, std::int64_t N,
                                                 std::int64_t C) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const A* x = inp + row * C;    // (C)
  const A* dy = dout + row * C;  // (C)
  float dnorm_norm_mean = 0.0f;
  for (std::int64_t c = 0; c < C; c++) {
    dnorm_norm_mean += widen(dy[c]) * widen(weight[c]) * widen(x[c]) * rstd[row];
  }
  dnorm_norm_mean /= static_cast<float>(C);
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = widen(x[c]) * rstd[row];
    const float contribution =
        rstd[row] * (widen(dy[c]) * widen(weight[c]) - norm * dnorm_norm_mean);
    dinp[row * C + c] = narrow<A>(widen(dinp[row * C + c]) + contribution);
  }
}

template <class A>
__global__ void rmsnorm_backward_input_v2_kernel(A* dinp, const A* dout, const A* inp,
                                                 const A* weight, const float* rstd, std::int64_t N,
                                                 std::int64_t C) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const A* x = inp + row * C;    // (C)
  const A* dy = dout + row * C;  // (C)
  const float s = rstd[row];
  float dnorm_norm_mean = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) {
    dnorm_norm_mean += widen(dy[c]) * widen(weight[c]) * widen(x[c]) * s;
  }
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / static_cast<float>(C);
  for (std::int64_t c = lane; c < C; c += 32) {
    const float contribution =
        s * (widen(dy[c]) * widen(weight[c]) - widen(x[c]) * s * dnorm_norm_mean);
    dinp[row * C + c] = narrow<A>(widen(dinp[row * C + c]) + contribution);
  }
}

void check_sizes(const char* op, std::int64_t N, std::int64_t C) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "C", C);
}

template <class A, class G>
void launch_parameter_grads(G* dweight, G* dbias, const A* dout, const A* inp, const float* mean,
                            const float* rstd, std::int64_t N, std::int64_t C,
                            KernelVersion version) {
  if (version == KernelVersion::v1) {
    auto* const kernel = norm_parameter_grads_v1_kernel<A, G>;
    VRAMLAB_LAUNCH(kernel, blocks_for(C, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
    (dweight, dbias, dout, inp, mean, rstd, N, C);
  } else {
    auto* const kernel = norm_parameter_grads_v2_kernel<A, G>;
    VRAMLAB_LAUNCH(kernel, blocks_for(C, kColumnTile), dim3(kColumnTile, kColumnRowLanes), 0, 0)
    (dweight, dbias, dout, inp, mean, rstd, N, C);
  }
}

// Four elements per vector load need C a multiple of 4 and the rows aligned to four elements.
template <class A>
bool vectorizable(const A* inp, std::int64_t C) {
  return C % 4 == 0 && detail::aligned_to(inp, detail::kQuadBytes<A>);
}

}  // namespace

template <class A>
void layernorm_forward(A* out, float* mean, float* rstd, const A* inp, const A* weight,
                       const A* bias, int64_t N, int64_t C, float eps, KernelVersion version) {
  check_sizes("cuda::layernorm_forward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(layernorm_forward_v1_kernel<A>, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (out, mean, rstd, inp, weight, bias, N, C, eps);
  } else {
    VRAMLAB_LAUNCH(layernorm_forward_v2_kernel<A>, blocks_for(N, kRowsPerBlock), kRowBlockThreads,
                   0, 0)
    (out, mean, rstd, inp, weight, bias, N, C, eps, vectorizable(inp, C));
  }
}

template <class A, class G>
void layernorm_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C,
                        KernelVersion version) {
  check_sizes("cuda::layernorm_backward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(layernorm_backward_input_v1_kernel<A>, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dinp, dout, inp, weight, mean, rstd, N, C);
  } else {
    VRAMLAB_LAUNCH(layernorm_backward_input_v2_kernel<A>, blocks_for(N, kRowsPerBlock),
                   kRowBlockThreads, 0, 0)
    (dinp, dout, inp, weight, mean, rstd, N, C);
  }
  launch_parameter_grads(dweight, dbias, dout, inp, mean, rstd, N, C, version);
}

template <class A>
void rmsnorm_forward(A* out, float* rstd, const A* inp, const A* weight, int64_t N, int64_t C,
                     float eps, KernelVersion version) {
  check_sizes("cuda::rmsnorm_forward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(rmsnorm_forward_v1_kernel<A>, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (out, rstd, inp, weight, N, C, eps);
  } else {
    VRAMLAB_LAUNCH(rmsnorm_forward_v2_kernel<A>, blocks_for(N, kRowsPerBlock), kRowBlockThreads, 0,
                   0)
    (out, rstd, inp, weight, N, C, eps, vectorizable(inp, C));
  }
}

template <class A, class G>
void rmsnorm_backward(A* dinp, G* dweight, const A* dout, const A* inp, const A* weight,
                      const float* rstd, int64_t N, int64_t C, KernelVersion version) {
  check_sizes("cuda::rmsnorm_backward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(rmsnorm_backward_input_v1_kernel<A>, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dinp, dout, inp, weight, rstd, N, C);
  } else {
    VRAMLAB_LAUNCH(rmsnorm_backward_input_v2_kernel<A>, blocks_for(N, kRowsPerBlock),
                   kRowBlockThreads, 0, 0)
    (dinp, dout, inp, weight, rstd, N, C);
  }
  launch_parameter_grads<A, G>(dweight, nullptr, dout, inp, nullptr, rstd, N, C, version);
}

#define VRAMLAB_INSTANTIATE(A)                                                                  \
  template void layernorm_forward<A>(A*, float*, float*, const A*, const A*, const A*, int64_t, \
                                     int64_t, float, KernelVersion);                            \
  template void rmsnorm_forward<A>(A*, float*, const A*, const A*, int64_t, int64_t, float,     \
                                   KernelVersion);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE
#define VRAMLAB_INSTANTIATE(A, G)                                                                \
  template void layernorm_backward<A, G>(A*, G*, G*, const A*, const A*, const A*, const float*, \
                                         const float*, int64_t, int64_t, KernelVersion);         \
  template void rmsnorm_backward<A, G>(A*, G*, const A*, const A*, const A*, const float*,       \
                                       int64_t, int64_t, KernelVersion);
VRAMLAB_FOR_EACH_OP_TYPES(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
