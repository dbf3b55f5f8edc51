// Tensor: the one owning handle for device memory. It takes one block of its device's caching
// allocator (requested bytes, category and name as given), returns it when destroyed, reset or
// overwritten by a move, and hands out typed views of itself.
//   build/tests/bin/test_memory --gtest_filter='Tensor.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "common/memory/make_caching_allocator.h"
#include "common/memory/tensor.h"
#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

std::unique_ptr<CachingAllocator> sim_allocator() {
  return make_caching_allocator(parse_device("sim:256MiB"), AllocatorConfig{});
}

int64_t requested(const CachingAllocator& allocator) {
  return allocator.stats().requested_bytes[kAggregate].current;
}

TEST(Tensor, AllocatesItsBytesWithCategoryAndNameAndFreesThemWhenDestroyed) {
  const auto allocator = sim_allocator();
  {
    const Tensor t(*allocator, {3, 5, 7}, DType::bf16, MemoryCategory::activation, "h");
    EXPECT_EQ(t.numel(), 105);
    EXPECT_EQ(t.bytes(), 210);
    EXPECT_EQ(t.allocator(), allocator.get());
    EXPECT_EQ(requested(*allocator), 210);
    const auto live = allocator->live_blocks();
    EXPECT_TRUE(std::any_of(live.begin(), live.end(), [](const LiveBlockInfo& b) {
      return b.name == "h" && b.category == MemoryCategory::activation && b.requested_bytes == 210;
    }));
  }
  EXPECT_EQ(requested(*allocator), 0);
  allocator->check_invariants();
}

TEST(Tensor, MovingTransfersOwnershipAndAssignmentFreesTheOldBlock) {
  const auto allocator = sim_allocator();
  Tensor a(*allocator, {100}, DType::f32, MemoryCategory::gradient, "a");
  void* const a_data = a.data();
  Tensor b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is defined as empty
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), a_data);
  EXPECT_EQ(requested(*allocator), 400);
  b = Tensor(*allocator, {10}, DType::i32, MemoryCategory::input, "ids");
  EXPECT_EQ(requested(*allocator), 40) << "the overwritten block was not returned";
  b.reset();
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(b.view().none()) << "an empty tensor's view must not look like one element";
  EXPECT_EQ(requested(*allocator), 0);
  b.reset();  // twice is harmless
}

TEST(Tensor, ViewsAddressTheirSliceOfAFlatTensor) {
  const auto allocator = make_caching_allocator(parse_device("cpu"), AllocatorConfig{});
  const Tensor flat(*allocator, {12}, DType::f32, MemoryCategory::parameter, "flat");
  for (int64_t i = 0; i < 12; ++i) flat.f32()[i] = static_cast<float>(i);
  const TensorView w = flat.view(4, {2, 3});
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.f32()[0], 4.0f);
  EXPECT_EQ(w.f32()[5], 9.0f);
  EXPECT_THROW((void)flat.view(7, {2, 3}), InternalError);
  EXPECT_THROW((void)flat.i32(), InternalError);
}

TEST(Tensor, ABadShapeIsAUsageErrorNamingTheTensor) {
  const auto allocator = sim_allocator();
  try {
    Tensor(*allocator, {4, -2}, DType::f32, MemoryCategory::activation, "scores");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'scores': negative dimension in (4, -2)"),
              std::string::npos)
        << e.what();
  }
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_THROW(Tensor(*allocator, {big, 3}, DType::f32, MemoryCategory::activation, "x"),
               UsageError);
  EXPECT_EQ(requested(*allocator), 0);
}

TEST(Tensor, AMetaTensorHasAnAddressAndSizeButNoMemory) {
  const auto meta = make_caching_allocator(parse_device("meta"), AllocatorConfig{});
  const Tensor t(*meta, {1024, 1024, 1024}, DType::f32, MemoryCategory::activation, "huge");
  EXPECT_NE(t.data(), nullptr);
  EXPECT_EQ(t.bytes(), int64_t{4} << 30);
  EXPECT_EQ(meta->stats().allocated_bytes[kAggregate].current, int64_t{4} << 30);
}

TEST(Tensor, AnOutOfMemoryLeavesNothingAllocated) {
  const auto allocator = make_caching_allocator(parse_device("sim:4MiB"), AllocatorConfig{});
  EXPECT_THROW(Tensor(*allocator, {2, 1024, 1024}, DType::f32, MemoryCategory::activation, "big"),
               OutOfMemoryError);
  EXPECT_EQ(requested(*allocator), 0);
  allocator->check_invariants();
  const Tensor fits(*allocator, {256, 1024}, DType::f32, MemoryCategory::activation, "fits");
  EXPECT_EQ(requested(*allocator), int64_t{1} << 20);
}

}  // namespace
}  // namespace vramlab::memory
