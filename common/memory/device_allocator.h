/// \file
/// \brief The memory of one device, as the rest of vramlab sees it: raw_alloc/raw_free on any
/// device (cpu, sim, meta, cuda), and the process-wide registry of devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"

namespace vramlab::memory {

/// The allocator of one device. sim, meta and cuda devices use a CachingAllocator; cpu memory is
/// plain aligned host memory whose bytes are tracked (current/peak, per category) without caching.
class DeviceAllocator {
 public:
  /// \param device the device.  \param config caching-allocator settings (ignored on cpu).
  /// \throws std::runtime_error for a cuda device when vramlab was built without CUDA.
  DeviceAllocator(const Device& device, const AllocatorConfig& config);
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  /// \return the device.
  const Device& device() const { return device_; }
  /// Allocates \p bytes (aligned to at least 64 bytes).
  /// \param bytes the size; 0 returns nullptr.
  /// \param stream the stream (ignored on cpu).
  /// \param category what the memory is for.
  /// \param name the tensor name for snapshots and out-of-memory errors.
  /// \return the memory; on meta an address that must not be dereferenced.
  /// \throws OutOfMemoryError when the device is full.
  void* raw_alloc(std::size_t bytes, StreamId stream = 0,
                  MemoryCategory category = MemoryCategory::other, std::string_view name = {});
  /// Frees memory from raw_alloc (nullptr is ignored).
  /// \param pointer the memory.
  /// \throws std::logic_error for a pointer this device did not allocate.
  void raw_free(void* pointer);
  /// Marks an allocation as used by another stream (see CachingAllocator::record_stream).
  /// \param pointer memory from raw_alloc.  \param stream the other stream.
  void record_stream(void* pointer, StreamId stream);
  /// \return the caching allocator, or nullptr on cpu.
  CachingAllocator* caching_allocator() { return caching_.get(); }
  /// \return true when raw_alloc's memory may be read and written by the host.
  bool host_accessible() const;
  /// \return current and peak bytes per category (on every device kind).
  CategoryStats category_stats() const;
  /// \return current and peak of the bytes allocated on this device.
  Stat allocated_bytes() const;

 private:
  Device device_;
  std::unique_ptr<CachingAllocator> caching_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block*> blocks_;  // caching devices: pointer -> block
  struct HostAllocation {
    std::size_t bytes;
    MemoryCategory category;
  };
  std::unordered_map<void*, HostAllocation> host_allocations_;  // cpu: pointer -> size
  CategoryStats host_category_stats_;
  Stat host_allocated_bytes_;
};

/// \return the process-wide allocator of \p device, created on first use with the configuration
///         from the environment (VRAMLAB_ALLOC_CONF) and set_allocator_settings().
/// \param device the device; devices are identified by kind and index.
/// \throws vramlab::UsageError when a device of the same kind and index exists with another spec.
DeviceAllocator& device_allocator(const Device& device);

/// Applies a configuration string to every existing caching allocator and to those created later
/// (torch.cuda.memory._set_allocator_settings).
/// \param text `key:value,...`.
/// \throws vramlab::UsageError naming an unknown key or invalid value.
void set_allocator_settings(std::string_view text);

}  // namespace vramlab::memory
