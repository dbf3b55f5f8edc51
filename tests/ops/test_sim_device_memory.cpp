// The SIMT emulator's device memory routed through a sim device's caching allocator: emulated
// kernels' buffers show up in that device's memory_stats and category stats, its capacity limits
// them with the PyTorch-format OOM error, and the kernels compute the same results there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/cuda/sim_device_memory_resource.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/platform/errors.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cuda/ops.h"
#include "kernels/simt/device_memory.h"

namespace vramlab::cuda {
namespace {

std::int64_t allocated_bytes(const memory::CachingAllocator& allocator) {
  return allocator.stats().allocated_bytes[memory::kAggregate].current;
}

TEST(SimDeviceMemoryResource, EmulatedKernelBuffersShowUpInTheSimDeviceStats) {
  const memory::Device device = memory::parse_device("sim:64MiB");
  SimDeviceMemoryResource resource(device, memory::MemoryCategory::activation, "softmax test");
  memory::CachingAllocator& allocator = resource.allocator();
  const std::int64_t before = allocated_bytes(allocator);
  const std::int64_t activations_before =
      allocator.category_stats()
          .allocated_bytes[static_cast<std::size_t>(memory::MemoryCategory::activation)]
          .current;
  constexpr std::int64_t N = 37, C = 129;
  {
    ScopedDeviceMemoryResource use(resource);
    simt::DeviceBuffer<float> inp(N * C);  // (N, C)
    simt::DeviceBuffer<float> out(N * C);  // (N, C)
    const std::int64_t during = allocated_bytes(allocator);
    EXPECT_GE(during - before, static_cast<std::int64_t>(2 * N * C * sizeof(float)))
        << "the two buffers were not allocated on the sim device";
    EXPECT_GE(allocator.category_stats()
                      .allocated_bytes[static_cast<std::size_t>(memory::MemoryCategory::activation)]
                      .current -
                  activations_before,
              static_cast<std::int64_t>(2 * N * C * sizeof(float)));

    std::vector<float> host(N * C), expected(N * C), actual(N * C);
    for (std::int64_t i = 0; i < N * C; i++) host[i] = std::sin(0.37f * static_cast<float>(i)) * 5;
    inp.copy_from_host(host.data());
    kernels::cuda::softmax_forward(out.data(), inp.data(), N, C, kernels::cuda::KernelVersion::v2);
    out.copy_to_host(actual.data());
    kernels::cpu::softmax_forward_reference<float>(expected.data(), host.data(), N, C);
    double max_diff = 0;
    for (std::int64_t i = 0; i < N * C; i++) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(actual[i] - expected[i])));
    }
    EXPECT_LT(max_diff, 1e-6) << "softmax on sim-device memory differs from the CPU reference";
  }
  EXPECT_EQ(allocated_bytes(allocator), before) << "freeing the buffers did not return the blocks";
  EXPECT_NO_THROW(allocator.check_invariants());
}

TEST(SimDeviceMemoryResource, EachResourceHasItsOwnAllocator) {
  SimDeviceMemoryResource small(memory::parse_device("sim:64MiB"));
  SimDeviceMemoryResource big(memory::parse_device("sim:a100-80g"));
  void* on_big = big.allocate(100 << 20);
  EXPECT_THROW((void)small.allocate(100 << 20), memory::OutOfMemoryError);
  EXPECT_EQ(allocated_bytes(small.allocator()), 0);
  big.deallocate(on_big);
  EXPECT_EQ(allocated_bytes(big.allocator()), 0);
  int not_from_it = 0;
  EXPECT_THROW(big.deallocate(&not_from_it), InternalError);
}

TEST(SimDeviceMemoryResource, TheScopeRestoresThePreviousResource) {
  const memory::Device device = memory::parse_device("sim:16MiB");
  SimDeviceMemoryResource resource(device);
  simt::DeviceMemoryResource* before = &simt::device_memory_resource();
  {
    ScopedDeviceMemoryResource use(resource);
    EXPECT_EQ(&simt::device_memory_resource(), &resource);
  }
  EXPECT_EQ(&simt::device_memory_resource(), before);
}

TEST(SimDeviceMemoryResource, TheSimDeviceCapacityLimitsEmulatedAllocations) {
  const memory::Device device = memory::parse_device("sim:64MiB");
  SimDeviceMemoryResource resource(device);
  ScopedDeviceMemoryResource use(resource);
  simt::DeviceBuffer<float> fits(512 * 1024);  // 2 MiB (a 20 MiB segment)
  EXPECT_THROW(simt::DeviceBuffer<float> too_much(32 * 1024 * 1024), memory::OutOfMemoryError);
}

TEST(SimDeviceMemoryResource, RejectsDevicesWhoseMemoryTheHostCannotTouch) {
  EXPECT_THROW(SimDeviceMemoryResource(memory::parse_device("meta")), UsageError);
}

}  // namespace
}  // namespace vramlab::cuda
