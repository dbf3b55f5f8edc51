// The fragmentation lab of Edward Yang's devlog on PyTorch's CUDA caching allocator
// (pytorch/devlogs, content/eager/2026-06-01-cuda-caching-allocator.md), replayed on this
// allocator: without expandable segments every cudaMalloc is a segment of its own and blocks never
// merge across segments, so the order of the same requests decides what is reserved; with them
// one virtual range grows in 20 MiB pages, and only live blocks pin it. Issue #34 asks for these
// numbers as tests (the fragmentation lab of lesson 08).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kMiB;
using testing::make_meta_allocator;

// Allocates `count` blocks of `size` bytes each.
std::vector<Block*> lab_allocate(CachingAllocator& allocator, int count, std::uint64_t size) {
  std::vector<Block*> blocks;
  for (int i = 0; i < count; ++i) blocks.push_back(allocator.malloc(size));
  return blocks;
}

void lab_free_all(CachingAllocator& allocator, std::vector<Block*>& blocks) {
  for (Block* block : blocks) allocator.free(block);
  blocks.clear();
}

std::int64_t lab_reserved(const CachingAllocator& allocator) {
  return allocator.stats().reserved_bytes[kAggregate].current;
}

constexpr std::int64_t lab_mib(std::int64_t n) {
  return n * static_cast<std::int64_t>(kMiB);
}

// 8 × 16 MiB, freed, then 4 × 32 MiB: no cached 16 MiB segment can hold 32 MiB and two of them
// never merge, so four new segments are made: 256 MiB reserved for 128 MiB of data.
TEST(FragmentationLab, SmallBlocksFreedThenLargerOnesReserveTwiceTheData) {
  auto allocator = make_meta_allocator(kGiB);
  std::vector<Block*> small = lab_allocate(*allocator, 8, 16 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(128));
  lab_free_all(*allocator, small);
  std::vector<Block*> large = lab_allocate(*allocator, 4, 32 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(256));
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 12);
  // The 128 MiB nobody uses is "reserved but unallocated", the figure PyTorch's out-of-memory
  // message points at; empty_cache() gives back exactly it.
  EXPECT_EQ(lab_reserved(*allocator) - allocator->stats().allocated_bytes[kAggregate].current,
            lab_mib(128));
  allocator->empty_cache();
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(128));
  allocator->check_invariants();
  lab_free_all(*allocator, large);
}

// The other order: 4 × 32 MiB, freed, then 8 × 16 MiB: each 32 MiB segment splits into two 16 MiB
// blocks, and nothing new is made: 128 MiB reserved.
TEST(FragmentationLab, LargeBlocksFreedThenSmallerOnesSplitThem) {
  auto allocator = make_meta_allocator(kGiB);
  std::vector<Block*> large = lab_allocate(*allocator, 4, 32 * kMiB);
  lab_free_all(*allocator, large);
  std::vector<Block*> small = lab_allocate(*allocator, 8, 16 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(128));
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 4);
  EXPECT_EQ(allocator->stats().num_device_alloc, 4);
  allocator->check_invariants();
  lab_free_all(*allocator, small);
}

// With expandable segments the first order costs nothing more: 8 × 16 MiB map 7 pages of 20 MiB
// (140 MiB for 128 MiB of data), and once they are freed 4 × 32 MiB fit in the same pages.
TEST(FragmentationLab, ExpandableSegmentsMapSevenPagesForEightSixteens) {
  auto allocator = make_meta_allocator(kGiB, "expandable_segments:True");
  std::vector<Block*> small = lab_allocate(*allocator, 8, 16 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(140));
  lab_free_all(*allocator, small);
  std::vector<Block*> large = lab_allocate(*allocator, 4, 32 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(140));
  allocator->check_invariants();
  lab_free_all(*allocator, large);
}

// But live blocks still pin the range: of 4 × 16 MiB keep the second and the fourth; the two free
// 16 MiB holes cannot hold 32 MiB, so the range grows past the 80 MiB mapped (by one page: the
// request takes the 16 MiB free tail of the last page and 16 MiB of a new one).
TEST(FragmentationLab, LiveBlocksStillPinTheSplitsOfAnExpandableSegment) {
  auto allocator = make_meta_allocator(kGiB, "expandable_segments:True");
  std::vector<Block*> four = lab_allocate(*allocator, 4, 16 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(80));
  allocator->free(four[0]);
  allocator->free(four[2]);
  Block* wide = allocator->malloc(32 * kMiB);
  EXPECT_EQ(wide->address, four[3]->address + 16 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(100));
  allocator->check_invariants();
  allocator->free(wide);
  allocator->free(four[1]);
  allocator->free(four[3]);
}

// empty_cache() between phases (torch.cuda.empty_cache()): it gives the device back every cached
// segment with nothing live in it, and nothing of a segment that still holds one live block,
// however much of it is free; the live tensors' bytes do not change. Three 20 MiB segments of 4 MiB
// blocks (the 1-10 MiB requests' segment size), all freed but one block: 40 MiB go back, 16 MiB
// stay cached around the survivor.
TEST(FragmentationLab, EmptyCacheReturnsOnlySegmentsWithNothingLive) {
  auto allocator = make_meta_allocator(kGiB);
  std::vector<Block*> blocks = lab_allocate(*allocator, 15, 4 * kMiB);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(60));
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 3);
  Block* survivor = blocks[7];  // in the second segment
  blocks.erase(blocks.begin() + 7);
  lab_free_all(*allocator, blocks);
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(60));  // freed blocks stay cached
  allocator->empty_cache();
  EXPECT_EQ(lab_reserved(*allocator), lab_mib(20));
  EXPECT_EQ(allocator->stats().segment[kAggregate].current, 1);
  EXPECT_EQ(allocator->stats().allocated_bytes[kAggregate].current, lab_mib(4));
  allocator->check_invariants();
  allocator->free(survivor);
  allocator->empty_cache();
  EXPECT_EQ(lab_reserved(*allocator), 0);
}

}  // namespace
}  // namespace vramlab::memory
