// LayerNorm and RMSNorm. Fast paths: rows in parallel for the forward and dinp, column blocks in
// parallel for dweight/dbias (each block sums the rows in order, so results are deterministic).
#include "kernels/cpu/normalization.h"

#include <cmath>

#include "kernels/cpu/kernel_checks.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr int64_t kColumnBlock = 64;

void check_sizes(const char* op, int64_t N, int64_t C) {
  require_non_negative(op, "N", N);
  require_non_negative(op, "C", C);
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps) {
  check_sizes("layernorm_forward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = inp + row * C;
    // Row statistics in double: a float sum of C values with a common offset loses about
    // √C·u of the offset in the mean, which (x - mean) then amplifies.
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < C; c++) sum += x[c];
    const float m = static_cast<float>(sum / static_cast<double>(C));
    double sum_squares = 0.0;
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < C; c++) {
      const double centered = static_cast<double>(x[c]) - m;
      sum_squares += centered * centered;
    }
    const float s = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(C) + eps));
    float* y = out + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[row] = m;
    rstd[row] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int64_t C) {
  check_sizes("layernorm_backward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = inp + row * C;
    const float* dy = dout + row * C;
    const float m = mean[row], s = rstd[row];
    float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
    for (int64_t c = 0; c < C; c++) {
      const float dnorm = dy[c] * weight[c];
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * (x[c] - m) * s;
    }
    const float dnorm_mean = dnorm_sum / static_cast<float>(C);
    const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
    float* dx = dinp + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) {
      const float norm = (x[c] - m) * s;
      dx[c] += s * (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kColumnBlock - 1) / kColumnBlock; block++) {
    const int64_t begin = block * kColumnBlock;
    const int64_t end = begin + kColumnBlock < C ? begin + kColumnBlock : C;
    float dw[kColumnBlock] = {}, db[kColumnBlock] = {};
    for (int64_t row = 0; row < N; row++) {
      const float* x = inp + row * C;
      const float* dy = dout + row * C;
      const float m = mean[row], s = rstd[row];
#pragma omp simd
      for (int64_t c = begin; c < end; c++) {
        dw[c - begin] += dy[c] * (x[c] - m) * s;
        db[c - begin] += dy[c];
      }
    }
    for (int64_t c = begin; c < end; c++) {
      dweight[c] += dw[c - begin];
      dbias[c] += db[c - begin];
    }
  }
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps) {
  check_sizes("rmsnorm_forward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = inp + row * C;
    double sum_squares = 0.0;  // in double, like the LayerNorm statistics
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < C; c++) sum_squares += static_cast<double>(x[c]) * x[c];
    const float s = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(C) + eps));
    float* y = out + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] = x[c] * s * weight[c];
    rstd[row] = s;
  }
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C) {
  check_sizes("rmsnorm_backward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = inp + row * C;
    const float* dy = dout + row * C;
    const float s = rstd[row];
    float dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_norm_sum)
    for (int64_t c = 0; c < C; c++) dnorm_norm_sum += dy[c] * weight[c] * x[c] * s;
    const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
    float* dx = dinp + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) {
      dx[c] += s * (dy[c] * weight[c] - x[c] * s * dnorm_norm_mean);
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kColumnBlock - 1) / kColumnBlock; block++) {
    const int64_t begin = block * kColumnBlock;
    const int64_t end = begin + kColumnBlock < C ? begin + kColumnBlock : C;
    float dw[kColumnBlock] = {};
    for (int64_t row = 0; row < N; row++) {
      const float* x = inp + row * C;
      const float* dy = dout + row * C;
      const float s = rstd[row];
#pragma omp simd
      for (int64_t c = begin; c < end; c++) dw[c - begin] += dy[c] * x[c] * s;
    }
    for (int64_t c = begin; c < end; c++) dweight[c] += dw[c - begin];
  }
}

template <typename Real>
void layernorm_forward_reference(Real* out, Real* mean, Real* rstd, const Real* inp,
                                 const Real* weight, const Real* bias, int64_t N, int64_t C,
                                 Real eps) {
  check_sizes("layernorm_forward_reference", N, C);
  if (C == 0) return;
  for (int64_t row = 0; row < N; row++) {
    const Real* x = inp + row * C;
    Real m = 0;
    for (int64_t c = 0; c < C; c++) m += x[c];
    m /= static_cast<Real>(C);
    Real variance = 0;
    for (int64_t c = 0; c < C; c++) variance += (x[c] - m) * (x[c] - m);
    variance /= static_cast<Real>(C);
    const Real s = Real(1) / std::sqrt(variance + eps);
    for (int64_t c = 0; c < C; c++) out[row * C + c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename Real>
void layernorm_backward_reference(Real* dinp, Real* dweight, Real* dbias, const Real* dout,
                                  const Real* inp, const Real* weight, const Real* mean,
                                  const Real* rstd, int64_t N, int64_t C) {
  check_sizes("layernorm_backward_reference", N, C);
  if (C == 0) return;
  for (int64_t row = 0; row < N; row++) {
    const Real* x = inp + row * C;
    const Real* dy = dout + row * C;
    Real dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t c = 0; c < C; c++) {
      const Real norm = (x[c] - mean[row]) * rstd[row];
      dnorm_mean += dy[c] * weight[c];
      dnorm_norm_mean += dy[c] * weight[c] * norm;
    }
    dnorm_mean /= static_cast<Real>(C);
    dnorm_norm_mean /= static_cast<Real>(C);
    for (int64_t c = 0; c < C; c++) {
      const Real norm = (x[c] - mean[row]) * rstd[row];
      dinp[row * C + c] += rstd[row] * (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
      dweight[c] += dy[c] * norm;
      dbias[c] += dy[c];
    }
  }
}

template <typename Real>
void rmsnorm_forward_reference(Real* out, Real* rstd, const Real* inp, const Real* weight,
                               int64_t N, int64_t C, Real eps) {
  check_sizes("rmsnorm_forward_reference", N, C);
  if (C == 0) return;
  for (int64_t row = 0; row < N; row++) {
    const Real* x = inp + row * C;
    Real mean_square = 0;
    for (int64_t c = 0; c < C; c++) mean_square += x[c] * x[c];
    mean_square /= static_cast<Real>(C);
    const Real s = Real(1) / std::sqrt(mean_square + eps);
    for (int64_t c = 0; c < C; c++) out[row * C + c] = x[c] * s * weight[c];
    rstd[row] = s;
  }
}

template <typename Real>
void rmsnorm_backward_reference(Real* dinp, Real* dweight, const Real* dout, const Real* inp,
                                const Real* weight, const Real* rstd, int64_t N, int64_t C) {
  check_sizes("rmsnorm_backward_reference", N, C);
  if (C == 0) return;
  for (int64_t row = 0; row < N; row++) {
    const Real* x = inp + row * C;
    const Real* dy = dout + row * C;
    Real dnorm_norm_mean = 0;
    for (int64_t c = 0; c < C; c++) dnorm_norm_mean += dy[c] * weight[c] * x[c] * rstd[row];
    dnorm_norm_mean /= static_cast<Real>(C);
    for (int64_t c = 0; c < C; c++) {
      const Real norm = x[c] * rstd[row];
      dinp[row * C + c] += rstd[row] * (dy[c] * weight[c] - norm * dnorm_norm_mean);
      dweight[c] += dy[c] * norm;
    }
  }
}

#define VRAMLAB_INSTANTIATE(Real)                                                                  \
  template void layernorm_forward_reference<Real>(Real*, Real*, Real*, const Real*, const Real*,   \
                                                  const Real*, int64_t, int64_t, Real);            \
  template void layernorm_backward_reference<Real>(Real*, Real*, Real*, const Real*, const Real*,  \
                                                   const Real*, const Real*, const Real*, int64_t, \
                                                   int64_t);                                       \
  template void rmsnorm_forward_reference<Real>(Real*, Real*, const Real*, const Real*, int64_t,   \
                                                int64_t, Real);                                    \
  template void rmsnorm_backward_reference<Real>(Real*, Real*, const Real*, const Real*,           \
                                                 const Real*, const Real*, int64_t, int64_t);
VRAMLAB_INSTANTIATE(float)
VRAMLAB_INSTANTIATE(double)
#undef VRAMLAB_INSTANTIATE

}  // namespace vramlab::kernels::cpu
