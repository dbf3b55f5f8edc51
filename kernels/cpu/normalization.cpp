// LayerNorm and RMSNorm. Fast paths: rows in parallel for the forward and dinp, column blocks in
// parallel for dweight/dbias (each block sums the rows in order, so results are deterministic).
#include "kernels/cpu/normalization.h"

#include <cmath>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr int64_t kColumnBlock = 64;

void check_sizes(const char* op, int64_t N, int64_t C) {
  require_non_negative(op, "N", N);
  require_non_negative(op, "C", C);
}

}  // namespace

template <typename A>
void layernorm_forward(A* out, float* mean, float* rstd, const A* inp, const A* weight,
                       const A* bias, int64_t N, int64_t C, float eps) {
  check_sizes("layernorm_forward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const A* x = inp + row * C;  // (C)
    // Row statistics in double: a float sum of C values with a common offset loses about
    // √C·u of the offset in the mean, which (x - mean) then amplifies.
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < C; c++) sum += widen(x[c]);
    const float m = static_cast<float>(sum / static_cast<double>(C));
    double sum_squares = 0.0;
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < C; c++) {
      const double centered = static_cast<double>(widen(x[c])) - m;
      sum_squares += centered * centered;
    }
    const float s = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(C) + eps));
    A* y = out + row * C;  // (C)
#pragma omp simd
    for (int64_t c = 0; c < C; c++) {
      y[c] = narrow<A>((widen(x[c]) - m) * s * widen(weight[c]) + widen(bias[c]));
    }
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename A, typename G>
void layernorm_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C) {
  check_sizes("layernorm_backward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const A* x = inp + row * C;    // (C)
    const A* dy = dout + row * C;  // (C)
    const float m = mean[row], s = rstd[row];
    float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
    for (int64_t c = 0; c < C; c++) {
      const float dnorm = widen(dy[c]) * widen(weight[c]);
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * (widen(x[c]) - m) * s;
    }
    const float dnorm_mean = dnorm_sum / static_cast<float>(C);
    const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
    A* dx = dinp + row * C;  // (C)
#pragma omp simd
    for (int64_t c = 0; c < C; c++) {
      const float norm = (widen(x[c]) - m) * s;
      dx[c] = narrow<A>(widen(dx[c]) + s * (widen(dy[c]) * widen(weight[c]) - dnorm_mean -
                                            norm * dnorm_norm_mean));
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kColumnBlock - 1) / kColumnBlock; block++) {
    const int64_t begin = block * kColumnBlock;
    const int64_t end = begin + kColumnBlock < C ? begin + kColumnBlock : C;
    float dw[kColumnBlock] = {}, db[kColumnBlock] = {};
    for (int64_t row = 0; row < N; row++) {
      const A* x = inp + row * C;    // (C)
      const A* dy = dout + row * C;  // (C)
      const float m = mean[row], s = rstd[row];
#pragma omp simd
      for (int64_t c = begin; c < end; c++) {
        dw[c - begin] += widen(dy[c]) * (widen(x[c]) - m) * s;
        db[c - begin] += widen(dy[c]);
      }
    }
    for (int64_t c = begin; c < end; c++) {
      dweight[c] = narrow<G>(widen(dweight[c]) + dw[c - begin]);
      dbias[c] = narrow<G>(widen(dbias[c]) + db[c - begin]);
    }
  }
}

template <typename A>
void rmsnorm_forward(A* out, float* rstd, const A* inp, const A* weight, int64_t N, int64_t C,
                     float eps) {
  check_sizes("rmsnorm_forward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const A* x = inp + row * C;  // (C)
    double sum_squares = 0.0;    // in double, like the LayerNorm statistics
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < C; c++) {
      const float value = widen(x[c]);
      sum_squares += static_cast<double>(value) * value;
    }
    const float s = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(C) + eps));
    A* y = out + row * C;  // (C)
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] = narrow<A>(widen(x[c]) * s * widen(weight[c]));
    rstd[row] = s;
  }
}

template <typename A, typename G>
void rmsnorm_backward(A* dinp, G* dweight, const A* dout, const A* inp, const A* weight,
                      const float* rstd, int64_t N, int64_t C) {
  check_sizes("rmsnorm_backward", N, C);
  if (C == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const A* x = inp + row * C;    // (C)
    const A* dy = dout + row * C;  // (C)
    const float s = rstd[row];
    float dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_norm_sum)
    for (int64_t c = 0; c < C; c++) {
      dnorm_norm_sum += widen(dy[c]) * widen(weight[c]) * widen(x[c]) * s;
    }
    const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
    A* dx = dinp + row * C;  // (C)
#pragma omp simd
    for (int64_t c = 0; c < C; c++) {
      dx[c] = narrow<A>(widen(dx[c]) +
                        s * (widen(dy[c]) * widen(weight[c]) - widen(x[c]) * s * dnorm_norm_mean));
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kColumnBlock - 1) / kColumnBlock; block++) {
    const int64_t begin = block * kColumnBlock;
    const int64_t end = begin + kColumnBlock < C ? begin + kColumnBlock : C;
    float dw[kColumnBlock] = {};
    for (int64_t row = 0; row < N; row++) {
      const A* x = inp + row * C;    // (C)
      const A* dy = dout + row * C;  // (C)
      const float s = rstd[row];
#pragma omp simd
      for (int64_t c = begin; c < end; c++) dw[c - begin] += widen(dy[c]) * widen(x[c]) * s;
    }
    for (int64_t c = begin; c < end; c++) dweight[c] = narrow<G>(widen(dweight[c]) + dw[c - begin]);
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps) {
  layernorm_forward<float>(out, mean, rstd, inp, weight, bias, N, C, eps);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int64_t C) {
  layernorm_backward<float, float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps) {
  rmsnorm_forward<float>(out, rstd, inp, weight, N, C, eps);
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C) {
  rmsnorm_backward<float, float>(dinp, dweight, dout, inp, weight, rstd, N, C);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A, G)                                                        \
  template void layernorm_backward<A, G>(A*, G*, G*, const A*, const A*, const A*, const float*, \
                                         const float*, int64_t, int64_t);                        \
  template void rmsnorm_backward<A, G>(A*, G*, const A*, const A*, const A*, const float*,       \
                                       int64_t, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float, float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t, bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t, float)
VRAMLAB_INSTANTIATE_STORAGE(f16_t, f16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t, float)
#undef VRAMLAB_INSTANTIATE_STORAGE
#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                          \
  template void layernorm_forward<A>(A*, float*, float*, const A*, const A*, const A*, int64_t, \
                                     int64_t, float);                                           \
  template void rmsnorm_forward<A>(A*, float*, const A*, const A*, int64_t, int64_t, float);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

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
