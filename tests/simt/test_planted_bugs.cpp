// Planted bugs are caught: a missing __syncthreads gives a wrong answer under the reverse or
// random schedule; out-of-bounds shared writes, barriers in divergent code, warp/block deadlocks,
// device-side failures and bad warp masks are reported with kernel and file:line, never a hang.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "kernels/cuda/examples/planted_bugs.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

LaunchOptions with_schedule(Schedule schedule, std::uint64_t seed = 0) {
  LaunchOptions options;
  options.schedule = schedule;
  options.seed = seed;
  options.workers = 2;
  options.poison_shared = true;
  return options;
}

std::vector<int> cpu_block_sums(const std::vector<int>& x, unsigned block) {
  std::vector<int> sums((x.size() + block - 1) / block, 0);
  for (std::size_t i = 0; i < x.size(); ++i) sums[i / block] += x[i];
  return sums;
}

std::size_t count_wrong_blocks(const std::vector<int>& got, const std::vector<int>& expected) {
  std::size_t wrong = 0;
  for (std::size_t b = 0; b < expected.size(); ++b) wrong += got[b] != expected[b];
  return wrong;
}

TEST(SimtPlantedBugs, ReductionMissingSyncthreadsIsWrongUnderRandomSchedules) {
  const unsigned block = 256;
  const std::size_t n = 16 * block;
  const std::vector<int> x = testing::random_ints(n, 1, 1000, 99);
  const std::vector<int> expected = cpu_block_sums(x, block);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    ScopedLaunchOptions scoped(with_schedule(Schedule::kRandom, seed));
    std::vector<int> buggy(expected.size()), correct(expected.size());
    cuda_examples::planted_sum_missing_barrier(x.data(), buggy.data(), n, block);
    cuda_examples::block_sum_shared(x.data(), correct.data(), n, block);
    EXPECT_EQ(correct, expected) << "the correct reduction must pass under random:" << seed;
    EXPECT_GT(count_wrong_blocks(buggy, expected), 0u)
        << "random:" << seed << " did not expose the missing barrier";
  }
}

TEST(SimtPlantedBugs, RandomScheduleIsDeterministicForASeed) {
  const unsigned block = 256;
  const std::size_t n = 8 * block;
  const std::vector<int> x = testing::random_ints(n, 1, 1000, 4);
  auto run = [&](std::uint64_t seed) {
    ScopedLaunchOptions scoped(with_schedule(Schedule::kRandom, seed));
    std::vector<int> sums(n / block);
    cuda_examples::planted_sum_missing_barrier(x.data(), sums.data(), n, block);
    return sums;
  };
  EXPECT_EQ(run(21), run(21))
      << "the same seed must replay the same interleaving, whatever the workers do";
  EXPECT_NE(run(21), run(22)) << "different seeds should give different interleavings";
}

TEST(SimtPlantedBugs, RaceHiddenByIndexOrderIsExposedByReverseAndRandomSchedules) {
  const unsigned n = 256;
  const std::vector<int> x = testing::random_ints(n, 1, 1000, 5);
  std::vector<int> expected(n, 0);
  for (unsigned i = 1; i < n; ++i) expected[i] = x[i - 1];
  {
    // In index order each thread's left neighbour has already run: the race is invisible.
    ScopedLaunchOptions scoped(with_schedule(Schedule::kInOrder));
    std::vector<int> y(n);
    cuda_examples::planted_shift_missing_barrier(x.data(), y.data(), n);
    EXPECT_EQ(y, expected);
  }
  for (const LaunchOptions& options :
       {with_schedule(Schedule::kReverse), with_schedule(Schedule::kRandom, 11)}) {
    ScopedLaunchOptions scoped(options);
    std::vector<int> y(n);
    cuda_examples::planted_shift_missing_barrier(x.data(), y.data(), n);
    EXPECT_NE(y, expected) << schedule_name(options.schedule)
                           << " did not expose the missing barrier";
  }
}

TEST(SimtPlantedBugs, StaticSharedOverflowIsReportedWithKernelAndArray) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    std::vector<int> out(64);
    try {
      cuda_examples::planted_static_shared_overflow(out.data());
      FAIL() << "no overflow reported, " << name;
    } catch (const SharedMemoryOverflowError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("static_shared_overflow_kernel"), std::string::npos) << message;
      EXPECT_NE(message.find("'window'"), std::string::npos) << message;
      EXPECT_NE(message.find("byte 0 past its end"), std::string::npos) << message;
      EXPECT_NE(message.find("planted_bugs.cu:"), std::string::npos) << message;
    }
  }
}

TEST(SimtPlantedBugs, DynamicSharedOverflowIsReported) {
  for (unsigned block : {1u, 33u, 256u}) {
    std::vector<int> out(block);
    try {
      cuda_examples::planted_dynamic_shared_overflow(out.data(), block);
      FAIL() << "no overflow reported for blockDim " << block;
    } catch (const SharedMemoryOverflowError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("dynamic_shared_overflow_kernel"), std::string::npos) << message;
      EXPECT_NE(message.find("extern __shared__"), std::string::npos) << message;
    }
  }
}

TEST(SimtPlantedBugs, BarrierInDivergentBranchIsReportedWithBothSites) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    std::vector<int> out(64);
    try {
      cuda_examples::planted_barrier_in_divergent_branch(out.data());
      FAIL() << "no divergent barrier reported, " << name;
    } catch (const DeadlockError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("divergent barrier"), std::string::npos) << message;
      EXPECT_NE(message.find("barrier_in_divergent_branch_kernel"), std::string::npos) << message;
      // Two different planted_bugs.cu:<line> sites, both in __syncthreads().
      std::vector<std::string> lines;
      const std::string call = "__syncthreads() at ";
      const std::string file = "planted_bugs.cu:";
      for (std::size_t at = message.find(call); at != std::string::npos;
           at = message.find(call, at + 1)) {
        const std::size_t file_at = message.find(file, at);
        ASSERT_NE(file_at, std::string::npos) << message;
        const std::size_t digits = file_at + file.size();
        lines.push_back(
            message.substr(digits, message.find_first_not_of("0123456789", digits) - digits));
      }
      ASSERT_EQ(lines.size(), 2u) << message;
      EXPECT_NE(lines[0], lines[1]) << message;
    }
  }
}

TEST(SimtPlantedBugs, WarpAndBlockBarrierDeadlockIsReportedNotHung) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    std::vector<int> out(32);
    try {
      cuda_examples::planted_warp_deadlock(out.data());
      FAIL() << "no deadlock reported, " << name;
    } catch (const DeadlockError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("no thread can make progress"), std::string::npos) << message;
      EXPECT_NE(message.find("16 thread(s) wait in __syncthreads() at"), std::string::npos)
          << message;
      EXPECT_NE(message.find("16 thread(s) wait in __syncwarp() (mask 0xffffffff) at"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("(0,0,0)..(15,0,0)"), std::string::npos) << message;
      EXPECT_NE(message.find("(16,0,0)..(31,0,0)"), std::string::npos) << message;
    }
  }
}

TEST(SimtPlantedBugs, DeviceFailureStopsTheLaunchWithItsMessage) {
  std::vector<float> y(1000);
  try {
    cuda_examples::planted_not_implemented(y.data(), y.size());
    FAIL() << "no device error reported";
  } catch (const DeviceError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("NOT IMPLEMENTED: planted_not_implemented"), std::string::npos)
        << message;
    EXPECT_NE(message.find("not_implemented_kernel"), std::string::npos) << message;
    EXPECT_NE(message.find("planted_bugs.cu:"), std::string::npos) << message;
  }
}

TEST(SimtPlantedBugs, LaneOutsideItsOwnMaskIsReported) {
  std::vector<int> out(32);
  try {
    cuda_examples::planted_lane_outside_mask(out.data());
    FAIL() << "no warp usage error reported";
  } catch (const WarpUsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("lane 5"), std::string::npos) << message;
    EXPECT_NE(message.find("mask 0x1"), std::string::npos) << message;
  }
}

TEST(SimtPlantedBugs, EmulatorRecoversAfterAFailedLaunch) {
  std::vector<int> out(32);
  EXPECT_THROW(cuda_examples::planted_warp_deadlock(out.data()), DeadlockError);
  const std::vector<int> x = testing::random_ints(1000, -5, 5, 8);
  std::vector<int> sums(4);
  cuda_examples::block_sum_shared(x.data(), sums.data(), x.size(), 256);
  EXPECT_EQ(sums, cpu_block_sums(x, 256));
}

}  // namespace
}  // namespace vramlab::simt
