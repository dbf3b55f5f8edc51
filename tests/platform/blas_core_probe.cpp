// A small binary that starts like every vramlab binary (select_blas_core_or_reexec), multiplies two
// random matrices with OpenBLAS on whatever core was chosen, and prints one JSON line: the core,
// why it was chosen, and the largest error against a double-precision reference. test_blas_core
// runs it under different environments.
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/platform/blas.h"

int main(int argc, char** argv) {
  vramlab::platform::select_blas_core_or_reexec(argc, argv);
  // Odd sizes so no kernel tile divides them.
  const int64_t m = 263, n = 197, k = 301;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));  // (m,k), (k,n)
  std::vector<float> c(static_cast<size_t>(m * n));                                 // (m,n)
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a.data(),
              static_cast<blasint>(k), b.data(), static_cast<blasint>(n), 0.0f, c.data(),
              static_cast<blasint>(n));
  // Error bound for a k-term f32 dot product of values in [-1,1]: k * eps_f32 * sum|a||b| <= k^2
  // eps.
  double max_err = 0.0, max_bound_ratio = 0.0;
  int64_t worst = -1;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0.0, abs_sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
                         static_cast<double>(b[static_cast<size_t>(p * n + j)]);
        ref += t;
        abs_sum += std::fabs(t);
      }
      const double err = std::fabs(ref - static_cast<double>(c[static_cast<size_t>(i * n + j)]));
      const double bound = static_cast<double>(k) * 0x1p-24 * abs_sum;
      if (!(err <= max_err)) max_err = err, worst = i * n + j;
      if (!(err / bound <= max_bound_ratio)) max_bound_ratio = err / bound;
    }
  const vramlab::platform::BlasInfo info = vramlab::platform::blas_info();
  std::printf(
      "{\"core\":\"%s\",\"core_source\":\"%s\",\"detected_core\":\"%s\",\"max_abs_err\":%.9g,"
      "\"worst_index\":%lld,\"max_error_over_bound\":%.9g}\n",
      info.core.c_str(), info.core_source.c_str(), info.detected_core.c_str(), max_err,
      static_cast<long long>(worst), max_bound_ratio);
  return 0;
}
