// Linear-layer GEMMs split over OpenMP threads, single-threaded OpenBLAS per band (see
// parallel_linear.h).
#include "common/nn/parallel_linear.h"

#include <omp.h>

#include <climits>
#include <string>

#include "common/platform/errors.h"
#include "kernels/cpu/matmul.h"

namespace vramlab::nn {

namespace {

void check(int64_t N, int64_t C, int64_t OC) {
  if (N < 0 || C < 0 || OC < 0 || N > INT_MAX || C > INT_MAX || OC > INT_MAX ||
      N * C > INT64_MAX / 2)
    throw UsageError("linear: sizes N=" + std::to_string(N) + " C=" + std::to_string(C) +
                     " OC=" + std::to_string(OC) + " are out of OpenBLAS's range");
}

// Below this many multiply-adds a GEMM runs on one thread: waking the pool costs more than it
// saves.
constexpr int64_t kParallelMinFlops = int64_t{1} << 20;

// [begin, end) of band `index` out of `bands` over `total` items, bands a multiple of `align`.
void band(int64_t total, int64_t bands, int64_t index, int64_t align, int64_t& begin,
          int64_t& end) {
  const int64_t per = ((total + bands - 1) / bands + align - 1) / align * align;
  begin = index * per < total ? index * per : total;
  end = begin + per < total ? begin + per : total;
}

}  // namespace

void parallel_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                             int64_t N, int64_t C, int64_t OC) {
  check(N, C, OC);
  if (N == 0 || OC == 0) return;
#pragma omp parallel if (N * C * OC >= kParallelMinFlops)
  {
    int64_t begin, end;
    band(N, omp_get_num_threads(), omp_get_thread_num(), 8, begin, end);
    if (end > begin) {
      if (bias != nullptr) {
        for (int64_t row = begin; row < end; ++row) {
          float* out_row = out + row * OC;  // (OC)
#pragma omp simd
          for (int64_t o = 0; o < OC; ++o) out_row[o] = bias[o];
        }
      }
      kernels::cpu::sgemm(false, true, end - begin, OC, C, 1.0f, inp + begin * C, C, weight, C,
                          bias != nullptr ? 1.0f : 0.0f, out + begin * OC, OC);
    }
  }
}

void parallel_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                              const float* inp, const float* weight, int64_t N, int64_t C,
                              int64_t OC) {
  check(N, C, OC);
  if (N == 0 || OC == 0) return;
#pragma omp parallel if (N * C * OC >= kParallelMinFlops)
  {
    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    int64_t begin, end;
    if (dinp != nullptr) {
      band(N, threads, thread, 8, begin, end);
      if (end > begin)
        kernels::cpu::sgemm(false, false, end - begin, C, OC, 1.0f, dout + begin * OC, OC, weight,
                            C, 1.0f, dinp + begin * C, C);
    }
    band(OC, threads, thread, 16, begin, end);
    if (end > begin) {
      // dweight[begin:end] += dout[:, begin:end]ᵀ · inp
      kernels::cpu::sgemm(true, false, end - begin, C, N, 1.0f, dout + begin, OC, inp, C, 1.0f,
                          dweight + begin * C, C);
      if (dbias != nullptr) {
        for (int64_t row = 0; row < N; ++row) {
          const float* dout_row = dout + row * OC;  // (OC)
#pragma omp simd
          for (int64_t o = begin; o < end; ++o) dbias[o] += dout_row[o];
        }
      }
    }
  }
}

}  // namespace vramlab::nn
