// Tensors: storage through the device allocator, views into a flat buffer, copies and the
// host-device transfer counters.
//   build/tests/bin/test_tensor
#include <gtest/gtest.h>

#include "common/memory/tensor.h"
#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

const Device kSim = parse_device("sim:20:256MiB");
const Device kOtherSim = parse_device("sim:21:256MiB");
const Device kCpu = parse_device("cpu");
const Device kMeta = parse_device("meta:22:1TiB");

TEST(Tensor, EmptyAllocatesItsBytesWithCategoryAndName) {
  CachingAllocator& allocator = *device_allocator(kSim).caching_allocator();
  const std::int64_t before = allocator.stats().requested_bytes[kAggregate].current;
  {
    Tensor t = Tensor::empty({3, 5, 7}, DType::bf16, kSim, MemoryCategory::activation, "h");
    EXPECT_EQ(t.numel(), 105);
    EXPECT_EQ(t.nbytes(), 210u);
    EXPECT_EQ(allocator.stats().requested_bytes[kAggregate].current, before + 210);
    const auto live = allocator.live_blocks();
    const bool found = std::any_of(live.begin(), live.end(), [](const LiveBlockInfo& b) {
      return b.name == "h" && b.category == MemoryCategory::activation && b.requested_bytes == 210;
    });
    EXPECT_TRUE(found);
  }
  EXPECT_EQ(allocator.stats().requested_bytes[kAggregate].current, before);
}

TEST(Tensor, StorageIsFreedWhenTheLastViewGoes) {
  CachingAllocator& allocator = *device_allocator(kSim).caching_allocator();
  const std::int64_t before = allocator.stats().allocation[kAggregate].current;
  Tensor view;
  {
    Tensor flat = Tensor::zeros({1000}, DType::f32, kSim, MemoryCategory::parameter, "flat");
    view = flat.view({10, 10}, 500, "w1");
    EXPECT_EQ(flat.use_count(), 2);
  }
  EXPECT_EQ(allocator.stats().allocation[kAggregate].current, before + 1);
  EXPECT_EQ(view.name(), "w1");
  view = Tensor();
  EXPECT_EQ(allocator.stats().allocation[kAggregate].current, before);
}

TEST(Tensor, ViewsShareTheFlatBuffer) {
  Tensor flat = Tensor::zeros({12}, DType::f32, kCpu, MemoryCategory::parameter, "flat");
  Tensor second = flat.view({2, 3}, 6);
  second.data_as<float>()[1] = 4.5f;
  EXPECT_EQ(flat.data_as<float>()[7], 4.5f);
  EXPECT_EQ(second.storage_offset(), 6);
  Tensor nested = second.view({3}, 3);
  EXPECT_EQ(nested.storage_offset(), 9);
  EXPECT_EQ(flat.reshape({3, 4}).shape(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_THROW(flat.view({7}, 6), UsageError);
  EXPECT_THROW(flat.view({1}, -1), UsageError);
  EXPECT_THROW(flat.reshape({5, 5}), UsageError);
  EXPECT_THROW(flat.data_as<double>(), std::logic_error);
}

TEST(Tensor, CopiesBetweenDevicesAreCountedAsTransfers) {
  reset_transfer_stats();
  Tensor host = Tensor::empty({256}, DType::i32, kCpu, MemoryCategory::input, "batch");
  for (int i = 0; i < 256; ++i) host.data_as<std::int32_t>()[i] = i * 3 - 7;
  Tensor device = host.to(kSim);
  Tensor other = device.to(kOtherSim);
  Tensor back = other.to(kCpu);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(back.data_as<std::int32_t>()[i], i * 3 - 7) << i;
  const TransferStats stats = transfer_stats();
  EXPECT_EQ(stats.host_to_device_bytes, 1024);
  EXPECT_EQ(stats.device_to_device_bytes, 1024);
  EXPECT_EQ(stats.device_to_host_bytes, 1024);
  EXPECT_EQ(stats.host_to_device_copies, 1);
  EXPECT_EQ(stats.device_to_host_copies, 1);
  Tensor same = device.to(kSim);  // same device: a copy, not a transfer
  EXPECT_EQ(transfer_stats().device_to_device_copies, 1);
}

TEST(Tensor, MetaTensorsHaveSizesButNoData) {
  Tensor huge = Tensor::empty({1LL << 20, 1LL << 18}, DType::f16, kMeta, MemoryCategory::parameter);
  EXPECT_EQ(huge.nbytes(), 1ULL << 39);
  EXPECT_THROW(huge.data(), std::logic_error);
  Tensor zeros = Tensor::zeros({4}, DType::f32, kMeta);
  EXPECT_EQ(zeros.nbytes(), 16u);
}

TEST(Tensor, ZeroSizedTensorsAllocateNothing) {
  Tensor t = Tensor::empty({0, 5}, DType::f32, kSim);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.storage()->data(), nullptr);
}

TEST(Tensor, BadShapesAndCopiesAreRejected) {
  EXPECT_THROW(Tensor::empty({2, -1}, DType::f32, kCpu), UsageError);
  Tensor a = Tensor::empty({4}, DType::f32, kCpu);
  Tensor b = Tensor::empty({4}, DType::f16, kCpu);
  EXPECT_THROW(a.copy_from(b), UsageError);
  EXPECT_THROW(Tensor().device(), std::logic_error);
}

TEST(Tensor, OutOfMemoryNamesTheTensor) {
  Tensor big = Tensor::empty({200 << 20}, DType::u8, kSim, MemoryCategory::optimizer_state, "m");
  try {
    Tensor::empty({100 << 20}, DType::u8, kSim, MemoryCategory::activation, "logits");
    FAIL() << "no exception";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.details().largest_live_blocks.at(0).name, "m");
    EXPECT_EQ(error.details().largest_live_blocks.at(0).category, MemoryCategory::optimizer_state);
  }
}

}  // namespace
}  // namespace vramlab::memory
