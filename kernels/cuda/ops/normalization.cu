// LayerNorm and RMSNorm CUDA kernels, forward and backward.
//   v1: the CPU loop, one thread per row (and, for the weight/bias gradients, one thread per
//       column walking the rows in order).
//   v2: one warp per row with butterfly shuffle reductions (float4 loads of the row when C is a
//       multiple of 4 and the row is 16-byte aligned); weight/bias gradients reduced per 32-column
//       tile by 8 row lanes through shared memory, in a fixed order (deterministic, no atomics).
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;
using detail::kRowBlockThreads;
using detail::warp_sum;

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
__device__ float warp_row_sum(const float* x, std::int64_t C, bool vectorized) {
  const unsigned lane = threadIdx.x % 32;
  float partial = 0.0f;
  if (vectorized) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (std::int64_t i = lane; i < C / 4; i += 32) {
      const float4 q = x4[i];
      partial += (q.x + q.y) + (q.z + q.w);
    }
  } else {
    for (std::int64_t c = lane; c < C; c += 32) partial += x[c];
  }
  return warp_sum(partial);
}

// Σ (x − center)² over one row, by a warp.
__device__ float warp_row_squares(const float* x, float center, std::int64_t C, bool vectorized) {
  const unsigned lane = threadIdx.x % 32;
  float partial = 0.0f;
  if (vectorized) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (std::int64_t i = lane; i < C / 4; i += 32) {
      const float4 q = x4[i];
      const float a = q.x - center, b = q.y - center, c = q.z - center, d = q.w - center;
      partial += (a * a + b * b) + (c * c + d * d);
    }
  } else {
    for (std::int64_t c = lane; c < C; c += 32) partial += (x[c] - center) * (x[c] - center);
  }
  return warp_sum(partial);
}

// ---- LayerNorm forward ----

__global__ void layernorm_forward_v1_kernel(float* out, float* mean, float* rstd, const float* inp,
                                            const float* weight, const float* bias, std::int64_t N,
                                            std::int64_t C, float eps) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const float* x = inp + row * C;  // (C)
  float m = 0.0f;
  for (std::int64_t c = 0; c < C; c++) m += x[c];
  m /= static_cast<float>(C);
  float variance = 0.0f;
  for (std::int64_t c = 0; c < C; c++) variance += (x[c] - m) * (x[c] - m);
  variance /= static_cast<float>(C);
  const float s = 1.0f / sqrtf(variance + eps);
  for (std::int64_t c = 0; c < C; c++) out[row * C + c] = (x[c] - m) * s * weight[c] + bias[c];
  mean[row] = m;
  rstd[row] = s;
}

__global__ void layernorm_forward_v2_kernel(float* out, float* mean, float* rstd, const float* inp,
                                            const float* weight, const float* bias, std::int64_t N,
                                            std::int64_t C, float eps, bool vectorized) {
  const std::int64_t row = warp_row();
  if (row >= N) return;  // the whole warp leaves together
  const unsigned lane = threadIdx.x % 32;
  const float* x = inp + row * C;  // (C)
  const float m = warp_row_sum(x, C, vectorized) / static_cast<float>(C);
  const float variance = warp_row_squares(x, m, C, vectorized) / static_cast<float>(C);
  const float s = rsqrtf(variance + eps);
  for (std::int64_t c = lane; c < C; c += 32)
    out[row * C + c] = (x[c] - m) * s * weight[c] + bias[c];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// ---- LayerNorm backward ----

__global__ void layernorm_backward_input_v1_kernel(float* dinp, const float* dout, const float* inp,
                                                   const float* weight, const float* mean,
                                                   const float* rstd, std::int64_t N,
                                                   std::int64_t C) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const float* x = inp + row * C;    // (C)
  const float* dy = dout + row * C;  // (C)
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = (x[c] - mean[row]) * rstd[row];
    dnorm_mean += dy[c] * weight[c];
    dnorm_norm_mean += dy[c] * weight[c] * norm;
  }
  dnorm_mean /= static_cast<float>(C);
  dnorm_norm_mean /= static_cast<float>(C);
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = (x[c] - mean[row]) * rstd[row];
    dinp[row * C + c] += rstd[row] * (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
  }
}

__global__ void layernorm_backward_input_v2_kernel(float* dinp, const float* dout, const float* inp,
                                                   const float* weight, const float* mean,
                                                   const float* rstd, std::int64_t N,
                                                   std::int64_t C) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const float* x = inp + row * C;    // (C)
  const float* dy = dout + row * C;  // (C)
  const float m = mean[row], s = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) {
    const float dnorm = dy[c] * weight[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (x[c] - m) * s;
  }
  dnorm_mean = warp_sum(dnorm_mean) / static_cast<float>(C);
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / static_cast<float>(C);
  for (std::int64_t c = lane; c < C; c += 32) {
    const float norm = (x[c] - m) * s;
    dinp[row * C + c] += s * (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
  }
}

// dweight[c] += Σ_row dout·norm, dbias[c] += Σ_row dout (dbias may be nullptr: RMSNorm passes
// mean == nullptr and centers at 0).
__global__ void norm_parameter_grads_v1_kernel(float* dweight, float* dbias, const float* dout,
                                               const float* inp, const float* mean,
                                               const float* rstd, std::int64_t N, std::int64_t C) {
  const std::int64_t c = thread_row();
  if (c >= C) return;
  float dweight_sum = 0.0f, dbias_sum = 0.0f;
  for (std::int64_t row = 0; row < N; row++) {
    const float center = mean != nullptr ? mean[row] : 0.0f;
    const float dy = dout[row * C + c];
    dweight_sum += dy * (inp[row * C + c] - center) * rstd[row];
    dbias_sum += dy;
  }
  dweight[c] += dweight_sum;
  if (dbias != nullptr) dbias[c] += dbias_sum;
}

// Block (32, 8): column c = blockIdx.x·32 + threadIdx.x; lane y sums rows y, y+8, ...; the 8
// partials are added in order by lane y = 0.
__global__ void norm_parameter_grads_v2_kernel(float* dweight, float* dbias, const float* dout,
                                               const float* inp, const float* mean,
                                               const float* rstd, std::int64_t N, std::int64_t C) {
  VRAMLAB_SHARED(float, dweight_partial, [kColumnRowLanes][kColumnTile]);
  VRAMLAB_SHARED(float, dbias_partial, [kColumnRowLanes][kColumnTile]);
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  float dweight_sum = 0.0f, dbias_sum = 0.0f;
  if (c < C) {
    for (std::int64_t row = threadIdx.y; row < N; row += kColumnRowLanes) {
      const float center = mean != nullptr ? mean[row] : 0.0f;
      const float dy = dout[row * C + c];
      dweight_sum += dy * (inp[row * C + c] - center) * rstd[row];
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
  dweight[c] += dweight_sum;
  if (dbias != nullptr) dbias[c] += dbias_sum;
}

// ---- RMSNorm ----

__global__ void rmsnorm_forward_v1_kernel(float* out, float* rstd, const float* inp,
                                          const float* weight, std::int64_t N, std::int64_t C,
                                          float eps) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const float* x = inp + row * C;  // (C)
  float mean_square = 0.0f;
  for (std::int64_t c = 0; c < C; c++) mean_square += x[c] * x[c];
  mean_square /= static_cast<float>(C);
  const float s = 1.0f / sqrtf(mean_square + eps);
  for (std::int64_t c = 0; c < C; c++) out[row * C + c] = x[c] * s * weight[c];
  rstd[row] = s;
}

__global__ void rmsnorm_forward_v2_kernel(float* out, float* rstd, const float* inp,
                                          const float* weight, std::int64_t N, std::int64_t C,
                                          float eps, bool vectorized) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const float* x = inp + row * C;  // (C)
  const float s = rsqrtf(warp_row_squares(x, 0.0f, C, vectorized) / static_cast<float>(C) + eps);
  for (std::int64_t c = lane; c < C; c += 32) out[row * C + c] = x[c] * s * weight[c];
  if (lane == 0) rstd[row] = s;
}

__global__ void rmsnorm_backward_input_v1_kernel(float* dinp, const float* dout, const float* inp,
                                                 const float* weight, const float* rstd,
                                                 std::int64_t N, std::int64_t C) {
  const std::int64_t row = thread_row();
  if (row >= N) return;
  const float* x = inp + row * C;    // (C)
  const float* dy = dout + row * C;  // (C)
  float dnorm_norm_mean = 0.0f;
  for (std::int64_t c = 0; c < C; c++) dnorm_norm_mean += dy[c] * weight[c] * x[c] * rstd[row];
  dnorm_norm_mean /= static_cast<float>(C);
  for (std::int64_t c = 0; c < C; c++) {
    const float norm = x[c] * rstd[row];
    dinp[row * C + c] += rstd[row] * (dy[c] * weight[c] - norm * dnorm_norm_mean);
  }
}

__global__ void rmsnorm_backward_input_v2_kernel(float* dinp, const float* dout, const float* inp,
                                                 const float* weight, const float* rstd,
                                                 std::int64_t N, std::int64_t C) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const unsigned lane = threadIdx.x % 32;
  const float* x = inp + row * C;    // (C)
  const float* dy = dout + row * C;  // (C)
  const float s = rstd[row];
  float dnorm_norm_mean = 0.0f;
  for (std::int64_t c = lane; c < C; c += 32) dnorm_norm_mean += dy[c] * weight[c] * x[c] * s;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / static_cast<float>(C);
  for (std::int64_t c = lane; c < C; c += 32) {
    dinp[row * C + c] += s * (dy[c] * weight[c] - x[c] * s * dnorm_norm_mean);
  }
}

void check_sizes(const char* op, std::int64_t N, std::int64_t C) {
  cpu::require_non_negative(op, "N", N);
  cpu::require_non_negative(op, "C", C);
}

void launch_parameter_grads(float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* mean, const float* rstd, std::int64_t N, std::int64_t C,
                            KernelVersion version) {
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(norm_parameter_grads_v1_kernel, blocks_for(C, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dweight, dbias, dout, inp, mean, rstd, N, C);
  } else {
    VRAMLAB_LAUNCH(norm_parameter_grads_v2_kernel, blocks_for(C, kColumnTile),
                   dim3(kColumnTile, kColumnRowLanes), 0, 0)
    (dweight, dbias, dout, inp, mean, rstd, N, C);
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps, KernelVersion version) {
  check_sizes("cuda::layernorm_forward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(layernorm_forward_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (out, mean, rstd, inp, weight, bias, N, C, eps);
  } else {
    const bool vectorized = C % 4 == 0 && detail::aligned_16(inp);
    VRAMLAB_LAUNCH(layernorm_forward_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads, 0,
                   0)
    (out, mean, rstd, inp, weight, bias, N, C, eps, vectorized);
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int64_t C, KernelVersion version) {
  check_sizes("cuda::layernorm_backward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(layernorm_backward_input_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dinp, dout, inp, weight, mean, rstd, N, C);
  } else {
    VRAMLAB_LAUNCH(layernorm_backward_input_v2_kernel, blocks_for(N, kRowsPerBlock),
                   kRowBlockThreads, 0, 0)
    (dinp, dout, inp, weight, mean, rstd, N, C);
  }
  launch_parameter_grads(dweight, dbias, dout, inp, mean, rstd, N, C, version);
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps, KernelVersion version) {
  check_sizes("cuda::rmsnorm_forward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(rmsnorm_forward_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (out, rstd, inp, weight, N, C, eps);
  } else {
    const bool vectorized = C % 4 == 0 && detail::aligned_16(inp);
    VRAMLAB_LAUNCH(rmsnorm_forward_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads, 0, 0)
    (out, rstd, inp, weight, N, C, eps, vectorized);
  }
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C,
                      KernelVersion version) {
  check_sizes("cuda::rmsnorm_backward", N, C);
  if (N == 0 || C == 0) return;
  if (version == KernelVersion::v1) {
    VRAMLAB_LAUNCH(rmsnorm_backward_input_v1_kernel, blocks_for(N, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (dinp, dout, inp, weight, rstd, N, C);
  } else {
    VRAMLAB_LAUNCH(rmsnorm_backward_input_v2_kernel, blocks_for(N, kRowsPerBlock), kRowBlockThreads,
                   0, 0)
    (dinp, dout, inp, weight, rstd, N, C);
  }
  launch_parameter_grads(dweight, nullptr, dout, inp, nullptr, rstd, N, C, version);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
