// The loss scaler's inf/NaN check and the clipping norm in one pass, in fixed chunks.
#include "kernels/cpu/gradient_check.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr int64_t kChunk = 4096;

}  // namespace

template <typename T>
GradientCheck check_gradients(const T* grads, int64_t n, float multiplier) {
  require_non_negative("check_gradients", "n", n);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));  // (chunks)
  std::vector<int> finite(static_cast<size_t>(chunks));      // (chunks)
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; chunk++) {
    const int64_t begin = chunk * kChunk;
    const int64_t end = begin + kChunk < n ? begin + kChunk : n;
    double total = 0.0;
    int all_finite = 1;
#pragma omp simd reduction(+ : total) reduction(& : all_finite)
    for (int64_t i = begin; i < end; i++) {
      const float scaled = multiplier * widen(grads[i]);
      // NaN fails the comparison, as ±inf does.
      all_finite &= std::fabs(scaled) <= 3.40282347e38f ? 1 : 0;
      total += static_cast<double>(scaled) * scaled;
    }
    partial[static_cast<size_t>(chunk)] = total;
    finite[static_cast<size_t>(chunk)] = all_finite;
  }
  GradientCheck result;
  for (int64_t chunk = 0; chunk < chunks; chunk++) {
    result.sum_of_squares += partial[static_cast<size_t>(chunk)];
    result.found_inf = result.found_inf || finite[static_cast<size_t>(chunk)] == 0;
  }
  return result;
}

template GradientCheck check_gradients<float>(const float*, int64_t, float);
template GradientCheck check_gradients<bf16_t>(const bf16_t*, int64_t, float);
template GradientCheck check_gradients<f16_t>(const f16_t*, int64_t, float);

}  // namespace vramlab::kernels::cpu
