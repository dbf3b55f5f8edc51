// Warp shuffles (every variant, every width, 4- and 8-byte values, partial warps), votes in
// divergent code with concurrent disjoint masks, and the counting barriers, against a CPU model
// of CUDA's documented semantics, under every schedule.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

// CUDA's rules, written from the programming guide: lanes are grouped in segments of `width`;
// a lane reading from outside its segment (or past the end of a partial warp, where the GPU
// leaves the value undefined and the emulator returns the caller's own) gets its own value.
struct ShuffleModel {
  unsigned n;
  int width;
  int source_of(unsigned tid, long long lane_in_warp_source) const {
    const unsigned warp_start = tid / 32 * 32;
    if (lane_in_warp_source < 0 || lane_in_warp_source >= 32) return static_cast<int>(tid);
    const unsigned source = warp_start + static_cast<unsigned>(lane_in_warp_source);
    return source < n ? static_cast<int>(source) : static_cast<int>(tid);
  }
  int idx(unsigned tid, int src_lane) const {
    const long long lane = tid % 32;
    return source_of(tid, lane / width * width + src_lane % width);
  }
  int up(unsigned tid, unsigned delta) const {
    const long long lane = tid % 32;
    return lane % width < delta ? static_cast<int>(tid) : source_of(tid, lane - delta);
  }
  int down(unsigned tid, unsigned delta) const {
    const long long lane = tid % 32;
    return lane % width + delta >= static_cast<unsigned>(width) ? static_cast<int>(tid)
                                                                : source_of(tid, lane + delta);
  }
  int xor_(unsigned tid, int lane_mask) const {
    const long long lane = tid % 32;
    const long long source = lane ^ lane_mask;
    return source >= lane / width * width + width ? static_cast<int>(tid) : source_of(tid, source);
  }
};

TEST(SimtWarpPrimitives, EveryShuffleVariantAndWidthMatchesCudaSemantics) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned n : {32u, 64u, 45u, 20u, 1u}) {
      const std::vector<int> x = testing::random_ints(n, -100000, 100000, n);
      for (int width : {1, 2, 4, 8, 16, 32}) {
        const int src_lane = 37;  // taken modulo width
        const unsigned delta = width > 2 ? 3u : 1u;
        const int lane_mask = width > 4 ? 5 : 1;
        std::vector<int> idx(n), up(n), down(n), xr(n);
        std::vector<double> xr_double(n);
        cuda_examples::shuffle_probe(x.data(), idx.data(), up.data(), down.data(), xr.data(),
                                     xr_double.data(), n, src_lane, delta, lane_mask, width);
        const ShuffleModel model{n, width};
        for (unsigned t = 0; t < n; ++t) {
          const std::string where = "thread " + std::to_string(t) + ", n=" + std::to_string(n) +
                                    ", width " + std::to_string(width) + ", " + name;
          ASSERT_EQ(idx[t], x[model.idx(t, src_lane)]) << "__shfl_sync, " << where;
          ASSERT_EQ(up[t], x[model.up(t, delta)]) << "__shfl_up_sync, " << where;
          ASSERT_EQ(down[t], x[model.down(t, delta)]) << "__shfl_down_sync, " << where;
          ASSERT_EQ(xr[t], x[model.xor_(t, lane_mask)]) << "__shfl_xor_sync, " << where;
          ASSERT_EQ(xr_double[t], x[model.xor_(t, lane_mask)] * 0.5)
              << "__shfl_xor_sync(double), " << where;
        }
      }
    }
  }
}

TEST(SimtWarpPrimitives, ShuffleWidthThatIsNotAPowerOfTwoIsReported) {
  std::vector<int> x(32, 1), out(32);
  std::vector<double> out_double(32);
  EXPECT_THROW(cuda_examples::shuffle_probe(x.data(), out.data(), out.data(), out.data(),
                                            out.data(), out_double.data(), 32, 0, 1, 1, 3),
               WarpUsageError);
}

TEST(SimtWarpPrimitives, VotesInDivergentBranchesSeeOnlyTheirOwnGroup) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned n : {32u, 64u, 50u, 13u}) {
      for (int threshold : {-1, 50, 101}) {  // every predicate true, mixed, every predicate false
        const std::vector<int> x =
            testing::random_ints(n, 0, 100, n + static_cast<unsigned>(threshold));
        std::vector<unsigned> ballot(n);
        std::vector<int> any(n), all(n);
        cuda_examples::divergent_votes(x.data(), ballot.data(), any.data(), all.data(), n,
                                       threshold);
        for (unsigned t = 0; t < n; ++t) {
          const unsigned warp_start = t / 32 * 32;
          const bool mine_is_third = (t % 32) % 3 == 0;
          unsigned expected_ballot = 0;
          for (unsigned lane = 0; lane < 32 && warp_start + lane < n; ++lane) {
            if ((lane % 3 == 0) == mine_is_third && x[warp_start + lane] > threshold)
              expected_ballot |= 1u << lane;
          }
          unsigned group = 0;
          for (unsigned lane = 0; lane < 32 && warp_start + lane < n; ++lane) {
            if ((lane % 3 == 0) == mine_is_third) group |= 1u << lane;
          }
          const std::string where = "thread " + std::to_string(t) + ", n=" + std::to_string(n) +
                                    ", threshold " + std::to_string(threshold) + ", " + name;
          ASSERT_EQ(ballot[t], expected_ballot) << "__ballot_sync, " << where;
          ASSERT_EQ(any[t], expected_ballot != 0 ? 1 : 0) << "__any_sync, " << where;
          ASSERT_EQ(all[t], expected_ballot == group ? 1 : 0) << "__all_sync, " << where;
        }
      }
    }
  }
}

TEST(SimtWarpPrimitives, CountingBarriersMatchCpuCounts) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned block : {1u, 31u, 64u, 100u, 1024u}) {
      const std::size_t n = std::size_t{2} * block + 3;
      for (int threshold : {-1, 50, 101}) {
        const std::vector<int> x = testing::random_ints(n, 0, 100, n * 3 + block);
        const std::size_t blocks = (n + block - 1) / block;
        std::vector<int> out(3 * blocks, -1);
        cuda_examples::barrier_votes(x.data(), out.data(), n, block, threshold);
        for (std::size_t b = 0; b < blocks; ++b) {
          int count = 0;
          for (std::size_t i = b * block; i < (b + 1) * block; ++i)
            count += i < n && x[i] > threshold;
          const std::string where = "block " + std::to_string(b) + ", blockDim " +
                                    std::to_string(block) + ", threshold " +
                                    std::to_string(threshold) + ", " + name;
          ASSERT_EQ(out[3 * b], count) << "__syncthreads_count, " << where;
          ASSERT_EQ(out[3 * b + 1], count == static_cast<int>(block) ? 1 : 0)
              << "__syncthreads_and, " << where;
          ASSERT_EQ(out[3 * b + 2], count > 0 ? 1 : 0) << "__syncthreads_or, " << where;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vramlab::simt
