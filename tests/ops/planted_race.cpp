// A column sum with its barrier missing (emulated only): the op harness's test shows that the
// harness's schedules expose it. The correct kernel is norm_parameter_grads_v2_kernel in
// kernels/cuda/ops/normalization.cu.
#include "tests/ops/planted_race.h"

#include "kernels/simt/simt.h"

namespace vramlab::ops_test {
namespace {

constexpr unsigned kTile = 32, kRowLanes = 8;

__global__ void column_sums_missing_barrier_kernel(float* dbias, const float* dout, int64_t N,
                                                   int64_t C) {
  VRAMLAB_SHARED(float, partial, [kRowLanes][kTile]);
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  float total = 0.0f;
  if (c < C) {
    for (int64_t row = threadIdx.y; row < N; row += kRowLanes) total += dout[row * C + c];
  }
  partial[threadIdx.y][threadIdx.x] = total;
  // The planted bug: __syncthreads() belongs here.
  if (threadIdx.y != 0 || c >= C) return;
  for (unsigned lane = 1; lane < kRowLanes; lane++) total += partial[lane][threadIdx.x];
  dbias[c] += total;
}

}  // namespace

void column_sums_missing_barrier(float* dbias, const float* dout, int64_t N, int64_t C) {
  const auto blocks = static_cast<unsigned>((C + kTile - 1) / kTile);
  VRAMLAB_LAUNCH(column_sums_missing_barrier_kernel, dim3(blocks), dim3(kTile, kRowLanes), 0, 0)
  (dbias, dout, N, C);
}

}  // namespace vramlab::ops_test
