/// \file
/// \brief Tensor: the one handle for device memory. It owns one block of a caching allocator and
/// describes it as a dense tensor (dtype, shape, memory category, name); freeing happens when the
/// tensor is destroyed or reset, returning the block to the allocator's cache, as a PyTorch
/// tensor's storage does. TensorView is its non-owning, typed window (common/memory/
/// tensor_view.h), which is what kernels take.
///
/// Which device a tensor lives on is which allocator it came from: every device has its own
/// (make_caching_allocator), cpu included, so host tensors and device tensors are the same type
/// and a copy between them is an operation of the runtime that owns the allocators (nn::Runtime
/// counts every such copy's bytes and time).
///
/// A tensor is the sole owner of its block: no reference count, no lookup on free. Parameters,
/// gradients and optimizer states are flat tensors whose pieces are views (ParameterStore).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/block.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/memory_category.h"
#include "common/memory/tensor_view.h"
#include "common/platform/errors.h"

namespace vramlab::memory {

/// A move-only owner of one allocator block, described as a dense tensor.
class Tensor {
 public:
  /// An empty tensor (no block, numel 0).
  Tensor() = default;
  /// Allocates an uninitialised tensor.
  /// \param allocator the device's allocator. \param shape dimensions (each ≥ 0).
  /// \param dtype element type. \param category counted in the allocator's category_stats().
  /// \param name tensor name for snapshots and out-of-memory messages.
  /// \param stream the block's stream (see CachingAllocator::malloc).
  /// \throws OutOfMemoryError when the device is full; vramlab::UsageError on a negative
  /// dimension or a size overflow (shapes come from user-chosen model sizes).
  Tensor(CachingAllocator& allocator, std::vector<int64_t> shape, DType dtype,
         MemoryCategory category, std::string name, StreamId stream = 0);
  /// Returns the block to the allocator.
  ~Tensor();
  /// Moves ownership. \param other left empty.
  Tensor(Tensor&& other) noexcept;
  /// Moves ownership (freeing the current block first). \param other left empty. \return *this.
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;  ///< One owner per block.
  Tensor& operator=(const Tensor&) = delete;

  /// Frees the block now (the tensor becomes empty).
  void reset();

  /// \return the first byte: a host pointer on cpu/sim, a GPU pointer on cuda, an address that
  /// must never be dereferenced on meta.
  [[nodiscard]] void* data() const;
  /// \param where the caller. \return data() as float. \throws vramlab::InternalError unless f32.
  [[nodiscard]] float* f32(
      vramlab::source_location where = vramlab::source_location::current()) const {
    return view().f32(where);
  }
  /// \param where the caller. \return data() as int32. \throws vramlab::InternalError unless i32.
  [[nodiscard]] int32_t* i32(
      vramlab::source_location where = vramlab::source_location::current()) const {
    return view().i32(where);
  }
  /// \return a view that does not keep the block alive: it dangles after reset() or a move. An
  /// empty tensor's view is "none", so a kernel given it refuses it by name.
  [[nodiscard]] TensorView view() const {
    return empty() ? TensorView() : TensorView(data(), dtype_, shape_);
  }
  /// \param offset first element. \param shape the slice's dimensions.
  /// \return a slice. \throws vramlab::InternalError when it does not fit.
  [[nodiscard]] TensorView view(int64_t offset, std::vector<int64_t> shape) const {
    return view().slice(offset, std::move(shape));
  }

  [[nodiscard]] const std::vector<int64_t>& shape() const { return shape_; }  ///< dense row-major
  [[nodiscard]] DType dtype() const { return dtype_; }                        ///< element type
  [[nodiscard]] int64_t numel() const { return numel_; }                      ///< 0 when empty
  /// \return numel × element size (what was requested, before the allocator's rounding).
  [[nodiscard]] int64_t bytes() const {
    return numel_ * static_cast<int64_t>(dtype_size_bytes(dtype_));
  }
  [[nodiscard]] MemoryCategory category() const { return category_; }  ///< fixed at allocation
  [[nodiscard]] const std::string& name() const { return name_; }      ///< as in snapshots
  /// \return the allocator (the device) it lives on, nullptr when empty.
  [[nodiscard]] CachingAllocator* allocator() const { return allocator_; }
  /// Marks the tensor's memory as used by work on \p stream (torch.Tensor.record_stream): once
  /// freed it is not reused until that work is done (CachingAllocator::record_stream).
  /// \throws std::logic_error when empty; vramlab::UsageError for a stream the device's clock
  /// does not have.
  void record_stream(StreamId stream) const;
  /// \return true when the tensor was never allocated or has been reset.
  [[nodiscard]] bool empty() const { return allocator_ == nullptr; }

 private:
  CachingAllocator* allocator_ = nullptr;
  Block* block_ = nullptr;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::f32;
  int64_t numel_ = 0;
  MemoryCategory category_ = MemoryCategory::other;
  std::string name_;
};

}  // namespace vramlab::memory
