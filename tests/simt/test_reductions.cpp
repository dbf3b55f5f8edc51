// Block reductions (shared-memory tree and warp shuffles) against a plain CPU sum, for block sizes
// below a warp, not a multiple of 32, and up to 1024, grids that do not divide the input evenly,
// under every schedule and worker count.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

template <class T>
std::vector<T> cpu_block_sums(const std::vector<T>& x, unsigned block_threads) {
  std::vector<T> sums((x.size() + block_threads - 1) / block_threads, T{0});
  for (std::size_t i = 0; i < x.size(); ++i) sums[i / block_threads] += x[i];
  return sums;
}

const unsigned kBlockSizes[] = {1, 7, 31, 32, 33, 100, 128, 255, 256, 1024};

TEST(SimtReductions, SharedMemoryTreeMatchesCpuForEveryBlockSizeAndSchedule) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned block : kBlockSizes) {
      for (std::size_t n : {std::size_t{3} * block + 5, std::size_t{block} / 2 + 1}) {
        const std::vector<int> x = testing::random_ints(n, -1000, 1000, n * 31 + block);
        const std::vector<int> expected = cpu_block_sums(x, block);
        std::vector<int> got(expected.size(), -7);
        cuda_examples::block_sum_shared(x.data(), got.data(), n, block);
        for (std::size_t b = 0; b < expected.size(); ++b) {
          ASSERT_EQ(got[b], expected[b])
              << "block " << b << " of n=" << n << ", blockDim " << block << ", " << name;
        }
      }
    }
  }
}

TEST(SimtReductions, WarpShuffleSumMatchesCpuForEveryBlockSizeAndSchedule) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned block : kBlockSizes) {
      for (std::size_t n : {std::size_t{3} * block + 5, std::size_t{block} / 2 + 1}) {
        const std::vector<int> ints = testing::random_ints(n, -1000, 1000, n * 17 + block);
        // Small integers: every partial sum is exact in float, so any order gives the same bits.
        const std::vector<float> x(ints.begin(), ints.end());
        const std::vector<float> expected = cpu_block_sums(x, block);
        std::vector<float> got(expected.size(), -7.0f);
        cuda_examples::block_sum_warp(x.data(), got.data(), n, block);
        for (std::size_t b = 0; b < expected.size(); ++b) {
          ASSERT_EQ(got[b], expected[b])
              << "block " << b << " of n=" << n << ", blockDim " << block << ", " << name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vramlab::simt
