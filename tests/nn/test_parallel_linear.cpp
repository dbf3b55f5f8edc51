// nn::parallel_linear_forward/backward give the same bits for every thread count (Note [Bands fixed
// by the shape]): the runtime changes the count between kernels as other processes come and go, so
// a training step must not depend on it. Also checked against a double-precision product, so a
// band left out or done twice fails too.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/nn/parallel_linear.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::nn {
namespace {

using kernels::cpu::test_util::random_vector;

struct Shape {
  int64_t N, C, OC;
};

struct Outputs {
  std::vector<float> out;      // (N, OC)
  std::vector<float> dinp;     // (N, C)
  std::vector<float> dweight;  // (OC, C)
  std::vector<float> dbias;    // (OC)
};

Outputs run(const Shape& s, int threads) {
  const auto inp = random_vector(s.N * s.C, 11), weight = random_vector(s.OC * s.C, 12),
             bias = random_vector(s.OC, 13), dout = random_vector(s.N * s.OC, 14);
  Outputs o{std::vector<float>(static_cast<size_t>(s.N * s.OC)),
            random_vector(s.N * s.C, 15),  // the backward accumulates into what is there
            random_vector(s.OC * s.C, 16), random_vector(s.OC, 17)};
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  parallel_linear_forward(o.out.data(), inp.data(), weight.data(), bias.data(), s.N, s.C, s.OC);
  parallel_linear_backward(o.dinp.data(), o.dweight.data(), o.dbias.data(), dout.data(), inp.data(),
                           weight.data(), s.N, s.C, s.OC);
  omp_set_num_threads(saved);
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Largest |got - want| / (1 + |want|) over the forward output, against a product in double.
double forward_error(const Shape& s, const std::vector<float>& out) {
  const auto inp = random_vector(s.N * s.C, 11), weight = random_vector(s.OC * s.C, 12),
             bias = random_vector(s.OC, 13);
  double worst = 0.0;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.OC; ++o) {
      double want = bias[static_cast<size_t>(o)];
      for (int64_t c = 0; c < s.C; ++c)
        want += static_cast<double>(inp[static_cast<size_t>(n * s.C + c)]) *
                weight[static_cast<size_t>(o * s.C + c)];
      const double got = out[static_cast<size_t>(n * s.OC + o)];
      worst = std::max(worst, std::fabs(got - want) / (1.0 + std::fabs(want)));
    }
  return worst;
}

TEST(ParallelLinear, EveryThreadCountGivesTheSameBits) {
  // Odd sizes on both sides of the single-thread threshold (2^20 multiply-adds), a band count
  // that does not divide the rows, and fewer rows than one band.
  for (const Shape& s : {Shape{1037, 67, 131}, Shape{515, 129, 257}, Shape{61, 33, 17},
                         Shape{8, 300, 520}, Shape{1, 5, 3}}) {
    const std::string what =
        "N=" + std::to_string(s.N) + " C=" + std::to_string(s.C) + " OC=" + std::to_string(s.OC);
    const Outputs one = run(s, 1);
    // fp32 sums of C products of values in [-1, 1]: a few ulps of sqrt(C) each.
    EXPECT_LT(forward_error(s, one.out), 1e-5) << what;
    for (int threads : {2, 3, 5}) {
      const Outputs many = run(s, threads);
      EXPECT_TRUE(same_bits(one.out, many.out)) << what << ", " << threads << " threads";
      EXPECT_TRUE(same_bits(one.dinp, many.dinp)) << what << ", " << threads << " threads";
      EXPECT_TRUE(same_bits(one.dweight, many.dweight)) << what << ", " << threads << " threads";
      EXPECT_TRUE(same_bits(one.dbias, many.dbias)) << what << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace vramlab::nn
