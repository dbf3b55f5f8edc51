// Row-wise softmax: rows in parallel, max / exp-sum / normalize passes vectorized.
#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {

void softmax_forward(float* out, const float* inp, int64_t N, int64_t C) {
  require_non_negative("softmax_forward", "N", N);
  require_non_negative("softmax_forward", "C", C);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = inp + row * C;
    float* y = out + row * C;
    float max_value = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max_value)
    for (int64_t c = 0; c < C; c++) max_value = x[c] > max_value ? x[c] : max_value;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < C; c++) {
      y[c] = fast_exp(x[c] - max_value);
      sum += y[c];
    }
    const float inv_sum = 1.0f / sum;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] *= inv_sum;
  }
}

void softmax_backward(float* dinp, const float* dout, const float* out, int64_t N, int64_t C) {
  require_non_negative("softmax_backward", "N", N);
  require_non_negative("softmax_backward", "C", C);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* dy = dout + row * C;
    const float* y = out + row * C;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < C; c++) dot += dy[c] * y[c];
    float* dx = dinp + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) dx[c] += y[c] * (dy[c] - dot);
  }
}

template <typename Real>
void softmax_forward_reference(Real* out, const Real* inp, int64_t N, int64_t C) {
  require_non_negative("softmax_forward_reference", "N", N);
  require_non_negative("softmax_forward_reference", "C", C);
  for (int64_t row = 0; row < N; row++) {
    const Real* x = inp + row * C;
    Real max_value = -std::numeric_limits<Real>::infinity();
    for (int64_t c = 0; c < C; c++) max_value = std::max(max_value, x[c]);
    Real sum = 0;
    for (int64_t c = 0; c < C; c++) sum += std::exp(x[c] - max_value);
    for (int64_t c = 0; c < C; c++) out[row * C + c] = std::exp(x[c] - max_value) / sum;
  }
}

template <typename Real>
void softmax_backward_reference(Real* dinp, const Real* dout, const Real* out, int64_t N,
                                int64_t C) {
  require_non_negative("softmax_backward_reference", "N", N);
  require_non_negative("softmax_backward_reference", "C", C);
  for (int64_t row = 0; row < N; row++) {
    Real dot = 0;
    for (int64_t c = 0; c < C; c++) dot += dout[row * C + c] * out[row * C + c];
    for (int64_t c = 0; c < C; c++) {
      dinp[row * C + c] += out[row * C + c] * (dout[row * C + c] - dot);
    }
  }
}

template void softmax_forward_reference<float>(float*, const float*, int64_t, int64_t);
template void softmax_forward_reference<double>(double*, const double*, int64_t, int64_t);
template void softmax_backward_reference<float>(float*, const float*, const float*, int64_t,
                                                int64_t);
template void softmax_backward_reference<double>(double*, const double*, const double*, int64_t,
                                                 int64_t);

}  // namespace vramlab::kernels::cpu
