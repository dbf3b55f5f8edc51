// Fused softmax-cross-entropy: rows in parallel; max, exp-sum and the gradient are vector loops.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"
#include "kernels/cpu/vector_math.h"

namespace vramlab::kernels::cpu {
namespace {

void check_arguments(const char* op, const int32_t* targets, int64_t N, int64_t V, int64_t Vp) {
  require_non_negative(op, "N", N);
  require_non_negative(op, "V", V);
  require(Vp >= V, op,
          "padded vocabulary Vp = " + std::to_string(Vp) + " is below V = " + std::to_string(V));
  require(N == 0 || V >= 1, op, "V = 0 with N = " + std::to_string(N) + " rows");
  for (int64_t row = 0; row < N; row++) {
    require(targets[row] >= 0 && targets[row] < V, op,
            "target " + std::to_string(targets[row]) + " at row " + std::to_string(row) +
                " is outside [0, V = " + std::to_string(V) + ")");
  }
}

}  // namespace

template <typename A>
void cross_entropy_forward(float* losses, float* logsumexp, A* probs, const A* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp) {
  check_arguments("cross_entropy_forward", targets, N, V, Vp);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const A* x = logits + row * Vp;  // (V)
    float max_value = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max_value)
    for (int64_t i = 0; i < V; i++) {
      const float value = widen(x[i]);
      max_value = value > max_value ? value : max_value;
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < V; i++) sum += fast_exp(widen(x[i]) - max_value);
    const float lse = max_value + std::log(sum);
    logsumexp[row] = lse;
    losses[row] = lse - widen(x[targets[row]]);
    if (probs != nullptr) {
      A* p = probs + row * Vp;  // (Vp)
#pragma omp simd
      for (int64_t i = 0; i < V; i++) p[i] = narrow<A>(fast_exp(widen(x[i]) - lse));
      for (int64_t i = V; i < Vp; i++) p[i] = narrow<A>(0.0f);
    }
  }
}

void cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp) {
  cross_entropy_forward<float>(losses, logsumexp, probs, logits, targets, N, V, Vp);
}

void cross_entropy_backward(float* dlogits, const float* dlosses, const float* logits,
                            const float* logsumexp, const int32_t* targets, int64_t N, int64_t V,
                            int64_t Vp) {
  check_arguments("cross_entropy_backward", targets, N, V, Vp);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; row++) {
    const float* x = logits + row * Vp;
    float* dx = dlogits + row * Vp;
    const float dloss = dlosses[row], lse = logsumexp[row];
#pragma omp simd
    for (int64_t i = 0; i < V; i++) dx[i] += dloss * fast_exp(x[i] - lse);
    dx[targets[row]] -= dloss;
  }
}

template <typename A>
void cross_entropy_dlogits(A* dlogits, const A* probs, const int32_t* targets, int64_t N, int64_t V,
                           int64_t Vp, float scale) {
  check_arguments("cross_entropy_dlogits", targets, N, V, Vp);
#pragma omp parallel for schedule(static) if (N * V >= (int64_t{1} << 16))
  for (int64_t row = 0; row < N; ++row) {
    const A* p = probs + row * Vp;  // (V)
    A* d = dlogits + row * Vp;      // (V)
    if constexpr (!kNarrowStorage<A>) {
#pragma omp simd
      for (int64_t i = 0; i < V; ++i) d[i] = p[i] * scale;
      d[targets[row]] -= scale;
    } else {
      // The f32 kernel's target value, p·scale then − scale in f32, rounded once; read before
      // the row is written because dlogits may alias probs.
      const int32_t target = targets[row];
      float target_value = widen(p[target]) * scale;
      target_value -= scale;
#pragma omp simd
      for (int64_t i = 0; i < V; ++i) d[i] = narrow<A>(widen(p[i]) * scale);
      d[target] = narrow<A>(target_value);
    }
  }
}

void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets, int64_t N,
                           int64_t V, int64_t Vp, float scale) {
  cross_entropy_dlogits<float>(dlogits, probs, targets, N, V, Vp, scale);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                            \
  template void cross_entropy_forward<A>(float*, float*, A*, const A*, const int32_t*, int64_t,   \
                                         int64_t, int64_t);                                       \
  template void cross_entropy_dlogits<A>(A*, const A*, const int32_t*, int64_t, int64_t, int64_t, \
                                         float);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

template <typename Real>
void cross_entropy_forward_reference(Real* losses, Real* logsumexp, Real* probs, const Real* logits,
                                     const int32_t* targets, int64_t N, int64_t V, int64_t Vp) {
  check_arguments("cross_entropy_forward_reference", targets, N, V, Vp);
  for (int64_t row = 0; row < N; row++) {
    const Real* x = logits + row * Vp;
    Real max_value = -std::numeric_limits<Real>::infinity();
    for (int64_t i = 0; i < V; i++) max_value = std::max(max_value, x[i]);
    Real sum = 0;
    for (int64_t i = 0; i < V; i++) sum += std::exp(x[i] - max_value);
    const Real lse = max_value + std::log(sum);
    logsumexp[row] = lse;
    losses[row] = lse - x[targets[row]];
    if (probs != nullptr) {
      for (int64_t i = 0; i < Vp; i++) probs[row * Vp + i] = i < V ? std::exp(x[i] - lse) : Real(0);
    }
  }
}

template <typename Real>
void cross_entropy_backward_reference(Real* dlogits, const Real* dlosses, const Real* logits,
                                      const Real* logsumexp, const int32_t* targets, int64_t N,
                                      int64_t V, int64_t Vp) {
  check_arguments("cross_entropy_backward_reference", targets, N, V, Vp);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t i = 0; i < V; i++) {
      const Real probability = std::exp(logits[row * Vp + i] - logsumexp[row]);
      const Real indicator = i == targets[row] ? Real(1) : Real(0);
      dlogits[row * Vp + i] += dlosses[row] * (probability - indicator);
    }
  }
}

template void cross_entropy_forward_reference<float>(float*, float*, float*, const float*,
                                                     const int32_t*, int64_t, int64_t, int64_t);
template void cross_entropy_forward_reference<double>(double*, double*, double*, const double*,
                                                      const int32_t*, int64_t, int64_t, int64_t);
template void cross_entropy_backward_reference<float>(float*, const float*, const float*,
                                                      const float*, const int32_t*, int64_t,
                                                      int64_t, int64_t);
template void cross_entropy_backward_reference<double>(double*, const double*, const double*,
                                                       const double*, const int32_t*, int64_t,
                                                       int64_t, int64_t);

}  // namespace vramlab::kernels::cpu
