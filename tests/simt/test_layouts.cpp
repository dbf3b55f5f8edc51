// Dynamic shared memory, 3D grids of 3D blocks, and the naive and tiled matmuls, against CPU
// results under every schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

TEST(SimtLayouts, DynamicSharedMemoryReversesEveryChunk) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned block : {1u, 20u, 96u, 512u}) {
      for (std::size_t n : {std::size_t{block} * 3 + 7, std::size_t{block}}) {
        const std::vector<int> ints = testing::random_ints(n, -1000, 1000, n + block);
        const std::vector<float> x(ints.begin(), ints.end());
        std::vector<float> y(n, NAN);
        cuda_examples::reverse_chunks(x.data(), y.data(), n, block);
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t start = i / block * block;
          const std::size_t count = std::min<std::size_t>(block, n - start);
          ASSERT_EQ(y[i], x[start + count - 1 - (i - start)])
              << "i=" << i << ", n=" << n << ", blockDim " << block << ", " << name;
        }
      }
    }
  }
}

TEST(SimtLayouts, ThreeDimensionalGridsAndBlocksCoverEveryThreadOnce) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (const auto& [grid, block] :
         {std::pair{dim3(3, 2, 2), dim3(4, 3, 2)}, std::pair{dim3(1, 5, 3), dim3(7, 1, 9)},
          std::pair{dim3(2, 1, 1), dim3(1, 1, 64)}}) {
      const std::size_t nx = std::size_t{grid.x} * block.x;
      const std::size_t ny = std::size_t{grid.y} * block.y;
      const std::size_t nz = std::size_t{grid.z} * block.z;
      std::vector<long long> out(nx * ny * nz, -1);
      cuda_examples::index_3d(out.data(), grid, block);
      const std::size_t per_block = std::size_t{block.x} * block.y * block.z;
      for (std::size_t z = 0; z < nz; ++z) {
        for (std::size_t y = 0; y < ny; ++y) {
          for (std::size_t x = 0; x < nx; ++x) {
            const std::size_t block_linear =
                x / block.x + grid.x * (y / block.y + grid.y * (z / block.z));
            const std::size_t thread_linear =
                x % block.x + block.x * (y % block.y + block.y * (z % block.z));
            ASSERT_EQ(out[x + nx * (y + ny * z)],
                      static_cast<long long>(block_linear * per_block + thread_linear))
                << "(" << x << "," << y << "," << z << "), " << name;
          }
        }
      }
    }
  }
}

TEST(SimtLayouts, NaiveAndTiledMatmulMatchCpu) {
  std::mt19937 generator(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const auto& [m, n, k] :
       {std::tuple{37, 29, 53}, std::tuple{16, 16, 16}, std::tuple{1, 33, 5}}) {
    std::vector<float> a(static_cast<std::size_t>(m) * k),
        b(static_cast<std::size_t>(k) * n);  // (m, k), (k, n)
    for (float& v : a) v = uniform(generator);
    for (float& v : b) v = uniform(generator);
    std::vector<double> expected(static_cast<std::size_t>(m) * n, 0.0);  // (m, n)
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        for (int p = 0; p < k; ++p) expected[i * n + j] += double{a[i * k + p]} * b[p * n + j];
      }
    }
    for (const auto& [name, options] : testing::all_schedules()) {
      ScopedLaunchOptions scoped(options);
      std::vector<float> naive(expected.size(), NAN), tiled(expected.size(), NAN);
      cuda_examples::matmul_naive(a.data(), b.data(), naive.data(), m, n, k);
      cuda_examples::matmul_tiled(a.data(), b.data(), tiled.data(), m, n, k);
      const double tolerance = 1e-5 * k;
      double worst = 0.0;
      std::size_t worst_at = 0;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        const double diff =
            std::max(std::fabs(naive[i] - expected[i]), std::fabs(tiled[i] - expected[i]));
        if (!(diff <= worst)) {
          worst = diff;
          worst_at = i;
        }
      }
      EXPECT_LE(worst, tolerance) << "max |diff| " << worst << " at " << worst_at << " ("
                                  << 100.0 * worst / tolerance << "% of tolerance), m=" << m
                                  << " n=" << n << " k=" << k << ", " << name;
    }
  }
}

}  // namespace
}  // namespace vramlab::simt
