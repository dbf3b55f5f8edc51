// Launch mechanics: configuration checks, schedule/environment parsing, shared-memory poisoning,
// argument conversion, kernel exceptions, deep fiber stacks, and identical results for any number
// of workers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/simt/simt.h"
#include "tests/simt/simt_test_support.h"

namespace vramlab::simt {
namespace {

__global__ void read_before_write_kernel(unsigned* out) {
  VRAMLAB_SHARED(unsigned, scratch, [8]);
  VRAMLAB_DYNAMIC_SHARED(unsigned char, bytes);
  out[threadIdx.x] = scratch[threadIdx.x % 8];
  out[blockDim.x + threadIdx.x] = bytes[threadIdx.x];
  __syncthreads();
  scratch[threadIdx.x % 8] = 0;
  bytes[threadIdx.x] = 0;
}

__global__ void store_size_kernel(std::size_t* out, std::size_t value, double scale) {
  out[threadIdx.x] = value + static_cast<std::size_t>(scale);
}

__global__ void throwing_kernel(int* out) {
  if (threadIdx.x == 3) throw std::runtime_error("kernel threw");
  out[threadIdx.x] = 1;
}

__global__ void deep_stack_kernel(double* out) {
  double local[2048];  // 16 KiB of locals per thread
  for (int i = 0; i < 2048; ++i) local[i] = i * 0.5 + threadIdx.x;
  __syncthreads();
  double sum = 0.0;
  for (int i = 0; i < 2048; ++i) sum += local[i];
  out[threadIdx.x] = sum;
}

// Threads past `active` return at once; the others still meet at the barrier (exited threads no
// longer count, as on Volta and later GPUs).
__global__ void early_exit_kernel(int* out, unsigned active) {
  VRAMLAB_SHARED(int, values, [1024]);
  if (threadIdx.x >= active) return;
  values[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = values[active - 1 - threadIdx.x];
}

// Plain CUDA `__shared__` (thread_local under emulation, no redzones) also works.
__global__ void plain_shared_kernel(int* out) {
  __shared__ int staged[64];
  staged[threadIdx.x] = static_cast<int>(blockIdx.x * 100 + threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = staged[blockDim.x - 1 - threadIdx.x];
}

__global__ void too_much_shared_kernel(int* out) {
  VRAMLAB_SHARED(int, big, [200 * 1024 / 4]);
  big[threadIdx.x] = 1;
  out[threadIdx.x] = big[threadIdx.x];
}

__global__ void popc_of_ballot_kernel(int* out) {
  out[threadIdx.x] = __popc(__ballot_sync(__activemask(), threadIdx.x % 4 == 0));
}

__global__ void block_of_thread_kernel(unsigned* out) {
  out[static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x] =
      blockIdx.x * 1000u + threadIdx.x;
}

TEST(SimtLaunch, ConfigurationsCudaRejectsThrowUsageErrorNamingTheValue) {
  std::vector<unsigned> out(2048);
  auto expect_usage_error = [&](dim3 grid, dim3 block, std::size_t shmem, const char* needle) {
    try {
      VRAMLAB_LAUNCH(block_of_thread_kernel, grid, block, shmem, 0)(out.data());
      FAIL() << "no error for " << needle;
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("block_of_thread_kernel"), std::string::npos)
          << error.what();
    }
  };
  expect_usage_error(dim3(1), dim3(1025), 0, "blockDim (1025,1,1)");
  expect_usage_error(dim3(1), dim3(1, 1, 65), 0, "blockDim.z must be at most 64");
  expect_usage_error(dim3(0), dim3(32), 0, "gridDim (0,1,1)");
  expect_usage_error(dim3(1), dim3(32), 300 * 1024, "307200 bytes of dynamic shared memory");
}

TEST(SimtLaunch, PoisonFillsSharedMemoryWithOnesAtEveryBlockStart) {
  LaunchOptions options;
  options.workers = 1;
  options.poison_shared = true;
  ScopedLaunchOptions scoped(options);
  for (int launch = 0; launch < 2; ++launch) {  // the second launch reuses memory the first zeroed
    std::vector<unsigned> out(2 * 16, 0);
    VRAMLAB_LAUNCH(read_before_write_kernel, dim3(1), dim3(16), 16, 0)(out.data());
    for (std::size_t i = 0; i < 16; ++i)
      EXPECT_EQ(out[i], 0xFFFFFFFFu) << "static array, thread " << i;
    for (std::size_t i = 16; i < 32; ++i)
      EXPECT_EQ(out[i], 0xFFu) << "dynamic array, thread " << i - 16;
  }
}

TEST(SimtLaunch, ArgumentsAreConvertedToParameterTypes) {
  std::vector<std::size_t> out(4);
  int value = 40;
  float scale = 2.9f;
  VRAMLAB_LAUNCH(store_size_kernel, dim3(1), dim3(4), 0, 0)(out.data(), value, scale);
  for (std::size_t v : out) EXPECT_EQ(v, 42u);
}

TEST(SimtLaunch, KernelExceptionsReachTheHost) {
  std::vector<int> out(8);
  EXPECT_THROW((VRAMLAB_LAUNCH(throwing_kernel, dim3(4), dim3(8), 0, 0)(out.data())),
               std::runtime_error);
}

TEST(SimtLaunch, DeepLocalArraysFitInFiberStacks) {
  std::vector<double> out(256);
  VRAMLAB_LAUNCH(deep_stack_kernel, dim3(1), dim3(256), 0, 0)(out.data());
  for (std::size_t t = 0; t < out.size(); ++t) {
    EXPECT_EQ(out[t], 2047.0 * 2048.0 / 4.0 + 2048.0 * t) << "thread " << t;
  }
}

TEST(SimtLaunch, AnyNumberOfWorkersGivesTheSameResult) {
  const std::size_t blocks = 37;
  const unsigned block = 45;
  std::vector<unsigned> expected(blocks * block);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < block; ++t)
      expected[b * block + t] = static_cast<unsigned>(b) * 1000u + t;
  }
  for (std::size_t workers : {1, 2, 3, 8}) {
    LaunchOptions options;
    options.workers = workers;
    ScopedLaunchOptions scoped(options);
    std::vector<unsigned> out(blocks * block, 0);
    VRAMLAB_LAUNCH(block_of_thread_kernel, dim3(blocks), dim3(block), 0, 0)(out.data());
    EXPECT_EQ(out, expected) << workers << " workers";
  }
}

TEST(SimtLaunch, ExitedThreadsNoLongerCountAtBarriers) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    for (unsigned active : {1u, 17u, 100u}) {
      std::vector<int> out(128, -5);
      VRAMLAB_LAUNCH(early_exit_kernel, dim3(1), dim3(128), 0, 0)(out.data(), active);
      for (unsigned t = 0; t < 128; ++t) {
        EXPECT_EQ(out[t], t < active ? static_cast<int>(active - 1 - t) : -5)
            << "thread " << t << ", " << name;
      }
    }
  }
}

TEST(SimtLaunch, PlainSharedDeclarationsWorkPerBlock) {
  for (const auto& [name, options] : testing::all_schedules()) {
    ScopedLaunchOptions scoped(options);
    std::vector<int> out(5 * 64, -1);
    VRAMLAB_LAUNCH(plain_shared_kernel, dim3(5), dim3(64), 0, 0)(out.data());
    for (int b = 0; b < 5; ++b) {
      for (int t = 0; t < 64; ++t)
        EXPECT_EQ(out[b * 64 + t], b * 100 + 63 - t) << b << "," << t << ", " << name;
    }
  }
}

TEST(SimtLaunch, SharedMemoryBeyondThePerBlockLimitIsReported) {
  std::vector<int> out(32);
  try {
    VRAMLAB_LAUNCH(too_much_shared_kernel, dim3(1), dim3(32), 100 * 1024, 0)(out.data());
    FAIL() << "no error for 300 KiB of shared memory";
  } catch (const SimtError& error) {
    EXPECT_NE(std::string(error.what()).find("'big'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("307200 bytes"), std::string::npos) << error.what();
  }
}

TEST(SimtLaunch, ActiveMaskAndPopcCountVotesOfAPartialWarp) {
  std::vector<int> out(45, -1);
  VRAMLAB_LAUNCH(popc_of_ballot_kernel, dim3(1), dim3(45), 0, 0)(out.data());
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], 8) << "thread " << t;   // lanes 0, 4, ..., 28
  for (int t = 32; t < 45; ++t) EXPECT_EQ(out[t], 4) << "thread " << t;  // threads 32, 36, 40, 44
}

TEST(SimtLaunch, IntrinsicsMatchTheirCudaDefinitions) {
  EXPECT_EQ(__popc(0xF0F0u), 8);
  EXPECT_EQ(__popcll(~0ull), 64);
  EXPECT_EQ(__clz(1), 31);
  EXPECT_EQ(__clz(0), 32);
  EXPECT_EQ(__ffs(0), 0);
  EXPECT_EQ(__ffs(0x18), 4);
  EXPECT_EQ(__brev(1u), 0x80000000u);
  EXPECT_EQ(__float_as_uint(1.0f), 0x3F800000u);
  EXPECT_EQ(__int_as_float(0x40000000), 2.0f);
  EXPECT_EQ(min(3, -4), -4);
  EXPECT_EQ(max(3u, 4u), 4u);
  EXPECT_EQ(max(1.0f, NAN), 1.0f);
  EXPECT_EQ(__saturatef(1.5f), 1.0f);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
}

TEST(SimtLaunch, ScheduleNamesParseAndBadOnesAreRejected) {
  LaunchOptions options;
  parse_schedule("reverse", options);
  EXPECT_EQ(options.schedule, Schedule::kReverse);
  parse_schedule("random:123", options);
  EXPECT_EQ(options.schedule, Schedule::kRandom);
  EXPECT_EQ(options.seed, 123u);
  parse_schedule("inorder", options);
  EXPECT_EQ(options.schedule, Schedule::kInOrder);
  for (const char* bad : {"backwards", "random:", "random:12x", "random:-1", ""}) {
    try {
      parse_schedule(bad, options);
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("'" + std::string(bad) + "'"), std::string::npos)
          << error.what();
    }
  }
}

TEST(SimtLaunch, EnvironmentSelectsScheduleWorkersAndPoison) {
  setenv("VRAMLAB_SIMT_SCHEDULE", "random:77", 1);
  setenv("VRAMLAB_SIMT_WORKERS", "3", 1);
  setenv("VRAMLAB_SIMT_POISON", "1", 1);
  LaunchOptions options = options_from_environment();
  EXPECT_EQ(options.schedule, Schedule::kRandom);
  EXPECT_EQ(options.seed, 77u);
  EXPECT_EQ(options.workers, 3u);
  EXPECT_TRUE(options.poison_shared);
  setenv("VRAMLAB_SIMT_WORKERS", "zero", 1);
  EXPECT_THROW(options_from_environment(), UsageError);
  setenv("VRAMLAB_SIMT_WORKERS", "2", 1);
  setenv("VRAMLAB_SIMT_POISON", "yes", 1);
  EXPECT_THROW(options_from_environment(), UsageError);
  unsetenv("VRAMLAB_SIMT_SCHEDULE");
  unsetenv("VRAMLAB_SIMT_WORKERS");
  unsetenv("VRAMLAB_SIMT_POISON");
}

}  // namespace
}  // namespace vramlab::simt
