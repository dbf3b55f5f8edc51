// The SIMT emulator's device memory through a vramlab device's caching allocator.
#include "common/cuda/sim_device_memory_resource.h"

#include <utility>

#include "common/memory/alloc_config.h"
#include "common/memory/make_caching_allocator.h"
#include "common/platform/errors.h"

namespace vramlab::cuda {

namespace {
std::unique_ptr<memory::CachingAllocator> host_accessible_allocator(const memory::Device& device) {
  if (device.kind != memory::DeviceKind::cpu && device.kind != memory::DeviceKind::sim) {
    throw UsageError("device '" + device.name() +
                     "' cannot hold emulated kernels' memory: the SIMT emulator runs kernels on "
                     "the CPU, so it needs a cpu or sim device");
  }
  return memory::make_caching_allocator(device, memory::alloc_conf_from_environment());
}
}  // namespace

SimDeviceMemoryResource::SimDeviceMemoryResource(const memory::Device& device,
                                                 memory::MemoryCategory category, std::string name)
    : allocator_(host_accessible_allocator(device)), category_(category), name_(std::move(name)) {}

void* SimDeviceMemoryResource::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  memory::Block* block = allocator_->malloc(bytes, 0, category_, name_);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a host-backed block's address is a host pointer.
  void* pointer = reinterpret_cast<void*>(static_cast<uintptr_t>(block->address));
  blocks_.emplace(pointer, block);
  return pointer;
}

void SimDeviceMemoryResource::deallocate(void* pointer) {
  if (pointer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = blocks_.find(pointer);
  if (it == blocks_.end())
    throw InternalError("SimDeviceMemoryResource: freeing memory it did not allocate");
  allocator_->free(it->second);
  blocks_.erase(it);
}

}  // namespace vramlab::cuda
