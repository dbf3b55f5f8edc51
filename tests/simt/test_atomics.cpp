// Every atomic (add on int/unsigned long long/float/double, min/max on int/unsigned/ull, exch,
// CAS) from many blocks on two workers at once, against CPU results.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <numeric>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

TEST(SimtAtomics, EveryAtomicMatchesCpuUnderConcurrentBlocks) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{20011}}) {
      const int bins = 37;
      const std::vector<int> x = testing::random_ints(n, 0, bins - 1, n);
      std::vector<int> histogram(bins, 0);
      float float_sum = 0.0f;
      double double_sum = 0.0;
      unsigned long long ull_sum = 0;
      int int_min = INT_MAX, int_max = INT_MIN;
      unsigned uint_min = UINT_MAX, uint_max = 0;
      unsigned long long ull_max = 0;
      int exch_winner = -1;
      std::vector<int> exch_seen(n, 0);
      std::vector<unsigned> cas_claim(bins, 0);
      cuda_examples::all_atomics(x.data(), histogram.data(), &float_sum, &double_sum, &ull_sum,
                                 &int_min, &int_max, &uint_min, &uint_max, &ull_max, &exch_winner,
                                 exch_seen.data(), cas_claim.data(), n, bins, 128);

      std::vector<int> expected_histogram(bins, 0);
      for (int v : x) ++expected_histogram[v];
      const long long sum = std::accumulate(x.begin(), x.end(), 0LL);
      const int lo = *std::min_element(x.begin(), x.end());
      const int hi = *std::max_element(x.begin(), x.end());
      const std::string where = "n=" + std::to_string(n) + ", " + name;
      EXPECT_EQ(histogram, expected_histogram) << "atomicAdd(int), " << where;
      // Every addend and partial sum is an integer below 2^24: exact in float, in any order.
      EXPECT_EQ(float_sum, static_cast<float>(sum)) << "atomicAdd(float), " << where;
      EXPECT_EQ(double_sum, static_cast<double>(sum)) << "atomicAdd(double), " << where;
      EXPECT_EQ(ull_sum, static_cast<unsigned long long>(sum))
          << "atomicAdd(unsigned long long), " << where;
      EXPECT_EQ(int_min, lo - bins / 2) << "atomicMin(int), " << where;
      EXPECT_EQ(int_max, hi - bins / 2) << "atomicMax(int), " << where;
      EXPECT_EQ(uint_min, static_cast<unsigned>(lo)) << "atomicMin(unsigned), " << where;
      EXPECT_EQ(uint_max, static_cast<unsigned>(hi)) << "atomicMax(unsigned), " << where;
      EXPECT_EQ(ull_max, static_cast<unsigned long long>(hi) << 33)
          << "atomicMax(unsigned long long), " << where;
      // atomicExch: every thread's index was swapped out by exactly one later thread, except the
      // last.
      ASSERT_GE(exch_winner, 0) << where;
      ASSERT_LT(static_cast<std::size_t>(exch_winner), n) << where;
      EXPECT_EQ(exch_seen[static_cast<std::size_t>(exch_winner)], 0)
          << "atomicExch winner, " << where;
      EXPECT_EQ(std::accumulate(exch_seen.begin(), exch_seen.end(), std::size_t{0}), n - 1)
          << "atomicExch, " << where;
      // atomicCAS: a bin is claimed (once) exactly when some thread holds its value, by such a
      // thread.
      for (int b = 0; b < bins; ++b) {
        if (expected_histogram[b] == 0) {
          EXPECT_EQ(cas_claim[b], 0u) << "atomicCAS bin " << b << ", " << where;
        } else {
          ASSERT_GT(cas_claim[b], 0u) << "atomicCAS bin " << b << ", " << where;
          EXPECT_EQ(x[cas_claim[b] - 1], b) << "atomicCAS bin " << b << ", " << where;
        }
      }
    }
  }
}

TEST(SimtAtomics, ReturnValuesAreThePreviousContents) {
  int i = 5;
  EXPECT_EQ(atomicAdd(&i, 3), 5);
  EXPECT_EQ(atomicSub(&i, 2), 8);
  EXPECT_EQ(atomicMin(&i, -4), 6);
  EXPECT_EQ(atomicMax(&i, 9), -4);
  EXPECT_EQ(atomicExch(&i, 1), 9);
  EXPECT_EQ(atomicCAS(&i, 2, 7), 1);  // no swap: 1 != 2
  EXPECT_EQ(i, 1);
  EXPECT_EQ(atomicCAS(&i, 1, 7), 1);  // swap
  EXPECT_EQ(i, 7);
  EXPECT_EQ(atomicAnd(&i, 6), 7);
  EXPECT_EQ(atomicOr(&i, 8), 6);
  EXPECT_EQ(atomicXor(&i, 15), 14);
  EXPECT_EQ(i, 1);
  float f = 1.5f;
  EXPECT_EQ(atomicExch(&f, -2.0f), 1.5f);
  EXPECT_EQ(atomicAdd(&f, 0.5f), -2.0f);
  EXPECT_EQ(f, -1.5f);
  unsigned long long u = ~0ull - 1;
  EXPECT_EQ(atomicAdd(&u, 1ull), ~0ull - 1);
  EXPECT_EQ(atomicCAS(&u, ~0ull, 3ull), ~0ull);
  EXPECT_EQ(atomicMin(&u, 5ull), 3ull);
  EXPECT_EQ(u, 3ull);
}

}  // namespace
}  // namespace vramlab::simt
