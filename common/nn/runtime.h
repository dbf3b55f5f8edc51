/// \file
/// \brief Runtime: one device, its caching allocator, and the kernel dispatch rule of the nn layer.
///
/// Dispatch: on `cpu` and `sim` the CPU kernels run on the blocks' host memory; on `meta` no kernel
/// runs and only the outputs are allocated (so a 70B training step's allocations replay in
/// seconds); `cuda` needs a GPU build of the nn layer and is refused with a clear error.
/// Every device, cpu included, goes through the caching allocator (cpu with no capacity), so
/// a training step reuses cached blocks instead of asking the OS for pages every step and the
/// per-category statistics are measured the same way on every device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/nn/device_buffer.h"

namespace vramlab::nn {

/// A device with its allocator; modules allocate and dispatch through it.
class Runtime {
 public:
  /// \param device from memory::parse_device().
  /// \throws vramlab::UsageError for a cuda device ("needs a GPU build").
  explicit Runtime(const memory::Device& device);

  /// \return the device.
  [[nodiscard]] const memory::Device& device() const { return device_; }
  /// \return the allocator (stats, snapshots, invariants).
  [[nodiscard]] memory::CachingAllocator& allocator() { return *allocator_; }
  /// \return true when kernels run (cpu, sim); false on meta.
  [[nodiscard]] bool runs_kernels() const { return runs_kernels_; }

  /// Allocates an uninitialised buffer.
  /// \param shape dimensions. \param dtype element type. \param category what it is for.
  /// \param name tensor name. \return the buffer.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  DeviceBuffer allocate(std::vector<int64_t> shape, DType dtype, memory::MemoryCategory category,
                        std::string name);
  /// Allocates an f32 buffer filled with zeros (no fill on meta).
  /// \param shape dimensions. \param category what it is for. \param name tensor name.
  /// \return the buffer. \throws vramlab::memory::OutOfMemoryError when the device is full.
  DeviceBuffer zeros(std::vector<int64_t> shape, memory::MemoryCategory category, std::string name);
  /// Allocates an f32 temporary (category temporary), uninitialised.
  /// \param shape dimensions. \param name tensor name. \return the buffer.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  DeviceBuffer temporary(std::vector<int64_t> shape, std::string name);
  /// Sets every byte of \p buffer to zero (multi-threaded; nothing on meta).
  /// \param buffer the buffer.
  void fill_zero(const DeviceBuffer& buffer) const;

 private:
  memory::Device device_;
  std::unique_ptr<memory::CachingAllocator> allocator_;
  bool runs_kernels_ = true;
};

}  // namespace vramlab::nn
