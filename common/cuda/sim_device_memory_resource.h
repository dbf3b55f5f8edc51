/// \file
/// \brief Routes the SIMT emulator's device allocations (simt::device_malloc, simt::DeviceBuffer)
/// through a caching allocator of a vramlab device (make_caching_allocator), so its memory_stats,
/// snapshots and OOM errors show what emulated CUDA kernels allocate.
///
///     auto device = vramlab::memory::parse_device("sim:t4-16g");
///     vramlab::cuda::SimDeviceMemoryResource resource(device);
///     vramlab::cuda::ScopedDeviceMemoryResource use(resource);
///     vramlab::simt::DeviceBuffer<float> x(1 << 20);  // counted in the sim device's stats
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "kernels/simt/device_memory.h"

namespace vramlab::cuda {

/// A simt::DeviceMemoryResource over its own caching allocator of one device.
class SimDeviceMemoryResource final : public simt::DeviceMemoryResource {
 public:
  /// \param device a device whose memory the host can touch (cpu or sim): emulated kernels
  /// dereference device pointers on the CPU. \param category the memory category the allocations
  /// are counted under. \param name recorded with each allocation (history, snapshots).
  /// \throws vramlab::UsageError for a meta or cuda device (their memory is not host memory).
  explicit SimDeviceMemoryResource(const memory::Device& device,
                                   memory::MemoryCategory category = memory::MemoryCategory::other,
                                   std::string name = "emulated kernel buffer");
  /// \return memory of the device (the caching allocator's blocks are at least 512-byte
  /// aligned). \throws memory::OutOfMemoryError when the device is full.
  void* allocate(std::size_t bytes) override;
  /// \p pointer from allocate(); nullptr is ignored.
  void deallocate(void* pointer) override;
  /// Owned by this resource; its stats count only the emulator's allocations.
  memory::CachingAllocator& allocator() const { return *allocator_; }

 private:
  std::unique_ptr<memory::CachingAllocator> allocator_;
  memory::MemoryCategory category_;
  std::string name_;
  std::mutex mutex_;  // the emulator may allocate from several threads
  std::unordered_map<void*, memory::Block*> blocks_;  // pointer -> its block, for deallocate
};

/// Makes a resource the emulator's device memory for the lifetime of this object, then restores
/// the previous one. Not thread-safe against concurrent allocations (see
/// simt::set_device_memory_resource).
class ScopedDeviceMemoryResource {
 public:
  /// \p resource must outlive this object.
  explicit ScopedDeviceMemoryResource(simt::DeviceMemoryResource& resource)
      : previous_(simt::set_device_memory_resource(&resource)) {}
  /// Restores the previous resource.
  ~ScopedDeviceMemoryResource() { simt::set_device_memory_resource(previous_); }
  ScopedDeviceMemoryResource(const ScopedDeviceMemoryResource&) = delete;
  ScopedDeviceMemoryResource& operator=(const ScopedDeviceMemoryResource&) = delete;

 private:
  simt::DeviceMemoryResource* previous_;
};

}  // namespace vramlab::cuda
