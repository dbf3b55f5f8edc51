// Residual add, bias add and scaling: memory-bound loops, parallel over fixed static chunks.
#include "kernels/cpu/elementwise.h"

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {

template <typename A>
void residual_forward(A* out, const A* a, const A* b, int64_t n) {
  require_non_negative("residual_forward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = narrow<A>(widen(a[i]) + widen(b[i]));
}
template void residual_forward<float>(float*, const float*, const float*, int64_t);
template void residual_forward<bf16_t>(bf16_t*, const bf16_t*, const bf16_t*, int64_t);
template void residual_forward<f16_t>(f16_t*, const f16_t*, const f16_t*, int64_t);

void residual_forward(float* out, const float* a, const float* b, int64_t n) {
  residual_forward<float>(out, a, b, n);
}

void residual_backward(float* da, float* db, const float* dout, int64_t n) {
  require_non_negative("residual_backward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void bias_add_forward(float* x, const float* bias, int64_t N, int64_t C) {
  require_non_negative("bias_add_forward", "N", N);
  require_non_negative("bias_add_forward", "C", C);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    float* x_row = x + row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) x_row[c] += bias[c];
  }
}

void bias_add_backward(float* dbias, const float* dout, int64_t N, int64_t C) {
  require_non_negative("bias_add_backward", "N", N);
  require_non_negative("bias_add_backward", "C", C);
  constexpr int64_t kBlock = 64;
  // Each thread owns a block of columns and adds the rows in order: no atomics, deterministic.
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kBlock - 1) / kBlock; block++) {
    const int64_t begin = block * kBlock;
    const int64_t end = begin + kBlock < C ? begin + kBlock : C;
    float sums[kBlock] = {};
    for (int64_t row = 0; row < N; row++) {
      const float* dout_row = dout + row * C;
#pragma omp simd
      for (int64_t c = begin; c < end; c++) sums[c - begin] += dout_row[c];
    }
    for (int64_t c = begin; c < end; c++) dbias[c] += sums[c - begin];
  }
}

void scale_forward(float* out, const float* inp, float scale, int64_t n) {
  require_non_negative("scale_forward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = scale * inp[i];
}

void scale_backward(float* dinp, const float* dout, float scale, int64_t n) {
  require_non_negative("scale_backward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) dinp[i] += scale * dout[i];
}

template <typename Real>
void residual_forward_reference(Real* out, const Real* a, const Real* b, int64_t n) {
  require_non_negative("residual_forward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

template <typename Real>
void residual_backward_reference(Real* da, Real* db, const Real* dout, int64_t n) {
  require_non_negative("residual_backward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

template <typename Real>
void bias_add_forward_reference(Real* x, const Real* bias, int64_t N, int64_t C) {
  require_non_negative("bias_add_forward_reference", "N", N);
  require_non_negative("bias_add_forward_reference", "C", C);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t c = 0; c < C; c++) x[row * C + c] += bias[c];
  }
}

template <typename Real>
void bias_add_backward_reference(Real* dbias, const Real* dout, int64_t N, int64_t C) {
  require_non_negative("bias_add_backward_reference", "N", N);
  require_non_negative("bias_add_backward_reference", "C", C);
  for (int64_t c = 0; c < C; c++) {
    Real sum = 0;
    for (int64_t row = 0; row < N; row++) sum += dout[row * C + c];
    dbias[c] += sum;
  }
}

template <typename Real>
void scale_forward_reference(Real* out, const Real* inp, Real scale, int64_t n) {
  require_non_negative("scale_forward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) out[i] = scale * inp[i];
}

template <typename Real>
void scale_backward_reference(Real* dinp, const Real* dout, Real scale, int64_t n) {
  require_non_negative("scale_backward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) dinp[i] += scale * dout[i];
}

#define VRAMLAB_INSTANTIATE(Real)                                                           \
  template void residual_forward_reference<Real>(Real*, const Real*, const Real*, int64_t); \
  template void residual_backward_reference<Real>(Real*, Real*, const Real*, int64_t);      \
  template void bias_add_forward_reference<Real>(Real*, const Real*, int64_t, int64_t);     \
  template void bias_add_backward_reference<Real>(Real*, const Real*, int64_t, int64_t);    \
  template void scale_forward_reference<Real>(Real*, const Real*, Real, int64_t);           \
  template void scale_backward_reference<Real>(Real*, const Real*, Real, int64_t);
VRAMLAB_INSTANTIATE(float)
VRAMLAB_INSTANTIATE(double)
#undef VRAMLAB_INSTANTIATE

}  // namespace vramlab::kernels::cpu
