// The caching allocator under several threads, and its lock guard (AllocatorLock), which skips
// the mutex while the process has a single thread.
//
// ctest runs every test in a process of its own (gtest_discover_tests), so each starts
// single-threaded; a test that needs that checks it and says so if not.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "common/memory/allocator_lock.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kKiB;
using testing::kMiB;

// \return true when another thread can lock \p mutex now.
bool lockable_from_another_thread(std::mutex& mutex) {
  bool locked = false;
  std::thread([&] {
    locked = mutex.try_lock();
    if (locked) mutex.unlock();
  }).join();
  return locked;
}

TEST(AllocatorLock, LocksOnceTheProcessHasHadASecondThread) {
  std::thread([] {}).join();
  ASSERT_TRUE(AllocatorLock::process_is_multithreaded());
  std::mutex mutex;
  {
    AllocatorLock guard(mutex);
    EXPECT_FALSE(lockable_from_another_thread(mutex)) << "the guard did not hold the mutex";
  }
  EXPECT_TRUE(lockable_from_another_thread(mutex)) << "the guard did not release the mutex";
}

// A guard made while the process had one thread took no lock, so it must not unlock at the end
// of its scope, even though the process has gained a thread meanwhile (a backing may start one,
// as the CUDA runtime does): here the mutex is held by this test, and a guard that decided again
// at destruction would release the test's lock.
TEST(AllocatorLock, KeepsItsDecisionWhenTheProcessGainsAThread) {
  if (AllocatorLock::process_is_multithreaded()) {
    GTEST_SKIP() << "this process already had a second thread before the test (run it alone with "
                    "--gtest_filter and OPENBLAS_NUM_THREADS=1, as ctest does: OpenBLAS starts "
                    "its threads when it loads)";
  }
  std::mutex mutex;
  std::optional<AllocatorLock> guard;
  guard.emplace(mutex);  // single-threaded: no lock taken
  std::thread([] {}).join();
  ASSERT_TRUE(AllocatorLock::process_is_multithreaded());
  mutex.lock();  // the test's own lock
  guard.reset();
  EXPECT_FALSE(lockable_from_another_thread(mutex)) << "the guard released a lock it never took";
  mutex.unlock();
}

// Several threads malloc and free on one allocator, each on its own stream and with sizes in both
// pools, while one of them also empties the cache and checks the invariants. Lost updates or a
// torn pool would break an invariant, the block counts, or the totals compared at the end.
TEST(CachingAllocatorThreads, ConcurrentMallocFreeKeepsInvariantsAndCounts) {
  auto allocator = testing::make_sim_allocator(4 * kGiB);
  constexpr int kThreads = 4;
  constexpr int kOperations = 40000;
  constexpr std::size_t kMaxLivePerThread = 64;  // ≤ 64 × 7 MiB per thread: no out-of-memory
  std::atomic<std::int64_t> mallocs{0};
  std::atomic<std::int64_t> requested{0};
  std::atomic<bool> failed{false};
  auto work = [&](int thread_index) {
    std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(thread_index));
    std::uniform_int_distribution<int> choice(0, 99);
    std::uniform_int_distribution<std::size_t> small_bytes(1, 3 * kKiB + 7);
    std::uniform_int_distribution<std::size_t> large_bytes(kMiB + 1, 6 * kMiB + 513);
    std::vector<Block*> live;
    const auto stream = static_cast<StreamId>(thread_index);
    try {
      for (int op = 0; op < kOperations; ++op) {
        const int c = choice(rng);
        if (live.empty() || (c < 50 && live.size() < kMaxLivePerThread)) {
          const std::size_t bytes = c % 10 == 0 ? large_bytes(rng) : small_bytes(rng);
          live.push_back(allocator->malloc(bytes, stream, MemoryCategory::activation));
          mallocs.fetch_add(1);
          requested.fetch_add(static_cast<std::int64_t>(bytes));
        } else {
          std::uniform_int_distribution<std::size_t> pick(0, live.size() - 1);
          const std::size_t i = pick(rng);
          allocator->free(live[i]);
          live[i] = live.back();
          live.pop_back();
        }
        if (thread_index == 0 && op % 997 == 0) {
          allocator->empty_cache();
          allocator->check_invariants();
        }
      }
      for (Block* block : live) allocator->free(block);
    } catch (const std::exception& error) {
      failed = true;
      ADD_FAILURE() << "thread " << thread_index << ": " << error.what();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& thread : threads) thread.join();
  ASSERT_FALSE(failed);
  ASSERT_TRUE(AllocatorLock::process_is_multithreaded());
  allocator->check_invariants();
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.allocation[kAggregate].allocated, mallocs.load());
  EXPECT_EQ(stats.allocation[kAggregate].freed, mallocs.load());
  EXPECT_EQ(stats.requested_bytes[kAggregate].allocated, requested.load());
  EXPECT_EQ(stats.requested_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.active_bytes[kAggregate].current, 0);
  allocator->empty_cache();
  EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current, 0);
}

}  // namespace
}  // namespace vramlab::memory
