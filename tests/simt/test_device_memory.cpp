// Device allocations go through the pluggable DeviceMemoryResource, and emulated kernels work on
// the memory it hands out.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include "kernels/cuda/examples/examples.h"
#include "kernels/simt/device_memory.h"

namespace vramlab::simt {
namespace {

// Counts what passes through it, like a caching allocator's stats would.
class CountingResource final : public DeviceMemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    void* pointer = host_.allocate(bytes);
    live_[pointer] = bytes;
    allocated_bytes += bytes;
    return pointer;
  }
  void deallocate(void* pointer) override {
    if (pointer == nullptr) return;
    freed_bytes += live_.at(pointer);
    live_.erase(pointer);
    host_.deallocate(pointer);
  }
  std::size_t allocated_bytes = 0;
  std::size_t freed_bytes = 0;

 private:
  HostDeviceMemoryResource host_;
  std::map<void*, std::size_t> live_;
};

TEST(SimtDeviceMemory, AllocationsGoThroughThePluggedResource) {
  CountingResource counting;
  DeviceMemoryResource* previous = set_device_memory_resource(&counting);
  {
    const std::size_t n = 1000;
    DeviceBuffer<int> x(n);
    DeviceBuffer<int> sums(4);
    EXPECT_EQ(counting.allocated_bytes, (n + 4) * sizeof(int));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.data()) % 256, 0u);
    std::vector<int> host(n);
    std::iota(host.begin(), host.end(), -500);
    x.copy_from_host(host.data());
    cuda_examples::block_sum_shared(x.data(), sums.data(), n, 256);
    std::vector<int> got(4);
    sums.copy_to_host(got.data());
    std::vector<int> expected(4, 0);
    for (std::size_t i = 0; i < n; ++i) expected[i / 256] += host[i];
    EXPECT_EQ(got, expected);
  }
  EXPECT_EQ(counting.freed_bytes, counting.allocated_bytes);
  EXPECT_EQ(set_device_memory_resource(previous), &counting);
}

TEST(SimtDeviceMemory, RawMallocFreeAndMemcpyRoundTrip) {
  void* device = device_malloc(64);
  const char text[] = "vramlab";
  simt::memcpy(device, text, sizeof(text));
  char back[sizeof(text)] = {};
  simt::memcpy(back, device, sizeof(text));
  EXPECT_STREQ(back, text);
  device_free(device);
  device_free(nullptr);
}

}  // namespace
}  // namespace vramlab::simt
