// GELU, SiLU and SwiGLU. The fast paths use fast_sigmoid so the loops vectorize.
#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // √(2/π)
constexpr double kGeluCubic = 0.044715;

}  // namespace

template <typename A>
void gelu_forward(A* out, const A* inp, int64_t n) {
  require_non_negative("gelu_forward", "n", n);
  constexpr float k = static_cast<float>(kSqrt2OverPi), c = static_cast<float>(kGeluCubic);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float x = widen(inp[i]);
    const float u = k * (x + c * x * x * x);
    out[i] = narrow<A>(x * fast_sigmoid(2.0f * u));  // 0.5·(1 + tanh u) = sigmoid(2u)
  }
}

template <typename A>
void gelu_backward(A* dinp, const A* inp, const A* dout, int64_t n) {
  require_non_negative("gelu_backward", "n", n);
  constexpr float k = static_cast<float>(kSqrt2OverPi), c = static_cast<float>(kGeluCubic);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float x = widen(inp[i]);
    const float u = k * (x + c * x * x * x);
    float s, one_minus_s;
    fast_sigmoid_pair(2.0f * u, s, one_minus_s);
    const float du_dx = k * (1.0f + 3.0f * c * x * x);
    // d/dx [x·s(2u)] = s + x·2·s·(1 - s)·u'
    dinp[i] = narrow<A>(widen(dinp[i]) + (s + 2.0f * x * s * one_minus_s * du_dx) * widen(dout[i]));
  }
}

void gelu_forward(float* out, const float* inp, int64_t n) {
  gelu_forward<float>(out, inp, n);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  gelu_backward<float>(dinp, inp, dout, n);
}

void silu_forward(float* out, const float* inp, int64_t n) {
  require_non_negative("silu_forward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = inp[i] * fast_sigmoid(inp[i]);
}

void silu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  require_non_negative("silu_backward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float s, one_minus_s;
    fast_sigmoid_pair(inp[i], s, one_minus_s);
    dinp[i] += s * (1.0f + inp[i] * one_minus_s) * dout[i];
  }
}

template <typename A>
void swiglu_forward(A* out, const A* gate, const A* up, int64_t n) {
  require_non_negative("swiglu_forward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = widen(gate[i]);
    out[i] = narrow<A>(g * fast_sigmoid(g) * widen(up[i]));
  }
}

template <typename A>
void swiglu_backward(A* dgate, A* dup, const A* dout, const A* gate, const A* up, int64_t n) {
  require_non_negative("swiglu_backward", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = widen(gate[i]), d = widen(dout[i]);
    float s, one_minus_s;
    fast_sigmoid_pair(g, s, one_minus_s);
    dgate[i] = narrow<A>(widen(dgate[i]) + s * (1.0f + g * one_minus_s) * widen(up[i]) * d);
    dup[i] = narrow<A>(widen(dup[i]) + g * s * d);
  }
}

void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) {
  swiglu_forward<float>(out, gate, up, n);
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n) {
  swiglu_backward<float>(dgate, dup, dout, gate, up, n);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                              \
  template void gelu_forward<A>(A*, const A*, int64_t);             \
  template void gelu_backward<A>(A*, const A*, const A*, int64_t);  \
  template void swiglu_forward<A>(A*, const A*, const A*, int64_t); \
  template void swiglu_backward<A>(A*, A*, const A*, const A*, const A*, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

template <typename Real>
void gelu_forward_reference(Real* out, const Real* inp, int64_t n) {
  require_non_negative("gelu_forward_reference", "n", n);
  const Real k = static_cast<Real>(kSqrt2OverPi), c = static_cast<Real>(kGeluCubic);
  for (int64_t i = 0; i < n; i++) {
    const Real x = inp[i];
    out[i] = Real(0.5) * x * (Real(1) + std::tanh(k * (x + c * x * x * x)));
  }
}

template <typename Real>
void gelu_backward_reference(Real* dinp, const Real* inp, const Real* dout, int64_t n) {
  require_non_negative("gelu_backward_reference", "n", n);
  const Real k = static_cast<Real>(kSqrt2OverPi), c = static_cast<Real>(kGeluCubic);
  for (int64_t i = 0; i < n; i++) {
    const Real x = inp[i];
    const Real tanh_u = std::tanh(k * (x + c * x * x * x));
    const Real sech2_u = Real(1) - tanh_u * tanh_u;
    const Real grad = Real(0.5) * (Real(1) + tanh_u) +
                      Real(0.5) * x * sech2_u * k * (Real(1) + Real(3) * c * x * x);
    dinp[i] += grad * dout[i];
  }
}

template <typename Real>
void silu_forward_reference(Real* out, const Real* inp, int64_t n) {
  require_non_negative("silu_forward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) out[i] = inp[i] / (Real(1) + std::exp(-inp[i]));
}

template <typename Real>
void silu_backward_reference(Real* dinp, const Real* inp, const Real* dout, int64_t n) {
  require_non_negative("silu_backward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) {
    const Real s = Real(1) / (Real(1) + std::exp(-inp[i]));
    dinp[i] += s * (Real(1) + inp[i] * (Real(1) - s)) * dout[i];
  }
}

template <typename Real>
void swiglu_forward_reference(Real* out, const Real* gate, const Real* up, int64_t n) {
  require_non_negative("swiglu_forward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) out[i] = gate[i] / (Real(1) + std::exp(-gate[i])) * up[i];
}

template <typename Real>
void swiglu_backward_reference(Real* dgate, Real* dup, const Real* dout, const Real* gate,
                               const Real* up, int64_t n) {
  require_non_negative("swiglu_backward_reference", "n", n);
  for (int64_t i = 0; i < n; i++) {
    const Real s = Real(1) / (Real(1) + std::exp(-gate[i]));
    dgate[i] += s * (Real(1) + gate[i] * (Real(1) - s)) * up[i] * dout[i];
    dup[i] += gate[i] * s * dout[i];
  }
}

#define VRAMLAB_INSTANTIATE(Real)                                                         \
  template void gelu_forward_reference<Real>(Real*, const Real*, int64_t);                \
  template void gelu_backward_reference<Real>(Real*, const Real*, const Real*, int64_t);  \
  template void silu_forward_reference<Real>(Real*, const Real*, int64_t);                \
  template void silu_backward_reference<Real>(Real*, const Real*, const Real*, int64_t);  \
  template void swiglu_forward_reference<Real>(Real*, const Real*, const Real*, int64_t); \
  template void swiglu_backward_reference<Real>(Real*, Real*, const Real*, const Real*,   \
                                                const Real*, int64_t);
VRAMLAB_INSTANTIATE(float)
VRAMLAB_INSTANTIATE(double)
#undef VRAMLAB_INSTANTIATE

}  // namespace vramlab::kernels::cpu
