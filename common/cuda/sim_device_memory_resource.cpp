// The SIMT emulator's device memory through a vramlab device's caching allocator.
#include "common/cuda/sim_device_memory_resource.h"

#include <utility>

#include "common/platform/errors.h"

namespace vramlab::cuda {

namespace {
memory::DeviceAllocator& host_accessible_allocator(const memory::Device& device) {
  memory::DeviceAllocator& allocator = memory::device_allocator(device);
  if (!allocator.host_accessible()) {
    throw UsageError("device '" + device.name() +
                     "' cannot hold emulated kernels' memory: the SIMT emulator runs kernels on "
                     "the CPU, so it needs a cpu or sim device");
  }
  return allocator;
}
}  // namespace

SimDeviceMemoryResource::SimDeviceMemoryResource(const memory::Device& device,
                                                 memory::MemoryCategory category, std::string name)
    : allocator_(host_accessible_allocator(device)), category_(category), name_(std::move(name)) {}

void* SimDeviceMemoryResource::allocate(std::size_t bytes) {
  return allocator_.raw_alloc(bytes, 0, category_, name_);
}

void SimDeviceMemoryResource::deallocate(void* pointer) {
  if (pointer != nullptr) allocator_.raw_free(pointer);
}

}  // namespace vramlab::cuda
