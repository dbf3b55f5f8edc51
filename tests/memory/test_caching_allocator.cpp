// The caching allocator's rules, one behaviour per test (PyTorch's
// c10/cuda/CUDACachingAllocator.cpp).
//   build/tests/bin/test_memory --gtest_filter='RoundSize.*' (one of its suites)
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/memory/caching_allocator.h"
#include "common/platform/errors.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kKiB;
using testing::kMiB;
using testing::make_meta_allocator;
using testing::make_sim_allocator;

TEST(RoundSize, RequestsBelow512BytesBecome512) {
  const AllocatorConfig config;
  EXPECT_EQ(round_size(1, config), 512u);
  EXPECT_EQ(round_size(511, config), 512u);
  EXPECT_EQ(round_size(512, config), 512u);
}

TEST(RoundSize, LargerRequestsRoundUpToAMultipleOf512) {
  const AllocatorConfig config;
  EXPECT_EQ(round_size(513, config), 1024u);
  EXPECT_EQ(round_size(1000, config), 1024u);
  EXPECT_EQ(round_size(kMiB + 1, config), kMiB + 512);
  EXPECT_EQ(round_size(3 * kGiB + 7, config), 3 * kGiB + 512);
}

TEST(GetAllocationSize, SmallRequestsGetTwoMiBSegments) {
  EXPECT_EQ(get_allocation_size(512), 2 * kMiB);
  EXPECT_EQ(get_allocation_size(kMiB), 2 * kMiB);
}

TEST(GetAllocationSize, LargeRequestsBelowTenMiBGetTwentyMiBSegments) {
  EXPECT_EQ(get_allocation_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(get_allocation_size(10 * kMiB - 512), 20 * kMiB);
}

TEST(GetAllocationSize, RequestsFromTenMiBRoundUpToTwoMiB) {
  EXPECT_EQ(get_allocation_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(get_allocation_size(10 * kMiB + 512), 12 * kMiB);
  EXPECT_EQ(get_allocation_size(101 * kMiB), 102 * kMiB);
}

TEST(Pools, OneMiBIsStillSmallAndOneByteMoreIsLarge) {
  auto allocator = make_sim_allocator(kGiB);
  Block* small = allocator->malloc(kMiB);
  Block* large = allocator->malloc(kMiB + 1);
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.allocation[kSmallPool].current, 1);
  EXPECT_EQ(stats.allocation[kLargePool].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kSmallPool].current, static_cast<std::int64_t>(2 * kMiB));
  EXPECT_EQ(stats.reserved_bytes[kLargePool].current, static_cast<std::int64_t>(20 * kMiB));
  EXPECT_EQ(small->size, kMiB);
  EXPECT_EQ(large->size, kMiB + 512);
  allocator->free(small);
  allocator->free(large);
  allocator->check_invariants();
}

TEST(Split, SmallPoolSplitsWhenAtLeast512BytesRemain) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(1000);
  Block* b = allocator->malloc(1000);
  EXPECT_EQ(b->address, a->address + 1024);  // the new block takes the low end of the remainder
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.segment[kAggregate].current, 1);
  EXPECT_EQ(stats.inactive_split[kSmallPool].current, 1);
  EXPECT_EQ(stats.inactive_split_bytes[kSmallPool].current,
            static_cast<std::int64_t>(2 * kMiB - 2048));
  allocator->check_invariants();
}

TEST(Split, SmallPoolDoesNotSplitWhenLessThan512BytesRemain) {
  auto allocator = make_sim_allocator(kGiB);
  Block* whole = allocator->malloc(2 * kMiB - 1024);  // > 1 MiB: large pool; use two small ones
  allocator->free(whole);
  Block* a = allocator->malloc(kMiB);
  Block* b = allocator->malloc(kMiB - 512);
  Block* c = allocator->malloc(512);  // exactly fills the 2 MiB segment: no remainder block
  EXPECT_EQ(c->address, b->address + b->size);
  EXPECT_EQ(allocator->stats().inactive_split[kSmallPool].current, 0);
  allocator->free(a);
  allocator->free(b);
  allocator->free(c);
  allocator->check_invariants();
}

TEST(Split, LargePoolSplitsOnlyWhenMoreThanOneMiBRemains) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->free(allocator->malloc(5 * kMiB));  // caches one whole 20 MiB segment
  Block* exact = allocator->malloc(19 * kMiB);   // remainder exactly 1 MiB: no split
  EXPECT_EQ(exact->size, 20 * kMiB);
  EXPECT_EQ(allocator->stats().allocated_bytes[kAggregate].current,
            static_cast<std::int64_t>(20 * kMiB));
  allocator->free(exact);
  Block* split = allocator->malloc(19 * kMiB - 512);  // remainder 1 MiB + 512: split
  EXPECT_EQ(split->size, 19 * kMiB - 512);
  EXPECT_EQ(allocator->stats().inactive_split_bytes[kLargePool].current,
            static_cast<std::int64_t>(kMiB + 512));
  allocator->free(split);
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 1);
  allocator->check_invariants();
}

// Best fit searches the pool with a BlockKey; the key must order exactly like a Block with the same
// (stream, size, address), or lower_bound would return another block than PyTorch's search.
TEST(BestFit, ASearchKeyOrdersLikeABlockWithTheSameFields) {
  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<int> small(0, 3);  // few values, so ties on each field are common
  const BlockComparator before;
  for (int trial = 0; trial < 20000; ++trial) {
    Block a;
    Block b;
    a.stream = small(rng);
    b.stream = small(rng);
    a.size = kMinBlockSize * static_cast<std::size_t>(small(rng));
    b.size = kMinBlockSize * static_cast<std::size_t>(small(rng));
    a.address = static_cast<std::uint64_t>(small(rng)) << 20;
    b.address = static_cast<std::uint64_t>(small(rng)) << 20;
    const BlockKey a_key{a.stream, a.size, a.address};
    const BlockKey b_key{b.stream, b.size, b.address};
    ASSERT_EQ(before(&a, &b), before(a_key, &b))
        << "trial " << trial << ": key (" << a.stream << ", " << a.size << ", " << a.address
        << ") vs block (" << b.stream << ", " << b.size << ", " << b.address << ")";
    ASSERT_EQ(before(&a, &b), before(&a, b_key))
        << "trial " << trial << ": block (" << a.stream << ", " << a.size << ", " << a.address
        << ") vs key (" << b.stream << ", " << b.size << ", " << b.address << ")";
  }
}

TEST(BestFit, TakesTheSmallestAdequateFreeBlock) {
  auto allocator = make_meta_allocator(kGiB);
  Block* a = allocator->malloc(14 * kMiB);
  Block* b = allocator->malloc(12 * kMiB);
  Block* c = allocator->malloc(16 * kMiB);
  const std::uint64_t b_address = b->address;
  allocator->free(a);
  allocator->free(b);
  allocator->free(c);
  Block* d = allocator->malloc(11 * kMiB);
  EXPECT_EQ(d->address, b_address);
  EXPECT_EQ(d->size, 12 * kMiB);  // 1 MiB remainder is not split
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 3);
}

TEST(BestFit, TiesGoToTheLowerAddress) {
  auto allocator = make_meta_allocator(kGiB);
  Block* a = allocator->malloc(12 * kMiB);
  Block* b = allocator->malloc(12 * kMiB);
  const std::uint64_t lower = std::min(a->address, b->address);
  allocator->free(b);
  allocator->free(a);
  EXPECT_EQ(allocator->malloc(12 * kMiB)->address, lower);
}

// The cached path keeps a split remainder in its parent's pool entry when the order allows; here
// the remainder (512 KiB) is smaller than another free block (768 KiB), so it must move before it.
TEST(BestFit, ASplitRemainderSmallerThanAnotherFreeBlockIsFoundFirst) {
  auto allocator = make_meta_allocator(kGiB);
  Block* y = allocator->malloc(768 * kKiB);  // segment 1: 768 KiB | 1 MiB | 256 KiB
  Block* a2 = allocator->malloc(kMiB);
  Block* a3 = allocator->malloc(256 * kKiB);
  Block* b1 = allocator->malloc(512 * kKiB);  // segment 2: 512 KiB | 1 MiB | 512 KiB
  Block* b2 = allocator->malloc(kMiB);
  Block* b3 = allocator->malloc(512 * kKiB);
  ASSERT_EQ(allocator->stats().segment[kAggregate].current, 2);
  const std::uint64_t y_address = y->address;
  const std::uint64_t x_address = b2->address;
  allocator->free(y);
  allocator->free(b2);
  allocator->free(b3);  // merges with b2: a free 1.5 MiB block
  allocator->check_invariants();
  Block* c = allocator->malloc(kMiB);  // best fit: the 1.5 MiB block, leaving 512 KiB
  EXPECT_EQ(c->address, x_address);
  allocator->check_invariants();
  Block* d = allocator->malloc(512 * kKiB);
  EXPECT_EQ(d->address, x_address + kMiB)
      << "the 512 KiB remainder fits best, not the 768 KiB block";
  Block* e = allocator->malloc(768 * kKiB);
  EXPECT_EQ(e->address, y_address);
  allocator->check_invariants();
  for (Block* block : {a2, a3, b1, c, d, e}) allocator->free(block);
  allocator->check_invariants();
  EXPECT_EQ(allocator->stats().allocation[kAggregate].current, 0);
}

// The cached free merges into a free neighbour's pool entry when the order allows; here the merged
// block (1.5 MiB) is larger than another free block (1 MiB), so it must move after it.
TEST(BestFit, AMergedBlockLargerThanAnotherFreeBlockIsFoundLast) {
  auto allocator = make_meta_allocator(kGiB);
  Block* w0 = allocator->malloc(512 * kKiB);  // segment 1: 512 KiB | 1 MiB | 512 KiB
  Block* m = allocator->malloc(kMiB);
  Block* w = allocator->malloc(512 * kKiB);
  Block* z0 = allocator->malloc(kMiB);  // segment 2: 1 MiB | 1 MiB
  Block* z = allocator->malloc(kMiB);
  ASSERT_EQ(allocator->stats().segment[kAggregate].current, 2);
  const std::uint64_t m_address = m->address;
  const std::uint64_t z_address = z->address;
  allocator->free(z);
  allocator->free(w);
  allocator->free(m);  // merges with w: a free 1.5 MiB block
  allocator->check_invariants();
  Block* first = allocator->malloc(kMiB);
  EXPECT_EQ(first->address, z_address) << "the 1 MiB block fits best, not the merged 1.5 MiB one";
  Block* second = allocator->malloc(kMiB);
  EXPECT_EQ(second->address, m_address);
  allocator->check_invariants();
  for (Block* block : {w0, z0, first, second}) allocator->free(block);
  allocator->check_invariants();
  EXPECT_EQ(allocator->stats().inactive_split[kAggregate].current, 0);
}

TEST(Merge, FreeingTheMiddleBlockMergesBothNeighbours) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(4096);
  Block* b = allocator->malloc(4096);
  Block* c = allocator->malloc(4096);
  const std::uint64_t segment = a->address;
  allocator->free(a);
  allocator->free(c);  // c merges with the tail remainder
  EXPECT_EQ(allocator->stats().inactive_split[kAggregate].current, 2);
  allocator->free(b);
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.inactive_split[kAggregate].current, 0);
  EXPECT_EQ(stats.inactive_split_bytes[kAggregate].current, 0);
  allocator->check_invariants();
  Block* whole = allocator->malloc(kMiB);  // the merged segment serves a 1 MiB request at its start
  EXPECT_EQ(whole->address, segment);
}

// A free block's pool entry is what free merges through (no search): every merge below goes
// through the entry of a block that itself got there by an earlier merge.
TEST(Merge, ChainedMergesGoThroughEachMergedBlocksPoolEntry) {
  auto allocator = make_meta_allocator(kGiB);
  Block* a = allocator->malloc(512 * kKiB);  // segment 1, exactly full: a | b | c | d
  Block* b = allocator->malloc(512 * kKiB);
  Block* c = allocator->malloc(512 * kKiB);
  Block* d = allocator->malloc(512 * kKiB);
  Block* other = allocator->malloc(kMiB);  // segment 2: other | 1 MiB free
  ASSERT_EQ(allocator->stats().segment[kAggregate].current, 2);
  const std::uint64_t segment = a->address;
  const std::uint64_t other_remainder = other->address + kMiB;
  allocator->free(a);
  allocator->free(b);  // a + b: takes a's entry, still ordered before segment 2's 1 MiB block
  allocator->check_invariants();
  allocator->free(c);  // a + b + c through that entry; at 1.5 MiB it moves after the 1 MiB block
  allocator->check_invariants();
  Block* first = allocator->malloc(kMiB);
  EXPECT_EQ(first->address, other_remainder) << "the 1 MiB block fits best";
  Block* second = allocator->malloc(kMiB);
  EXPECT_EQ(second->address, segment) << "then the merged 1.5 MiB block a + b + c";
  EXPECT_EQ(second->size, kMiB);
  allocator->check_invariants();
  for (Block* block : {first, second, d, other}) allocator->free(block);
  allocator->check_invariants();
  EXPECT_EQ(allocator->stats().inactive_split[kSmallPool].current, 0);
  allocator->empty_cache();  // releases whole segments only: both are whole again
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 0);
}

TEST(Merge, MemoryIsNeverReturnedOnFree) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->free(allocator->malloc(30 * kMiB));
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(30 * kMiB));
  EXPECT_EQ(stats.num_device_free, 0);
}

TEST(EmptyCache, ReleasesWholeFreeSegmentsOnly) {
  auto allocator = make_sim_allocator(kGiB);
  Block* keep = allocator->malloc(1000);         // small segment stays: it has a live block
  allocator->free(allocator->malloc(5 * kMiB));  // a whole free 20 MiB segment
  allocator->free(allocator->malloc(1000));      // freed inside the small segment
  allocator->empty_cache();
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.segment[kAggregate].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(2 * kMiB));
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.num_sync_all_streams, 1);
  allocator->free(keep);
  allocator->empty_cache();
  EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current, 0);
  allocator->check_invariants();
}

TEST(Streams, AFreeBlockIsReusedOnlyByItsOwnStream) {
  auto allocator = make_sim_allocator(kGiB);
  Block* on_zero = allocator->malloc(5 * kMiB, 0);
  const std::uint64_t address = on_zero->address;
  allocator->free(on_zero);
  Block* on_one = allocator->malloc(5 * kMiB, 1);
  EXPECT_NE(on_one->address, address);
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 2);
  EXPECT_EQ(allocator->malloc(5 * kMiB, 0)->address, address);
  allocator->check_invariants();
}

// Pools are ordered by (stream, size, address), so a lookup for a lower stream meets a higher
// stream's blocks first and only the stream check keeps it off them: both orders, both pools,
// ordinary and expandable segments. A freed block of the other stream, exactly the requested size,
// is never handed out, and the same stream still reuses it.
TEST(Streams, NoBlockCrossesStreamsInEitherOrderOrPool) {
  for (const char* conf : {"", "expandable_segments:True"}) {
    for (const std::size_t size : {std::size_t{4096}, 5 * kMiB}) {
      for (const auto& [freed_on, wanted_on] :
           {std::pair<StreamId, StreamId>{0, 1}, {1, 0}, {7, 3}, {3, 7}}) {
        SCOPED_TRACE(std::string("conf '") + conf + "', " + std::to_string(size) +
                     " bytes, freed on " + std::to_string(freed_on) + ", wanted on " +
                     std::to_string(wanted_on));
        auto allocator = make_sim_allocator(kGiB, conf);
        Block* first = allocator->malloc(size, freed_on);
        const std::uint64_t address = first->address;
        allocator->free(first);
        Block* other = allocator->malloc(size, wanted_on);
        EXPECT_NE(other->address, address) << "a block freed on another stream was reused";
        EXPECT_EQ(other->stream, wanted_on);
        Block* same = allocator->malloc(size, freed_on);
        EXPECT_EQ(same->address, address) << "its own stream did not reuse it";
        allocator->check_invariants();
        allocator->free(other);
        allocator->free(same);
      }
    }
  }
}

TEST(RecordStream, DelaysReuseUntilTheOtherStreamSynchronizes) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(4096, 0);
  const std::uint64_t address = a->address;
  allocator->record_stream(a, 7);
  allocator->free(a);
  DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.active[kAggregate].current, 1);  // still waiting on stream 7's event
  EXPECT_EQ(stats.requested_bytes[kAggregate].current, 4096);
  Block* b = allocator->malloc(4096, 0);
  EXPECT_NE(b->address, address);
  allocator->check_invariants();
  allocator->synchronize_stream(3);  // an unrelated stream changes nothing
  allocator->free(allocator->malloc(512, 0));
  EXPECT_EQ(allocator->stats().active[kAggregate].current, 2);
  allocator->synchronize();  // completes the event; the next malloc processes it
  EXPECT_EQ(allocator->stats().active[kAggregate].current, 1 + 1);
  Block* c = allocator->malloc(4096, 0);
  EXPECT_EQ(c->address, address);
  EXPECT_EQ(allocator->stats().active[kAggregate].current, 2);
  allocator->check_invariants();
}

TEST(RecordStream, OnTheAllocationStreamIsANoOp) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(4096, 2);
  allocator->record_stream(a, 2);
  allocator->free(a);
  EXPECT_EQ(allocator->stats().active[kAggregate].current, 0);
}

TEST(RecordStream, EmptyCacheWaitsForPendingFrees) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(5 * kMiB, 0);
  allocator->record_stream(a, 1);
  allocator->free(a);
  allocator->empty_cache();
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.active[kAggregate].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.num_sync_all_streams, 1);
}

TEST(ZeroSize, ReturnsNullptrAndCountsNothing) {
  auto allocator = make_sim_allocator(kGiB);
  EXPECT_EQ(allocator->malloc(0), nullptr);
  for (const auto& [key, value] : allocator->memory_stats()) {
    EXPECT_EQ(value, key == "max_split_size" ? -1 : 0) << key;
  }
}

TEST(OutOfMemory, OneExabyteRequestFailsAtOnce) {
  auto allocator = make_sim_allocator(kGiB);
  try {
    allocator->malloc(kOneExaByte);
    FAIL() << "no exception";
  } catch (const OutOfMemoryError& error) {
    EXPECT_STREQ(error.what(), "sim:test out of memory. Tried to allocate more than 1EB memory.");
  }
  EXPECT_EQ(allocator->stats().num_ooms, 0);
}

TEST(OutOfMemory, FlushesTheCacheAndRetriesBeforeFailing) {
  auto allocator = make_sim_allocator(64 * kMiB);
  allocator->free(allocator->malloc(40 * kMiB));
  Block* big = allocator->malloc(50 * kMiB);  // needs the cached 40 MiB back: one retry
  ASSERT_NE(big, nullptr);
  DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_THROW(allocator->malloc(20 * kMiB), OutOfMemoryError);
  stats = allocator->stats();
  EXPECT_EQ(stats.num_alloc_retries, 2);
  EXPECT_EQ(stats.num_ooms, 1);
  allocator->check_invariants();
}

// inject_out_of_memory(k): the k-th malloc fails as on a full device, whether the cache could
// serve it or it needs a segment; the cache is released first (as before a real OOM), and the error
// is counted and traced like one.
TEST(InjectedOutOfMemory, TheKthMallocFailsWithPyTorchsErrorWhetherCachedOrNot) {
  std::mt19937_64 rng(20);
  for (int trial = 0; trial < 40; ++trial) {
    auto allocator = make_sim_allocator(kGiB);
    allocator->record_history(RecordMode::all);
    // A warm cache: a cached small and large block, and a live block of each pool.
    std::uniform_int_distribution<std::size_t> small_size(1, kMiB), large_size(kMiB + 1, 30 * kMiB);
    Block* live_small = allocator->malloc(small_size(rng));
    Block* live_large = allocator->malloc(large_size(rng));
    allocator->free(allocator->malloc(small_size(rng)));
    allocator->free(allocator->malloc(large_size(rng)));
    const DeviceStats before = allocator->stats();
    const std::uint64_t k = 1 + rng() % 5;
    allocator->inject_out_of_memory(k);
    EXPECT_EQ(allocator->injected_out_of_memory_countdown(), k);
    std::vector<Block*> served;  // the k - 1 mallocs before the failing one
    std::size_t failing_bytes = 0;
    for (std::uint64_t i = 1; i <= k; ++i) {
      // Sizes the cache can serve and sizes it cannot, at random.
      const std::size_t bytes = rng() % 2 == 0 ? small_size(rng) : large_size(rng);
      if (i < k) {
        served.push_back(allocator->malloc(bytes));
        EXPECT_EQ(allocator->injected_out_of_memory_countdown(), k - i);
        continue;
      }
      failing_bytes = bytes;
      try {
        allocator->malloc(bytes);
        FAIL() << "malloc " << k << " of " << bytes << " B did not fail";
      } catch (const OutOfMemoryError& error) {
        const std::string text = error.what();
        EXPECT_EQ(text.rfind("sim:test out of memory. Tried to allocate ", 0), 0u) << text;
        EXPECT_NE(text.find(" is reserved by PyTorch but unallocated."), std::string::npos) << text;
        EXPECT_EQ(error.details().requested_bytes, bytes);
        EXPECT_EQ(error.details().segment_bytes,
                  get_allocation_size(round_size(bytes, AllocatorConfig{})));
      }
    }
    EXPECT_EQ(allocator->injected_out_of_memory_countdown(), 0u) << "it fires once";
    allocator->check_invariants();
    const DeviceStats after = allocator->stats();
    EXPECT_EQ(after.num_ooms, before.num_ooms + 1);
    EXPECT_EQ(after.num_alloc_retries, before.num_alloc_retries + 1);
    EXPECT_EQ(after.allocation[kAggregate].current,
              before.allocation[kAggregate].current + static_cast<std::int64_t>(k - 1))
        << "the failed malloc allocated nothing";
    // As before a real OOM, every whole cached segment went back to the device: only segments
    // with a live block stay reserved.
    const std::vector<TraceEntry> trace = allocator->trace();
    const nlohmann::json snapshot = allocator->snapshot();
    for (const auto& segment : snapshot["segments"]) {
      EXPECT_GT(segment["allocated_size"].get<std::int64_t>(), 0)
          << "a cached segment of " << segment["total_size"] << " B survived the OOM";
    }
    ASSERT_FALSE(trace.empty());
    EXPECT_EQ(trace.back().action, TraceAction::oom);
    EXPECT_EQ(trace.back().size, round_size(failing_bytes, AllocatorConfig{}));
    // The next malloc is served as usual.
    Block* next = allocator->malloc(failing_bytes);
    ASSERT_NE(next, nullptr);
    allocator->free(next);
    for (Block* block : served) allocator->free(block);
    allocator->free(live_small);
    allocator->free(live_large);
    allocator->check_invariants();
  }
}

TEST(InjectedOutOfMemory, ZeroDisarmsAndZeroByteRequestsDoNotCount) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->inject_out_of_memory(2);
  EXPECT_EQ(allocator->malloc(0), nullptr);
  Block* first = allocator->malloc(100);  // the first counted malloc
  EXPECT_EQ(allocator->injected_out_of_memory_countdown(), 1u);
  EXPECT_THROW(allocator->malloc(100), OutOfMemoryError);
  allocator->inject_out_of_memory(1);
  allocator->inject_out_of_memory(0);
  EXPECT_EQ(allocator->injected_out_of_memory_countdown(), 0u);
  Block* second = allocator->malloc(100);
  EXPECT_NE(second, nullptr) << "disarmed";
  // A request of 1 EiB or more fails with its own error, armed or not.
  allocator->inject_out_of_memory(3);
  EXPECT_THROW(allocator->malloc(kOneExaByte), OutOfMemoryError);
  EXPECT_EQ(allocator->injected_out_of_memory_countdown(), 3u);
  EXPECT_EQ(allocator->stats().num_ooms, 1);
  allocator->free(first);
  allocator->free(second);
  allocator->check_invariants();
}

TEST(OutOfMemory, MessageFollowsPyTorchsCurrentFormat) {
  auto allocator = make_sim_allocator(64 * kMiB);
  Block* big = allocator->malloc(50 * kMiB);
  Block* small = allocator->malloc(1000);  // 2 MiB small segment, 1 KiB allocated
  try {
    allocator->malloc(5 * kMiB);  // needs a 20 MiB segment; 12 MiB are free
    FAIL() << "no exception";
  } catch (const OutOfMemoryError& error) {
    // allocated = 50 MiB + 1024 B = 50.00 MiB; reserved − allocated = 2 MiB − 1 KiB = 2047 KiB.
    EXPECT_EQ(std::string(error.what()),
              "sim:test out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
              "64.00 MiB of which 12.00 MiB is free. Of the allocated memory 50.00 MiB is "
              "allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated. If "
              "reserved but unallocated memory is large try setting "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
              "documentation for Memory Management  "
              "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
    const OutOfMemoryDetails& details = error.details();
    EXPECT_EQ(details.requested_bytes, 5 * kMiB);
    EXPECT_EQ(details.rounded_bytes, 5 * kMiB);
    EXPECT_EQ(details.segment_bytes, 20 * kMiB);
    EXPECT_EQ(details.capacity_bytes, 64 * kMiB);
    EXPECT_EQ(details.free_bytes, 12 * kMiB);
    EXPECT_EQ(details.allocated_bytes, static_cast<std::int64_t>(50 * kMiB + 1024));
    EXPECT_EQ(details.reserved_unallocated_bytes, static_cast<std::int64_t>(2 * kMiB - 1024));
    ASSERT_EQ(details.largest_live_blocks.size(), 2u);
    EXPECT_EQ(details.largest_live_blocks[0].size_bytes, 50 * kMiB);
  }
  allocator->check_invariants();
  allocator->free(big);
  allocator->free(small);
  allocator->check_invariants();
}

TEST(OutOfMemory, LiveBlocksCarryCategoryNameModuleAndPhase) {
  auto allocator = make_sim_allocator(32 * kMiB);
  Block* weights = nullptr;
  {
    PhaseScope setup(TrainingPhase::setup);
    ModuleScope block("blocks.3");
    ModuleScope attention("attn");
    weights = allocator->malloc(24 * kMiB, 0, MemoryCategory::parameter, "qkv.weight");
  }
  try {
    allocator->malloc(24 * kMiB, 0, MemoryCategory::activation, "logits");
    FAIL() << "no exception";
  } catch (const OutOfMemoryError& error) {
    ASSERT_EQ(error.details().largest_live_blocks.size(), 1u);
    const LiveBlockInfo& live = error.details().largest_live_blocks[0];
    EXPECT_EQ(live.category, MemoryCategory::parameter);
    EXPECT_EQ(live.name, "qkv.weight");
    EXPECT_EQ(live.module, "blocks.3.attn");
    EXPECT_EQ(live.phase, TrainingPhase::setup);
    EXPECT_EQ(live.stack, 0u);  // not recording stacks
    EXPECT_EQ(live.address, weights->address);
  }
}

TEST(MemoryFraction, LimitsReservedMemoryAndIsNamedInTheMessage) {
  auto allocator = make_sim_allocator(100 * kMiB);
  allocator->set_memory_fraction(0.5);
  Block* a = allocator->malloc(40 * kMiB);
  try {
    allocator->malloc(5 * kMiB);  // 40 + 20 MiB segment > 50 MiB allowed
    FAIL() << "no exception";
  } catch (const OutOfMemoryError& error) {
    EXPECT_NE(std::string(error.what()).find("of which 60.00 MiB is free. 50.00 MiB allowed; Of "),
              std::string::npos)
        << error.what();
    EXPECT_EQ(error.details().allowed_bytes, 50 * kMiB);
  }
  allocator->free(a);
  EXPECT_THROW(allocator->set_memory_fraction(1.5), UsageError);
}

TEST(MaxSplitSize, OversizeBlocksAreNotGivenToSmallerRequests) {
  auto allocator = make_meta_allocator(kGiB, "max_split_size_mb:40");
  Block* big = allocator->malloc(50 * kMiB);
  DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.oversize_allocations.current, 1);
  EXPECT_EQ(stats.oversize_segments.current, 1);
  EXPECT_EQ(stats.max_split_size, static_cast<std::int64_t>(40 * kMiB));
  const std::uint64_t big_address = big->address;
  allocator->free(big);
  Block* medium = allocator->malloc(30 * kMiB);  // < 40 MiB may not take the 50 MiB block
  EXPECT_NE(medium->address, big_address);
  Block* oversize = allocator->malloc(45 * kMiB);  // 50 < 45 + 20: taken whole, not split
  EXPECT_EQ(oversize->address, big_address);
  EXPECT_EQ(oversize->size, 50 * kMiB);
  allocator->check_invariants();
}

TEST(MaxSplitSize, OversizeRequestsRejectBlocksBeyondTheRoundingLimit) {
  auto allocator = make_meta_allocator(kGiB, "max_split_size_mb:40");
  Block* big = allocator->malloc(64 * kMiB);
  const std::uint64_t big_address = big->address;
  allocator->free(big);
  EXPECT_NE(allocator->malloc(42 * kMiB)->address, big_address);  // 64 >= 42 + 20
  EXPECT_EQ(allocator->malloc(46 * kMiB)->address, big_address);  // 64 < 46 + 20
}

TEST(MaxSplitSize, ReleasesACachedOversizeBlockInsteadOfFlushingEverything) {
  auto allocator = make_sim_allocator(80 * kMiB, "max_split_size_mb:20");
  allocator->free(allocator->malloc(60 * kMiB));  // cached, and 60 >= 30 + 20 so not reusable
  Block* b = allocator->malloc(30 * kMiB);        // 60 + 30 > 80: release the 60 MiB block first
  ASSERT_NE(b, nullptr);
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.num_alloc_retries, 0);
  EXPECT_EQ(stats.num_sync_all_streams, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(30 * kMiB));
}

// Before flushing the whole cache, an out-of-memory malloc releases only what it needs
// (PyTorch's release_available_cached_blocks): the smallest whole cached segment of at least
// max(request, max_split_size) on its stream, else oversize segments largest first until their
// sum reaches that size. Each case puts the sum or the size exactly on its boundary, so releasing
// one segment more (or stopping one short and flushing everything) changes what stays reserved.
struct OversizeRelease {
  const char* what;
  std::uint64_t capacity_mib;
  std::vector<std::size_t> cached_mib;  // whole free segments, cached in this order
  std::size_t request_mib;
  std::vector<std::size_t> released_mib;  // expected, in any order
};

TEST(MaxSplitSize, ReleasesExactlyTheOversizeSegmentsTheRequestNeeds) {
  const OversizeRelease cases[] = {
      // 40 + 30 = 70: the sum meets the request exactly; the other 30 stays cached.
      {"sum exactly the request", 160, {30, 30, 40}, 70, {40, 30}},
      // 40 + 30 = 70 < 71: one more is needed, and then the sum passes the request.
      {"sum one short of the request", 161, {30, 30, 40}, 71, {40, 30, 30}},
      // A segment of exactly max_split_size (20 MiB) is oversize and counts towards the sum.
      {"a segment of exactly max_split_size", 120, {20, 30, 40}, 90, {40, 30, 20}},
      // A small request needs max_split_size (20 MiB): the 20 MiB segment fits exactly and is the
      // only one released, not the larger 40 MiB one.
      {"a single segment of exactly the size needed", 62, {40, 20}, 5, {20}},
  };
  for (const OversizeRelease& c : cases) {
    SCOPED_TRACE(c.what);
    auto allocator = make_sim_allocator(c.capacity_mib * kMiB, "max_split_size_mb:20");
    std::vector<Block*> held;
    for (const std::size_t mib : c.cached_mib) held.push_back(allocator->malloc(mib * kMiB));
    for (Block* block : held) allocator->free(block);
    const DeviceStats before = allocator->stats();
    Block* fresh = allocator->malloc(c.request_mib * kMiB);
    ASSERT_NE(fresh, nullptr);
    const DeviceStats after = allocator->stats();
    EXPECT_EQ(after.num_alloc_retries, 0) << "the cache was flushed instead";
    EXPECT_EQ(after.num_sync_all_streams, 0) << "the cache was flushed instead";
    EXPECT_EQ(after.num_device_free - before.num_device_free,
              static_cast<std::int64_t>(c.released_mib.size()));
    std::size_t released_bytes = 0;
    for (const std::size_t mib : c.released_mib) released_bytes += mib * kMiB;
    std::size_t cached_bytes = 0;
    for (const std::size_t mib : c.cached_mib) cached_bytes += mib * kMiB;
    EXPECT_EQ(after.reserved_bytes[kAggregate].current,
              static_cast<std::int64_t>(cached_bytes - released_bytes +
                                        get_allocation_size(c.request_mib * kMiB)));
    // The segments left are the cached ones not expected released, plus the new one.
    std::multiset<std::size_t> expected_mib(c.cached_mib.begin(), c.cached_mib.end());
    for (const std::size_t mib : c.released_mib) expected_mib.erase(expected_mib.find(mib));
    expected_mib.insert(get_allocation_size(c.request_mib * kMiB) / kMiB);
    std::multiset<std::size_t> segments_mib;
    const nlohmann::json snapshot = allocator->snapshot();
    for (const auto& segment : snapshot["segments"]) {
      segments_mib.insert(segment["total_size"].get<std::size_t>() / kMiB);
    }
    EXPECT_EQ(segments_mib, expected_mib);
    allocator->free(fresh);
    allocator->check_invariants();
  }
}

// Only the requesting stream's cached segments are released before the flush, in both stream
// orders (the pool is ordered by stream first): another stream's oversize segment, large enough,
// stays until the flush-and-retry, which then frees it.
TEST(MaxSplitSize, ReleasesOnlyTheRequestingStreamsSegmentsBeforeFlushing) {
  for (const auto& [cached_on, wanted_on] :
       {std::pair<StreamId, StreamId>{1, 0}, std::pair<StreamId, StreamId>{0, 1}}) {
    for (const std::size_t cached_mib : {std::size_t{40}, std::size_t{60}}) {  // single, several
      SCOPED_TRACE("cached " + std::to_string(cached_mib) + " MiB on stream " +
                   std::to_string(cached_on) + ", wanted on " + std::to_string(wanted_on));
      auto allocator = make_sim_allocator(80 * kMiB, "max_split_size_mb:20");
      allocator->free(allocator->malloc(cached_mib * kMiB, cached_on));
      Block* fresh = allocator->malloc(50 * kMiB, wanted_on);  // 80 − cached < 50: needs room
      const DeviceStats stats = allocator->stats();
      EXPECT_EQ(stats.num_alloc_retries, 1) << "another stream's segment was released first";
      EXPECT_EQ(stats.num_sync_all_streams, 1);
      EXPECT_EQ(stats.num_device_free, 1);
      allocator->free(fresh);
      allocator->check_invariants();
    }
  }
}

TEST(MaxSplitSize, WithoutItTheSameCaseNeedsARetry) {
  auto allocator = make_sim_allocator(80 * kMiB);
  allocator->free(allocator->malloc(60 * kMiB));
  allocator->malloc(70 * kMiB);
  EXPECT_EQ(allocator->stats().num_alloc_retries, 1);
}

TEST(RoundupPower2Divisions, SingleValueRoundsToQuarterSteps) {
  const AllocatorConfig config = parse_alloc_conf("roundup_power2_divisions:4");
  EXPECT_EQ(round_size(kMiB + 1, config), kMiB + 256 * kKiB);
  EXPECT_EQ(round_size(1300 * kKiB, config), kMiB + 512 * kKiB);
  EXPECT_EQ(round_size(3000, config), 3072u);  // 2048 < 3000: steps of 512 between 2048 and 4096
  EXPECT_EQ(round_size(1500, config), 1536u);  // ≤ 512 × 4: plain 512-byte rounding
  EXPECT_EQ(round_size(4 * kMiB, config), 4 * kMiB);  // powers of two stay
}

TEST(RoundupPower2Divisions, ListFormMatchesTheUpstreamExample) {
  const AllocatorConfig config =
      parse_alloc_conf("roundup_power2_divisions:[64:8,128:2,256:4,512:2,1024:4,>:1]");
  EXPECT_EQ(config.divisions_for(32 * kMiB), 8u);
  EXPECT_EQ(config.divisions_for(64 * kMiB), 8u);
  EXPECT_EQ(config.divisions_for(128 * kMiB), 2u);
  EXPECT_EQ(config.divisions_for(256 * kMiB), 4u);
  EXPECT_EQ(config.divisions_for(512 * kMiB), 2u);
  EXPECT_EQ(config.divisions_for(1024 * kMiB), 4u);
  EXPECT_EQ(config.divisions_for(2048 * kMiB), 1u);
  EXPECT_EQ(config.divisions_for(100 * kGiB), 1u);
  EXPECT_EQ(round_size(130 * kMiB, config), 192 * kMiB);  // 2 divisions of [128, 256) MiB
}

TEST(GarbageCollection, FreesOldCachedBlocksAboveTheThreshold) {
  auto run = [](const std::string& conf) {
    auto allocator = make_sim_allocator(100 * kMiB, conf);
    allocator->set_memory_fraction(1.0);
    Block* a = allocator->malloc(30 * kMiB);
    Block* b = allocator->malloc(30 * kMiB);
    allocator->free(a);            // 60 MiB reserved, 30 MiB of it cached
    allocator->malloc(40 * kMiB);  // cache miss
    allocator->free(b);
    return allocator->stats();
  };
  const DeviceStats with_gc = run("garbage_collection_threshold:0.5");
  EXPECT_EQ(with_gc.num_device_free, 1);
  EXPECT_EQ(with_gc.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(70 * kMiB));
  const DeviceStats without_gc = run("");
  EXPECT_EQ(without_gc.num_device_free, 0);
  EXPECT_EQ(without_gc.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(100 * kMiB));
}

// The out-of-memory observer (torch._C._cuda_attach_out_of_memory_observer) sees each failure with
// the allocator unlocked and in the failure's state: it can take a snapshot (which locks) in which
// the failed request is the trace's last entry and every block the caller held is still live.
TEST(OutOfMemoryObserver, SeesTheFailuresStateWithTheLockReleased) {
  std::thread([] {}).join();  // from now on the process is multithreaded: the lock is real
  auto allocator = make_sim_allocator(64 * kMiB);
  allocator->record_history(RecordMode::all);
  int calls = 0;
  std::string last_action;
  std::int64_t allocated_then = 0;
  allocator->attach_out_of_memory_observer([&](const OutOfMemoryError& error) {
    ++calls;
    const nlohmann::json snapshot = allocator->snapshot();  // locks: no deadlock
    const nlohmann::json& trace = snapshot.at("device_traces").at(0);
    last_action = trace.at(trace.size() - 2).at("action");  // before the snapshot's own entry
    allocated_then = allocator->stats().allocated_bytes[kAggregate].current;
    EXPECT_EQ(error.details().allocated_bytes, allocated_then);
  });
  Block* held = allocator->malloc(40 * kMiB);
  EXPECT_THROW(allocator->malloc(40 * kMiB), OutOfMemoryError);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(last_action, "oom");
  EXPECT_EQ(allocated_then, static_cast<std::int64_t>(40 * kMiB));
  allocator->attach_out_of_memory_observer({});
  EXPECT_THROW(allocator->malloc(40 * kMiB), OutOfMemoryError);
  EXPECT_EQ(calls, 1);  // removed
  allocator->free(held);
  allocator->check_invariants();
}

TEST(GarbageCollection, DoesNothingWithoutAMemoryFraction) {
  auto allocator = make_sim_allocator(100 * kMiB, "garbage_collection_threshold:0.5");
  Block* a = allocator->malloc(30 * kMiB);
  allocator->malloc(30 * kMiB);
  allocator->free(a);
  allocator->malloc(40 * kMiB);
  EXPECT_EQ(allocator->stats().num_device_free, 0);
}

TEST(ExpandableSegments, MapPagesOnDemandInOneGrowingSegment) {
  auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
  Block* a = allocator->malloc(5 * kMiB);
  DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes[kLargePool].current, static_cast<std::int64_t>(20 * kMiB));
  EXPECT_EQ(stats.segment[kAggregate].current, 0);  // mapping does not count as a segment
  EXPECT_EQ(stats.num_device_alloc, 1);
  Block* b = allocator->malloc(5 * kMiB);
  EXPECT_EQ(b->address, a->address + 5 * kMiB);
  Block* c = allocator->malloc(30 * kMiB);  // 10 MiB mapped tail + 20 MiB more pages
  EXPECT_EQ(c->address, a->address + 10 * kMiB);
  stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(40 * kMiB));
  EXPECT_EQ(stats.num_device_alloc, 2);
  EXPECT_EQ(stats.inactive_split[kAggregate].current, 0);
  allocator->check_invariants();
  allocator->free(a);
  allocator->free(b);
  allocator->free(c);
  allocator->empty_cache();
  stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  allocator->check_invariants();
}

TEST(ExpandableSegments, SplitAnyRemainderOfAtLeast512Bytes) {
  auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
  Block* a = allocator->malloc(19 * kMiB);  // remainder 1 MiB in the 20 MiB page: still split
  EXPECT_EQ(a->size, 19 * kMiB);
  Block* b = allocator->malloc(kMiB + 512);
  EXPECT_EQ(b->address, a->address + 19 * kMiB);
  allocator->check_invariants();
}

TEST(ExpandableSegments, EmptyCacheUnmapsOnlyWholeFreePages) {
  auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
  Block* a = allocator->malloc(30 * kMiB);  // maps 40 MiB: pages [0,20) and [20,40)
  Block* b = allocator->malloc(5 * kMiB);   // at 30 MiB
  allocator->free(a);
  allocator->empty_cache();  // [0,30) free: only page [0,20) is whole
  EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current,
            static_cast<std::int64_t>(20 * kMiB));
  allocator->check_invariants();
  allocator->free(b);
  allocator->empty_cache();
  EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current, 0);
  allocator->check_invariants();
}

TEST(Stats, ResetPeakSetsPeakToCurrent) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->free(allocator->malloc(8 * kMiB));
  Block* a = allocator->malloc(kMiB);
  EXPECT_EQ(allocator->stats().allocated_bytes[kAggregate].peak,
            static_cast<std::int64_t>(8 * kMiB));
  allocator->reset_peak_stats();
  EXPECT_EQ(allocator->stats().allocated_bytes[kAggregate].peak, static_cast<std::int64_t>(kMiB));
  allocator->free(a);
}

// reset_peak_memory_stats on every peak, through memory_stats()'s keys: each peak becomes its
// current value (a peak above current beforehand in every pool, so none can pass by chance), and
// nothing else changes.
TEST(Stats, ResetPeakSetsEveryPeakToItsCurrentAndNothingElse) {
  auto allocator = make_sim_allocator(kGiB, "max_split_size_mb:20");
  Block* keep_small = allocator->malloc(1000);
  Block* keep_large = allocator->malloc(3 * kMiB);
  allocator->free(allocator->malloc(2000));
  allocator->free(allocator->malloc(40 * kMiB));  // an oversize allocation and segment
  allocator->empty_cache();
  std::map<std::string, std::int64_t> before;
  for (const auto& [key, value] : allocator->memory_stats()) before[key] = value;
  for (const char* peak :
       {"allocated_bytes.small_pool.peak", "allocation.large_pool.peak", "segment.all.peak",
        "oversize_allocations.peak", "oversize_segments.peak", "requested_bytes.all.peak"}) {
    const std::string name(peak);
    const std::string current = name.substr(0, name.size() - 4) + "current";
    ASSERT_GT(before.at(peak), before.at(current)) << peak << ": the test proves nothing";
  }
  allocator->reset_peak_stats();
  for (const auto& [key, value] : allocator->memory_stats()) {
    if (key.ends_with(".peak")) {
      const std::string current = key.substr(0, key.size() - 4) + "current";
      EXPECT_EQ(value, before.at(current)) << key << " is not its current value";
    } else {
      EXPECT_EQ(value, before.at(key)) << key << " changed, but only peaks may be reset";
    }
  }
  allocator->free(keep_small);
  allocator->free(keep_large);
  allocator->check_invariants();
}

// Every total and every num_* counter that reset_accumulated_memory_stats must zero, read
// through memory_stats()'s keys so that a counter added later is covered too: first made nonzero
// (an out-of-memory error, a retry, a device free and a synchronize of every stream each happen at
// least once), then reset; current, peak and the setting stay.
TEST(Stats, ResetAccumulatedZeroesEveryTotalAndEveryCounterAndNothingElse) {
  auto allocator = make_sim_allocator(64 * kMiB, "max_split_size_mb:20");
  Block* keep_small = allocator->malloc(1000);
  allocator->free(allocator->malloc(40 * kMiB));  // an oversize block, cached
  Block* big = allocator->malloc(50 * kMiB);      // the cached 40 MiB released: a device free
  EXPECT_THROW(allocator->malloc(30 * kMiB), OutOfMemoryError);  // a retry, a sync, an OOM
  std::map<std::string, std::int64_t> before;
  for (const auto& [key, value] : allocator->memory_stats()) before[key] = value;
  for (const char* key :
       {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
        "num_device_free", "allocation.all.allocated", "allocation.all.freed",
        "oversize_allocations.allocated", "oversize_segments.freed",
        "requested_bytes.large_pool.freed", "inactive_split.small_pool.allocated"}) {
    ASSERT_GT(before.at(key), 0) << key << " is 0 before the reset: the test proves nothing";
  }
  allocator->reset_accumulated_stats();
  for (const auto& [key, value] : allocator->memory_stats()) {
    const bool accumulated =
        key.rfind("num_", 0) == 0 || key.ends_with(".allocated") || key.ends_with(".freed");
    if (accumulated) {
      EXPECT_EQ(value, 0) << key << " was " << before.at(key) << " and is not zeroed";
    } else {
      EXPECT_EQ(value, before.at(key)) << key << " changed, but only totals may be reset";
    }
  }
  allocator->free(big);
  allocator->free(keep_small);
  allocator->check_invariants();
}

// "all" is the sum of the pools, but its peak is the peak of the sum: a small and a large block
// that never live at the same time do not add up in it.
TEST(Stats, TheAllPeakIsThePeakOfTheSumNotTheSumOfPeaks) {
  auto allocator = make_meta_allocator(kGiB);
  const auto small_bytes = static_cast<std::int64_t>(3 * kKiB);
  const auto large_bytes = static_cast<std::int64_t>(6 * kMiB);
  allocator->free(allocator->malloc(3 * kKiB));
  allocator->free(allocator->malloc(6 * kMiB));
  DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].peak, small_bytes);
  EXPECT_EQ(stats.allocated_bytes[kLargePool].peak, large_bytes);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].peak, large_bytes);
  EXPECT_EQ(stats.allocation[kAggregate].peak, 1);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].allocated, small_bytes + large_bytes);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].freed, small_bytes + large_bytes);
  EXPECT_EQ(stats.segment[kAggregate].current, 2);
  Block* small = allocator->malloc(3 * kKiB);
  Block* large = allocator->malloc(6 * kMiB);
  stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes[kAggregate].peak, small_bytes + large_bytes);
  EXPECT_EQ(stats.allocation[kAggregate].peak, 2);
  EXPECT_EQ(stats.active_bytes[kAggregate].current, small_bytes + large_bytes);
  allocator->free(large);
  allocator->reset_peak_stats();
  stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes[kAggregate].peak, small_bytes);
  EXPECT_EQ(stats.allocated_bytes[kLargePool].peak, 0);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].peak, stats.reserved_bytes[kAggregate].current);
  allocator->reset_accumulated_stats();
  allocator->free(small);
  stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes[kAggregate].allocated, 0);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].freed, small_bytes);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].peak, small_bytes);
  allocator->check_invariants();
}

// PyTorch's complete memory_stats() key list, written out here from its source (not from
// vramlab's): torch/csrc/cuda/Module.cpp, THCPModule_memoryStats (PyTorch 2.1 and later), builds
// the nested dict below and torch/cuda/memory.py memory_stats() flattens it with "." joins.
//   scalars: num_alloc_retries, num_ooms, max_split_size, num_sync_all_streams,
//            num_device_alloc, num_device_free
//   StatArray (all/small_pool/large_pool × current/peak/allocated/freed): allocation, segment,
//            active, inactive_split, allocated_bytes, reserved_bytes, active_bytes,
//            inactive_split_bytes, requested_bytes
//   Stat (current/peak/allocated/freed): oversize_allocations, oversize_segments
// (memory.py's docstring says "allocated.{all,...}" for the count, but the code's key is
// "allocation".)
std::set<std::string> pytorch_memory_stats_keys() {
  std::set<std::string> keys = {"num_alloc_retries",    "num_ooms",         "max_split_size",
                                "num_sync_all_streams", "num_device_alloc", "num_device_free"};
  const char* metrics[] = {"current", "peak", "allocated", "freed"};
  for (const char* array :
       {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
        "active_bytes", "inactive_split_bytes", "requested_bytes"}) {
    for (const char* pool : {"all", "small_pool", "large_pool"}) {
      for (const char* metric : metrics)
        keys.insert(std::string(array) + "." + pool + "." + metric);
    }
  }
  for (const char* stat : {"oversize_allocations", "oversize_segments"}) {
    for (const char* metric : metrics) keys.insert(std::string(stat) + "." + metric);
  }
  return keys;
}

// vramlab claims every key of PyTorch's list: none renamed, none missing, none invented.
TEST(Stats, KeysAreExactlyPyTorchsKeysSortedOnce) {
  auto allocator = make_sim_allocator(kGiB);
  const auto stats = allocator->memory_stats();
  const std::set<std::string> pytorch = pytorch_memory_stats_keys();
  ASSERT_EQ(pytorch.size(), 122u);
  std::set<std::string> ours;
  for (const auto& [key, value] : stats) {
    EXPECT_TRUE(pytorch.contains(key))
        << "'" << key << "' is not a key of PyTorch's memory_stats()";
    EXPECT_TRUE(ours.insert(key).second) << "'" << key << "' appears twice";
  }
  for (const std::string& key : pytorch) {
    EXPECT_TRUE(ours.contains(key)) << "PyTorch's '" << key << "' is missing";
  }
  for (std::size_t i = 1; i < stats.size(); ++i) EXPECT_LT(stats[i - 1].first, stats[i].first);
}

// Every key carries its own field: each field of DeviceStats gets a distinct value, and each key
// must read back the value of the field its name says (a key wired to its neighbour's field
// passes a key-list check).
TEST(Stats, EveryKeyReadsTheFieldItNames) {
  DeviceStats stats;
  std::map<std::string, std::int64_t> expected;
  std::int64_t next = 1;
  const auto fill = [&](Stat& stat, const std::string& prefix) {
    for (auto [field, metric] : {std::pair{&stat.current, "current"},
                                 {&stat.peak, "peak"},
                                 {&stat.allocated, "allocated"},
                                 {&stat.freed, "freed"}}) {
      *field = next;
      expected[prefix + "." + metric] = next++;
    }
  };
  const std::pair<StatArray*, const char*> arrays[] = {
      {&stats.allocation, "allocation"},
      {&stats.segment, "segment"},
      {&stats.active, "active"},
      {&stats.inactive_split, "inactive_split"},
      {&stats.allocated_bytes, "allocated_bytes"},
      {&stats.reserved_bytes, "reserved_bytes"},
      {&stats.active_bytes, "active_bytes"},
      {&stats.inactive_split_bytes, "inactive_split_bytes"},
      {&stats.requested_bytes, "requested_bytes"}};
  for (const auto& [array, name] : arrays) {
    fill((*array)[kAggregate], std::string(name) + ".all");
    fill((*array)[kSmallPool], std::string(name) + ".small_pool");
    fill((*array)[kLargePool], std::string(name) + ".large_pool");
  }
  fill(stats.oversize_allocations, "oversize_allocations");
  fill(stats.oversize_segments, "oversize_segments");
  for (auto [field, key] : {std::pair{&stats.num_alloc_retries, "num_alloc_retries"},
                            {&stats.num_ooms, "num_ooms"},
                            {&stats.num_sync_all_streams, "num_sync_all_streams"},
                            {&stats.num_device_alloc, "num_device_alloc"},
                            {&stats.num_device_free, "num_device_free"},
                            {&stats.max_split_size, "max_split_size"}}) {
    *field = next;
    expected[key] = next++;
  }
  const auto key_values = stats.to_key_values();
  ASSERT_EQ(key_values.size(), expected.size());
  for (const auto& [key, value] : key_values) {
    ASSERT_TRUE(expected.contains(key)) << key;
    EXPECT_EQ(value, expected.at(key)) << key << " reads another field's value";
  }
}

TEST(Stats, CategoryBytesTrackCurrentAndPeak) {
  auto allocator = make_sim_allocator(kGiB);
  Block* w = allocator->malloc(3000, 0, MemoryCategory::parameter);
  Block* act = allocator->malloc(5 * kMiB, 0, MemoryCategory::activation);
  allocator->free(act);
  const CategoryStats stats = allocator->category_stats();
  EXPECT_EQ(stats.of(MemoryCategory::parameter).current, 3072);
  EXPECT_EQ(stats.of(MemoryCategory::activation).current, 0);
  EXPECT_EQ(stats.of(MemoryCategory::activation).peak, static_cast<std::int64_t>(5 * kMiB));
  EXPECT_EQ(stats.of(MemoryCategory::gradient).peak, 0);
  allocator->free(w);
}

TEST(MetaBacking, ATerabyteDeviceWorksWithoutTouchingMemory) {
  auto allocator = make_meta_allocator(1ULL << 40);
  std::vector<Block*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(allocator->malloc(100 * kGiB));
  EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current,
            static_cast<std::int64_t>(1000 * kGiB));
  EXPECT_THROW(allocator->malloc(100 * kGiB), OutOfMemoryError);
  EXPECT_FALSE(allocator->host_accessible());
  allocator->check_invariants();
}

TEST(SimBacking, MemoryIsWritable) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(4096);
  ASSERT_TRUE(allocator->host_accessible());
  auto* bytes = reinterpret_cast<unsigned char*>(a->address);
  for (std::size_t i = 0; i < 4096; ++i) bytes[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(bytes[4095], 255);
  allocator->free(a);
}

}  // namespace
}  // namespace vramlab::memory
