/// \file
/// \brief DeviceBuffer: one block of a Runtime's caching allocator, with a shape, a dtype, a memory
/// category and a name; the buffer type the modules pass to the kernels as raw pointers.
///
/// This is the narrow slice of a tensor the nn layer needs (the block, its shape and category);
/// freeing happens when the buffer is destroyed, returning the block to the allocator's cache.
/// On the meta device data() is a virtual address that must never be dereferenced: the Runtime
/// skips every kernel there.
///
/// Why not memory::Tensor: a Tensor's storage comes from the process-wide allocator of its device
/// (memory::device_allocator), shared by every user in the process, and on `cpu` that allocator
/// hands out plain uncached host memory. A training step needs its own allocator per Runtime (so a
/// lesson's statistics count one model's step and nothing else, and tests can start from zero) and
/// caching on every device, cpu included (a step reuses its blocks instead of faulting in fresh
/// pages). A DeviceBuffer is also the sole owner of its block: no reference count, no lookup on
/// free. Tensor stays the type for data that moves between devices (Tensor::to and its transfer
/// statistics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/block.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/memory_category.h"
#include "common/memory/tensor_view.h"

namespace vramlab::nn {

/// A move-only owner of one allocator block, described as a dense tensor.
class DeviceBuffer {
 public:
  /// An empty buffer (no block, numel 0).
  DeviceBuffer() = default;
  /// Allocates a buffer.
  /// \param allocator the device's allocator. \param shape dimensions (each ≥ 0).
  /// \param dtype element type. \param category what the memory is for.
  /// \param name tensor name for snapshots and OOM messages.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full;
  /// vramlab::UsageError on a negative dimension or a size overflow.
  DeviceBuffer(memory::CachingAllocator& allocator, std::vector<int64_t> shape, DType dtype,
               memory::MemoryCategory category, std::string name);
  /// Returns the block to the allocator.
  ~DeviceBuffer();
  /// Moves ownership. \param other left empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  /// Moves ownership (freeing the current block first). \param other left empty.
  /// \return *this.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;             ///< One owner per block.
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;  ///< One owner per block.

  /// Frees the block now (the buffer becomes empty).
  void reset();

  /// \return the first byte (a host pointer on cpu/sim, a GPU pointer on cuda, a virtual address
  /// on meta).
  [[nodiscard]] void* data() const;
  /// \return data() as float (the buffer must be f32).
  [[nodiscard]] float* f32() const { return static_cast<float*>(data()); }
  /// \return data() as int32 (the buffer must be i32).
  [[nodiscard]] int32_t* i32() const { return static_cast<int32_t*>(data()); }
  /// \return the dimensions.
  [[nodiscard]] const std::vector<int64_t>& shape() const { return shape_; }
  /// \return the element type.
  [[nodiscard]] DType dtype() const { return dtype_; }
  /// \return the number of elements.
  [[nodiscard]] int64_t numel() const { return numel_; }
  /// \return numel × element size (what was requested, before the allocator's rounding).
  [[nodiscard]] int64_t bytes() const;
  /// \return the category given at allocation.
  [[nodiscard]] memory::MemoryCategory category() const { return category_; }
  /// \return the name given at allocation.
  [[nodiscard]] const std::string& name() const { return name_; }
  /// \return the whole buffer as a typed view.
  [[nodiscard]] memory::TensorView view() const {
    return memory::TensorView(data(), dtype_, shape_);
  }
  /// \param offset first element. \param shape the slice's dimensions.
  /// \return a slice of the buffer. \throws vramlab::InternalError when it does not fit.
  [[nodiscard]] memory::TensorView view(int64_t offset, std::vector<int64_t> shape) const {
    return view().slice(offset, std::move(shape));
  }
  /// \return true when the buffer was never allocated or has been reset.
  [[nodiscard]] bool empty() const { return allocator_ == nullptr; }

 private:
  memory::CachingAllocator* allocator_ = nullptr;
  memory::Block* block_ = nullptr;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::f32;
  int64_t numel_ = 0;
  memory::MemoryCategory category_ = memory::MemoryCategory::other;
  std::string name_;
};

}  // namespace vramlab::nn
