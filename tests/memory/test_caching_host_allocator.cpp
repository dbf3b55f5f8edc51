// PyTorch's pinned host allocator, rule by rule: power-of-two rounding, reuse of a freed block
// only by a request of the same rounded size, no reuse while an event of a stream that used the
// block is pending, the stats after each operation, empty_host_cache, the host-RAM budget (it
// counts the rounded size) and pageable memory (not rounded, not cached). Sizes up to 16 GiB are
// mapped lazily and never touched, so the tests need no RAM.
//   build/tests/bin/test_memory --gtest_filter='CachingHostAllocator*' (one of its suites)
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/memory/caching_host_allocator.h"
#include "common/memory/host_memory.h"
#include "common/platform/errors.h"
#include "common/stream/clock.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kKiB;
using testing::kMiB;
constexpr std::uint64_t kPageBytes = 4096;

// Real sizes: GPT-2 small's fp32 weights (124,439,808 parameters), Llama-2-7B's fp16 weights
// (6,738,415,616 parameters), one layer's bf16 activation (B, T, C) = (8, 2048, 4096).
constexpr std::uint64_t kGpt2Fp32Bytes = 124'439'808ULL * 4;
constexpr std::uint64_t kLlama7bFp16Bytes = 6'738'415'616ULL * 2;
constexpr std::uint64_t kActivationBf16Bytes = 8ULL * 2048 * 4096 * 2;
// 4.9 GiB, not a multiple of anything.
constexpr std::uint64_t kFourPointNineGiB = 49 * kGiB / 10;

// What a test checks of a Stat: PyTorch's four numbers.
struct StatValues {
  std::int64_t current, peak, allocated, freed;
};
void expect_stat(const Stat& stat, StatValues expected, const char* what) {
  EXPECT_EQ(stat.current, expected.current) << what << ".current";
  EXPECT_EQ(stat.peak, expected.peak) << what << ".peak";
  EXPECT_EQ(stat.allocated, expected.allocated) << what << ".allocated";
  EXPECT_EQ(stat.freed, expected.freed) << what << ".freed";
}

class CachingHostAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv(std::string(kHostMemoryLimitVariable).c_str());
    set_host_memory_limit(64 * kGiB);
    ASSERT_EQ(host_memory_held_bytes(), 0u);
  }
  void TearDown() override {
    set_host_memory_limit(std::nullopt);
    EXPECT_EQ(host_memory_held_bytes(), 0u) << "host-budget bytes leaked";
  }
  stream::Clock clock_;
};

using CachingHostAllocatorRounding = CachingHostAllocatorTest;
using CachingHostAllocatorReuse = CachingHostAllocatorTest;
using CachingHostAllocatorEvents = CachingHostAllocatorTest;
using CachingHostAllocatorStats = CachingHostAllocatorTest;
using CachingHostAllocatorBudget = CachingHostAllocatorTest;
using CachingHostAllocatorPageable = CachingHostAllocatorTest;

TEST_F(CachingHostAllocatorRounding, EveryRequestTakesTheNextPowerOfTwo) {
  struct Case {
    std::uint64_t requested, block;
  };
  const Case cases[] = {
      {1, 1},
      {2, 2},
      {3, 4},
      {5, 8},
      {4 * kKiB + 1, 8 * kKiB},
      {kActivationBf16Bytes, 128 * kMiB},  // a power of two stays
      {kGpt2Fp32Bytes, 512 * kMiB},
      {kFourPointNineGiB, 8 * kGiB},
      {8 * kGiB, 8 * kGiB},
      {kLlama7bFp16Bytes, 16 * kGiB},
  };
  CachingHostAllocator allocator(clock_);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requested);
    HostBlock* block = allocator.allocate(c.requested);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(block->size, c.block);
    EXPECT_EQ(block->requested_size, c.requested);
    EXPECT_NE(block->address, 0u);
    EXPECT_EQ(block->address % kPageBytes, 0u);
    EXPECT_EQ(host_memory_held_bytes(), c.block) << "the budget holds the rounded block";
    allocator.free(block);
    allocator.empty_host_cache();
    EXPECT_EQ(host_memory_held_bytes(), 0u);
  }
}

TEST_F(CachingHostAllocatorRounding, ZeroBytesReturnsNullptrAndChangesNothing) {
  CachingHostAllocator allocator(clock_);
  const nlohmann::json before = allocator.host_memory_stats().to_json();
  EXPECT_EQ(allocator.allocate(0, MemoryCategory::activation, "empty"), nullptr);
  EXPECT_EQ(allocator.host_memory_stats().to_json(), before);
  EXPECT_EQ(allocator.category_stats().of(MemoryCategory::activation).allocated, 0);
  EXPECT_EQ(host_memory_held_bytes(), 0u);
}

TEST_F(CachingHostAllocatorRounding, RequestsBeyondTwoToThe63AreRefused) {
  CachingHostAllocator allocator(clock_);
  EXPECT_THROW(allocator.allocate((1ULL << 63) + 1), UsageError);
  EXPECT_EQ(allocator.host_memory_stats().num_host_alloc, 0);
}

TEST_F(CachingHostAllocatorReuse, AFreedBlockServesTheNextRequestOfItsRoundedSize) {
  struct Case {
    std::uint64_t first, second;  // both round to the same power of two
  };
  const Case cases[] = {
      {3, 4},
      {3000, 4 * kKiB},
      {kGpt2Fp32Bytes, 300 * kMiB},
      {kFourPointNineGiB, 6 * kGiB},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.first);
    CachingHostAllocator allocator(clock_);
    HostBlock* first = allocator.allocate(c.first);
    const std::uint64_t address = first->address;
    allocator.free(first);
    HostBlock* second = allocator.allocate(c.second);
    EXPECT_EQ(second->address, address);
    EXPECT_EQ(second->requested_size, c.second);
    EXPECT_EQ(allocator.host_memory_stats().num_host_alloc, 1) << "a cache hit is no allocation";
    allocator.free(second);
  }
}

TEST_F(CachingHostAllocatorReuse, NoBlockServesAnotherRoundedSize) {
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(3000);  // 4 KiB
  const std::uint64_t address = block->address;
  allocator.free(block);
  // Larger (no merging) and smaller (no splitting): both need blocks of their own.
  HostBlock* larger = allocator.allocate(4 * kKiB + 1);
  HostBlock* smaller = allocator.allocate(2 * kKiB);
  EXPECT_NE(larger->address, address);
  EXPECT_NE(smaller->address, address);
  EXPECT_EQ(larger->size, 8 * kKiB);
  EXPECT_EQ(smaller->size, 2 * kKiB);
  EXPECT_EQ(allocator.host_memory_stats().num_host_alloc, 3);
  // The 4 KiB block is still cached for its own size.
  HostBlock* same = allocator.allocate(4 * kKiB);
  EXPECT_EQ(same->address, address);
  for (HostBlock* live : {larger, smaller, same}) allocator.free(live);
}

TEST_F(CachingHostAllocatorReuse, TheLastBlockFreedIsTheFirstReused) {
  CachingHostAllocator allocator(clock_);
  HostBlock* a = allocator.allocate(kGpt2Fp32Bytes);
  HostBlock* b = allocator.allocate(kGpt2Fp32Bytes);
  const std::uint64_t a_address = a->address;
  const std::uint64_t b_address = b->address;
  allocator.free(a);
  allocator.free(b);
  HostBlock* first = allocator.allocate(kGpt2Fp32Bytes);
  HostBlock* second = allocator.allocate(kGpt2Fp32Bytes);
  EXPECT_EQ(first->address, b_address);
  EXPECT_EQ(second->address, a_address);
  allocator.free(first);
  allocator.free(second);
}

TEST_F(CachingHostAllocatorEvents, ABlockACopyStreamUsedWaitsForItsEventThenIsReused) {
  for (const std::uint64_t bytes : {std::uint64_t{3}, kGpt2Fp32Bytes, kFourPointNineGiB}) {
    SCOPED_TRACE(bytes);
    stream::Clock clock;
    const stream::StreamId copy = clock.new_stream("copy h2d");
    CachingHostAllocator allocator(clock);
    HostBlock* staged = allocator.allocate(bytes, MemoryCategory::activation, "offload");
    const std::uint64_t address = staged->address;
    clock.enqueue(copy, 0.5, "copy h2d");  // the copy reads the block until t = 0.5
    allocator.record_stream(staged, copy);
    allocator.free(staged);
    EXPECT_EQ(staged->event_count, 1u);

    HostBlock* during_copy = allocator.allocate(bytes);
    EXPECT_NE(during_copy->address, address) << "reused while the copy may still read it";
    EXPECT_EQ(allocator.host_memory_stats().active_requests.current, 2);
    allocator.free(during_copy);

    clock.synchronize();
    HostBlock* after_copy = allocator.allocate(bytes);
    EXPECT_EQ(after_copy->address, address);
    EXPECT_EQ(allocator.host_memory_stats().num_host_alloc, 2);
    allocator.free(after_copy);
  }
}

TEST_F(CachingHostAllocatorEvents, HostWorkPastTheEventCompletesItToo) {
  const stream::StreamId copy = clock_.new_stream("copy d2h");
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(kActivationBf16Bytes);
  clock_.enqueue(copy, 2.0, "copy d2h");
  allocator.record_stream(block, copy);
  allocator.free(block);
  clock_.host_work(1.0);
  allocator.process_events();
  EXPECT_EQ(block->event_count, 1u) << "the host is at t = 1, the copy ends at t = 2";
  clock_.host_work(1.5);
  allocator.process_events();
  EXPECT_EQ(block->event_count, 0u);
  EXPECT_EQ(allocator.host_memory_stats().active_requests.current, 0);
}

TEST_F(CachingHostAllocatorEvents, ABlockTwoStreamsUsedWaitsForBoth) {
  const stream::StreamId fast = clock_.new_stream("copy 1");
  const stream::StreamId slow = clock_.new_stream("copy 2");
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(5000);
  const std::uint64_t address = block->address;
  clock_.enqueue(fast, 0.1, "short copy");
  clock_.enqueue(slow, 3.0, "long copy");
  allocator.record_stream(block, fast);
  allocator.record_stream(block, slow);
  allocator.record_stream(block, slow);  // once per stream
  allocator.free(block);
  EXPECT_EQ(block->event_count, 2u);

  clock_.synchronize_stream(fast);
  HostBlock* other = allocator.allocate(5000);
  EXPECT_NE(other->address, address) << "the long copy is still running";
  clock_.synchronize_stream(slow);
  HostBlock* reused = allocator.allocate(5000);
  EXPECT_EQ(reused->address, address);
  allocator.free(other);
  allocator.free(reused);
}

TEST_F(CachingHostAllocatorEvents, WorkEnqueuedAfterTheFreeDoesNotDelayTheBlock) {
  const stream::StreamId copy = clock_.new_stream("copy");
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(kGpt2Fp32Bytes);
  const std::uint64_t address = block->address;
  clock_.enqueue(copy, 1.0, "copy of this block");
  allocator.record_stream(block, copy);
  allocator.free(block);  // the event marks t = 1
  clock_.enqueue(copy, 10.0, "a later copy of something else");
  clock_.host_work(1.0);
  HostBlock* reused = allocator.allocate(kGpt2Fp32Bytes);
  EXPECT_EQ(reused->address, address);
  allocator.free(reused);
}

TEST_F(CachingHostAllocatorStats, EachOperationMovesPyTorchsCounters) {
  const stream::StreamId copy = clock_.new_stream("copy");
  CachingHostAllocator allocator(clock_);
  const auto stats = [&] { return allocator.host_memory_stats(); };
  const std::int64_t big = 8 * kGiB;  // 4.9 GiB rounded
  const std::int64_t small = 4 * kKiB;

  HostBlock* a = allocator.allocate(kFourPointNineGiB);
  HostBlock* b = allocator.allocate(3000);
  expect_stat(stats().allocations, {2, 2, 2, 0}, "allocations");
  expect_stat(stats().allocated_bytes, {big + small, big + small, big + small, 0},
              "allocated_bytes");
  expect_stat(stats().active_requests, {2, 2, 2, 0}, "active_requests");
  expect_stat(stats().active_bytes, {big + small, big + small, big + small, 0}, "active_bytes");
  EXPECT_EQ(stats().num_host_alloc, 2);
  EXPECT_EQ(stats().host_alloc_time.count, 2);

  allocator.free(b);  // cached: still allocated, no longer active
  expect_stat(stats().allocations, {2, 2, 2, 0}, "allocations");
  expect_stat(stats().active_requests, {1, 2, 2, 1}, "active_requests");
  expect_stat(stats().active_bytes, {big, big + small, big + small, small}, "active_bytes");

  b = allocator.allocate(4000);  // a cache hit: active again, no new allocation
  expect_stat(stats().allocations, {2, 2, 2, 0}, "allocations");
  expect_stat(stats().active_requests, {2, 2, 3, 1}, "active_requests");
  EXPECT_EQ(stats().num_host_alloc, 2);

  clock_.enqueue(copy, 1.0, "copy");
  allocator.record_stream(a, copy);
  allocator.free(a);  // pending: still active
  expect_stat(stats().active_requests, {2, 2, 3, 1}, "active_requests");
  clock_.synchronize();
  allocator.process_events();
  expect_stat(stats().active_requests, {1, 2, 3, 2}, "active_requests");
  expect_stat(stats().active_bytes, {small, big + small, big + 2 * small, big + small},
              "active_bytes");

  allocator.empty_host_cache();  // returns a; b is live
  expect_stat(stats().allocations, {1, 2, 2, 1}, "allocations");
  expect_stat(stats().allocated_bytes, {small, big + small, big + small, big}, "allocated_bytes");
  EXPECT_EQ(stats().num_host_free, 1);
  EXPECT_EQ(stats().host_free_time.count, 1);
  allocator.free(b);
}

TEST_F(CachingHostAllocatorStats, ResetPeakAndResetAccumulatedAsPyTorch) {
  CachingHostAllocator allocator(clock_);
  HostBlock* a = allocator.allocate(kGpt2Fp32Bytes, MemoryCategory::optimizer_state);
  HostBlock* b = allocator.allocate(kGpt2Fp32Bytes, MemoryCategory::optimizer_state);
  allocator.free(b);
  allocator.empty_host_cache();

  allocator.reset_peak_host_memory_stats();
  const std::int64_t block = 512 * kMiB;
  expect_stat(allocator.host_memory_stats().allocations, {1, 1, 2, 1}, "allocations");
  expect_stat(allocator.host_memory_stats().active_bytes, {block, block, 2 * block, block},
              "active_bytes");
  EXPECT_EQ(allocator.host_memory_stats().host_alloc_time.max, 0);
  EXPECT_EQ(allocator.category_stats().of(MemoryCategory::optimizer_state).peak, block);

  allocator.reset_accumulated_host_memory_stats();
  const HostStats stats = allocator.host_memory_stats();
  expect_stat(stats.allocations, {1, 1, 0, 0}, "allocations");
  expect_stat(stats.allocated_bytes, {block, block, 0, 0}, "allocated_bytes");
  EXPECT_EQ(stats.num_host_alloc, 0);
  EXPECT_EQ(stats.num_host_free, 0);
  EXPECT_EQ(stats.host_alloc_time.count, 0);
  EXPECT_EQ(stats.host_free_time.total, 0);
  EXPECT_EQ(allocator.category_stats().of(MemoryCategory::optimizer_state).allocated, 0);
  allocator.free(a);
}

TEST_F(CachingHostAllocatorStats, BytesAreCountedPerCategory) {
  CachingHostAllocator allocator(clock_);
  HostBlock* moments = allocator.allocate(5 * kGiB, MemoryCategory::optimizer_state, "exp_avg");
  HostBlock* saved = allocator.allocate(kActivationBf16Bytes + 1, MemoryCategory::activation);
  EXPECT_EQ(moments->name, "exp_avg");
  const CategoryStats during = allocator.category_stats();
  EXPECT_EQ(during.of(MemoryCategory::optimizer_state).current,
            static_cast<std::int64_t>(8 * kGiB));
  EXPECT_EQ(during.requested(MemoryCategory::optimizer_state).current,
            static_cast<std::int64_t>(5 * kGiB));
  EXPECT_EQ(during.of(MemoryCategory::activation).current, static_cast<std::int64_t>(256 * kMiB));
  EXPECT_EQ(during.requested(MemoryCategory::activation).current,
            static_cast<std::int64_t>(kActivationBf16Bytes + 1));
  EXPECT_EQ(during.of(MemoryCategory::parameter).current, 0);

  allocator.free(moments);
  allocator.free(saved);
  const CategoryStats after = allocator.category_stats();
  EXPECT_EQ(after.of(MemoryCategory::optimizer_state).current, 0);
  EXPECT_EQ(after.of(MemoryCategory::optimizer_state).peak, static_cast<std::int64_t>(8 * kGiB));
  EXPECT_EQ(after.of(MemoryCategory::activation).current, 0);
}

TEST_F(CachingHostAllocatorStats, ToJsonHasPyTorchsKeys) {
  CachingHostAllocator allocator(clock_);
  allocator.free(allocator.allocate(3));
  allocator.empty_host_cache();
  const nlohmann::json json = allocator.host_memory_stats().to_json();
  std::set<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"active_bytes", "active_requests", "allocated_bytes",
                                         "allocations", "host_alloc_time", "host_free_time",
                                         "num_host_alloc", "num_host_free"}));
  for (const char* stat : {"active_bytes", "active_requests", "allocated_bytes", "allocations"}) {
    std::set<std::string> fields;
    for (const auto& [key, value] : json[stat].items()) fields.insert(key);
    EXPECT_EQ(fields, (std::set<std::string>{"allocated", "current", "freed", "peak"})) << stat;
  }
  for (const char* timing : {"host_alloc_time", "host_free_time"}) {
    std::set<std::string> fields;
    for (const auto& [key, value] : json[timing].items()) fields.insert(key);
    EXPECT_EQ(fields, (std::set<std::string>{"avg", "count", "max", "min", "total"})) << timing;
    EXPECT_EQ(json[timing]["count"], 1) << timing;
  }
  EXPECT_EQ(json["allocated_bytes"]["allocated"], 4);
  EXPECT_EQ(json["allocated_bytes"]["freed"], 4);
  EXPECT_EQ(json["num_host_alloc"], 1);
  EXPECT_EQ(json["num_host_free"], 1);
}

TEST_F(CachingHostAllocatorStats, EmptyHostCacheReturnsOnlyFreeBlocks) {
  const stream::StreamId copy = clock_.new_stream("copy");
  CachingHostAllocator allocator(clock_);
  HostBlock* cached = allocator.allocate(kGpt2Fp32Bytes);      // 512 MiB
  HostBlock* pending = allocator.allocate(kFourPointNineGiB);  // 8 GiB
  HostBlock* live = allocator.allocate(3);                     // 4 B
  allocator.free(cached);
  clock_.enqueue(copy, 1.0, "copy");
  allocator.record_stream(pending, copy);
  allocator.free(pending);

  allocator.empty_host_cache();
  EXPECT_EQ(allocator.host_memory_stats().num_host_free, 1);
  EXPECT_EQ(allocator.host_memory_stats().allocations.current, 2);
  EXPECT_EQ(host_memory_held_bytes(), 8 * kGiB + 4);
  EXPECT_EQ(live->size, 4u);

  clock_.synchronize();
  allocator.empty_host_cache();  // the copy is done: the pending block goes too
  EXPECT_EQ(allocator.host_memory_stats().num_host_free, 2);
  EXPECT_EQ(host_memory_held_bytes(), 4u);
  allocator.free(live);
}

TEST_F(CachingHostAllocatorStats, DestroyingTheAllocatorGivesBackEveryByte) {
  {
    const stream::StreamId copy = clock_.new_stream("copy");
    CachingHostAllocator allocator(clock_);
    allocator.allocate(kLlama7bFp16Bytes);               // live
    allocator.free(allocator.allocate(kGpt2Fp32Bytes));  // cached
    HostBlock* pending = allocator.allocate(3);
    clock_.enqueue(copy, 1.0, "copy");
    allocator.record_stream(pending, copy);
    allocator.free(pending);
    EXPECT_EQ(host_memory_held_bytes(), 16 * kGiB + 512 * kMiB + 4);
  }
  EXPECT_EQ(host_memory_held_bytes(), 0u);
}

TEST_F(CachingHostAllocatorStats, MisuseIsRefused) {
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(100);
  EXPECT_THROW(allocator.record_stream(block, 7), UsageError) << "the clock has no stream 7";
  allocator.free(block);
  EXPECT_THROW(allocator.free(block), std::logic_error);
  EXPECT_THROW(allocator.record_stream(block, 0), std::logic_error);
  allocator.free(nullptr);
}

TEST_F(CachingHostAllocatorBudget, APinnedRequestTakesItsRoundedSizeFromTheBudget) {
  CachingHostAllocator allocator(clock_);
  HostBlock* block = allocator.allocate(5 * kGiB);
  EXPECT_EQ(host_memory_held_bytes(), 8 * kGiB);
  allocator.free(block);
  EXPECT_EQ(host_memory_held_bytes(), 8 * kGiB) << "a cached block still holds its bytes";
  allocator.empty_host_cache();
  EXPECT_EQ(host_memory_held_bytes(), 0u);
}

TEST_F(CachingHostAllocatorBudget, ARefusedRequestThrowsNamingTheBytesAndChangesNothing) {
  set_host_memory_limit(11 * kGiB);
  CachingHostAllocator allocator(clock_);
  HostBlock* held = allocator.allocate(5 * kGiB);  // 8 GiB of 11
  const nlohmann::json stats_before = allocator.host_memory_stats().to_json();

  // 3 GiB would fit, but it rounds to 4 GiB: 8 + 4 > 11.
  try {
    allocator.allocate(3 * kGiB, MemoryCategory::activation);
    FAIL() << "expected HostMemoryError";
  } catch (const HostMemoryError& error) {
    EXPECT_EQ(error.refusal().requested_bytes, 4 * kGiB);
    EXPECT_EQ(error.refusal().held_bytes, 8 * kGiB);
    EXPECT_EQ(error.refusal().limit.bytes, 11 * kGiB);
    EXPECT_NE(std::string(error.what()).find("4.00 GiB requested"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("pinned host allocator"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(allocator.host_memory_stats().to_json(), stats_before);
  EXPECT_EQ(allocator.category_stats().of(MemoryCategory::activation).allocated, 0);
  EXPECT_EQ(host_memory_held_bytes(), 8 * kGiB);

  HostBlock* fits = allocator.allocate(kFourPointNineGiB / 4);  // 1.225 GiB -> 2 GiB: 10 of 11
  EXPECT_EQ(fits->size, 2 * kGiB);
  EXPECT_EQ(host_memory_held_bytes(), 10 * kGiB);
  allocator.free(fits);
  allocator.free(held);
}

// Beside a meta device the blocks are addresses only: 13B's pinned states (5 × 52 GB requests)
// are counted with their rounding and cached as with RAM, and take nothing from the budget.
TEST_F(CachingHostAllocatorBudget, AMetaBackedAllocatorCountsBlocksAndTakesNoBudget) {
  set_host_memory_limit(1 * kGiB);
  CachingHostAllocator allocator(clock_, HostMemoryKind::pinned, HostMemoryBacking::meta);
  const std::size_t request = 52'000'000'000;  // 13e9 fp32 values: 48.4 GiB, rounds to 64 GiB
  std::vector<HostBlock*> blocks;
  for (int i = 0; i < 5; ++i)
    blocks.push_back(allocator.allocate(request, MemoryCategory::optimizer_state, "state"));
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  EXPECT_EQ(allocator.host_memory_stats().allocated_bytes.current, 5 * 64 * kGiB);
  EXPECT_EQ(allocator.category_stats().requested(MemoryCategory::optimizer_state).current,
            static_cast<std::int64_t>(5 * request));
  for (std::size_t i = 1; i < blocks.size(); ++i) EXPECT_NE(blocks[i]->address, blocks[0]->address);
  HostBlock* first = blocks.front();
  allocator.free(first);
  EXPECT_EQ(allocator.allocate(request - 1), first) << "the cached block serves its size again";
  for (HostBlock* block : blocks) allocator.free(block);
  allocator.empty_host_cache();
  EXPECT_EQ(allocator.host_memory_stats().allocated_bytes.current, 0);
}

TEST_F(CachingHostAllocatorBudget, CachedBlocksCountUntilEmptied) {
  set_host_memory_limit(1 * kGiB);
  CachingHostAllocator allocator(clock_);
  allocator.free(allocator.allocate(kGpt2Fp32Bytes));  // a cached 512 MiB block
  EXPECT_THROW(allocator.allocate(600 * kMiB), HostMemoryError) << "512 MiB + 1 GiB > 1 GiB";
  allocator.empty_host_cache();
  HostBlock* block = allocator.allocate(600 * kMiB);
  EXPECT_EQ(host_memory_held_bytes(), 1 * kGiB);
  allocator.free(block);
  allocator.empty_host_cache();
}

TEST_F(CachingHostAllocatorPageable, RequestsAreNotRounded) {
  CachingHostAllocator allocator(clock_, HostMemoryKind::pageable);
  for (const std::uint64_t bytes :
       {std::uint64_t{1}, std::uint64_t{3}, 4 * kKiB + 1, kGpt2Fp32Bytes, kFourPointNineGiB}) {
    SCOPED_TRACE(bytes);
    HostBlock* block = allocator.allocate(bytes);
    EXPECT_EQ(block->size, bytes);
    EXPECT_EQ(host_memory_held_bytes(), bytes) << "the budget holds the exact request";
    allocator.free(block);
    EXPECT_EQ(host_memory_held_bytes(), 0u);
  }
}

TEST_F(CachingHostAllocatorPageable, FreedMemoryGoesBackAtOnceEvenAfterAStreamUsedIt) {
  const stream::StreamId copy = clock_.new_stream("copy");
  CachingHostAllocator allocator(clock_, HostMemoryKind::pageable);
  HostBlock* block = allocator.allocate(5 * kGiB);
  clock_.enqueue(copy, 1.0, "copy");
  allocator.record_stream(block, copy);
  allocator.free(block);
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  allocator.free(allocator.allocate(5 * kGiB));
  const HostStats stats = allocator.host_memory_stats();
  EXPECT_EQ(stats.num_host_alloc, 2) << "nothing is cached";
  EXPECT_EQ(stats.num_host_free, 2);
  expect_stat(stats.allocations, {0, 1, 2, 2}, "allocations");
  expect_stat(stats.active_bytes,
              {0, 5 * static_cast<std::int64_t>(kGiB), 10 * static_cast<std::int64_t>(kGiB),
               10 * static_cast<std::int64_t>(kGiB)},
              "active_bytes");
}

TEST_F(CachingHostAllocatorPageable, AFiveGiBRequestTakesFiveGiBOfBudgetNotEight) {
  set_host_memory_limit(6 * kGiB);
  CachingHostAllocator pageable(clock_, HostMemoryKind::pageable);
  CachingHostAllocator pinned(clock_, HostMemoryKind::pinned);
  EXPECT_THROW(pinned.allocate(5 * kGiB), HostMemoryError);
  HostBlock* block = pageable.allocate(5 * kGiB);
  EXPECT_EQ(host_memory_held_bytes(), 5 * kGiB);
  pageable.free(block);
}

}  // namespace
}  // namespace vramlab::memory
