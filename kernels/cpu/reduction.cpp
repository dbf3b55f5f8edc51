// Sum / sum of squares / L2 norm: fixed chunks in double, chunk sums added in order.
#include "kernels/cpu/reduction.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr int64_t kChunk = 4096;

template <bool kSquare, typename A>
double chunked_sum(const char* op, const A* x, int64_t n) {
  require_non_negative(op, "n", n);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; chunk++) {
    const int64_t begin = chunk * kChunk;
    const int64_t end = begin + kChunk < n ? begin + kChunk : n;
    double total = 0.0;
#pragma omp simd reduction(+ : total)
    for (int64_t i = begin; i < end; i++) {
      const double value = widen(x[i]);
      total += kSquare ? value * value : value;
    }
    partial[static_cast<size_t>(chunk)] = total;
  }
  double total = 0.0;
  for (const double chunk_sum : partial) total += chunk_sum;
  return total;
}

template <bool kSquare, typename Real>
double kahan_sum(const char* op, const Real* x, int64_t n) {
  require_non_negative(op, "n", n);
  double total = 0.0, compensation = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double value = static_cast<double>(x[i]);
    const double term = (kSquare ? value * value : value) - compensation;
    const double next = total + term;
    compensation = (next - total) - term;
    total = next;
  }
  return total;
}

}  // namespace

template <typename A>
double sum(const A* x, int64_t n) {
  return chunked_sum<false>("sum", x, n);
}
template double sum<float>(const float*, int64_t);
template double sum<bf16_t>(const bf16_t*, int64_t);
template double sum<f16_t>(const f16_t*, int64_t);

double sum(const float* x, int64_t n) {
  return sum<float>(x, n);
}

double sum_of_squares(const float* x, int64_t n) {
  return chunked_sum<true>("sum_of_squares", x, n);
}

double l2_norm(const float* x, int64_t n) {
  return std::sqrt(chunked_sum<true>("l2_norm", x, n));
}

template <typename Real>
double sum_reference(const Real* x, int64_t n) {
  return kahan_sum<false>("sum_reference", x, n);
}

template <typename Real>
double sum_of_squares_reference(const Real* x, int64_t n) {
  return kahan_sum<true>("sum_of_squares_reference", x, n);
}

template <typename Real>
double l2_norm_reference(const Real* x, int64_t n) {
  return std::sqrt(kahan_sum<true>("l2_norm_reference", x, n));
}

template double sum_reference<float>(const float*, int64_t);
template double sum_reference<double>(const double*, int64_t);
template double sum_of_squares_reference<float>(const float*, int64_t);
template double sum_of_squares_reference<double>(const double*, int64_t);
template double l2_norm_reference<float>(const float*, int64_t);
template double l2_norm_reference<double>(const double*, int64_t);

}  // namespace vramlab::kernels::cpu
