// Linear-layer GEMMs split in bands over OpenMP threads, single-threaded OpenBLAS per band (see
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

// Note [Bands fixed by the shape]
// Why: fit_threads_to_free_cores() changes the thread count from one kernel call to the next as
// other processes come and go, and an OpenBLAS product of a band of rows rounds its sums in an
// order that depends on the band (which rows fall in its micro-kernel's edge tiles). Bands made
// one per thread gave a busy machine other bits than an idle one.
// How: the bands depend on the shape alone: kBands of them (fewer when a band would be smaller
// than kMinBandItems), and the threads there are take them in turn. kBands is a multiple of the
// usual core counts so that they share the bands evenly, and small enough that each band stays a
// large product (OpenBLAS packs the shared operand once per call).
constexpr int64_t kBands = 8;
constexpr int64_t kMinBandItems = 32;

// How many bands `total` items are cut into (at least one).
int64_t band_count(int64_t total, int64_t align) {
  const int64_t smallest = (kMinBandItems + align - 1) / align * align;
  const int64_t fit = (total + smallest - 1) / smallest;
  return fit < 1 ? 1 : (fit < kBands ? fit : kBands);
}

}  // namespace

void parallel_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                             int64_t N, int64_t C, int64_t OC) {
  check(N, C, OC);
  if (N == 0 || OC == 0) return;
  const int64_t row_bands = band_count(N, 8);
#pragma omp parallel for schedule(static) if (N * C * OC >= kParallelMinFlops)
  for (int64_t index = 0; index < row_bands; ++index) {
    int64_t begin, end;
    band(N, row_bands, index, 8, begin, end);
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
  const int64_t row_bands = band_count(N, 8), feature_bands = band_count(OC, 16);
#pragma omp parallel if (N * C * OC >= kParallelMinFlops)
  {
    if (dinp != nullptr) {
#pragma omp for schedule(static) nowait
      for (int64_t index = 0; index < row_bands; ++index) {
        int64_t begin, end;
        band(N, row_bands, index, 8, begin, end);
        if (end > begin)
          kernels::cpu::sgemm(false, false, end - begin, C, OC, 1.0f, dout + begin * OC, OC, weight,
                              C, 1.0f, dinp + begin * C, C);
      }
    }
#pragma omp for schedule(static)
    for (int64_t index = 0; index < feature_bands; ++index) {
      int64_t begin, end;
      band(OC, feature_bands, index, 16, begin, end);
      if (end <= begin) continue;
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
