/// \file
/// \brief HostBuffer: the owner of one block of host memory from a CachingHostAllocator (pinned or
/// pageable), as memory::Tensor owns a device block: freed when destroyed, move-only.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/memory/caching_host_allocator.h"
#include "common/memory/memory_category.h"

namespace vramlab::memory {

/// A move-only owner of one host block.
class HostBuffer {
 public:
  /// An empty buffer (no block).
  HostBuffer() = default;
  /// Takes \p bytes from \p allocator (CachingHostAllocator::allocate, whose errors it throws).
  HostBuffer(CachingHostAllocator& allocator, std::size_t bytes, MemoryCategory category,
             std::string_view name);
  ~HostBuffer();  ///< Frees the block (it waits for its streams' events, if any, in the cache).
  HostBuffer(HostBuffer&& other) noexcept;             ///< \param other left empty.
  HostBuffer& operator=(HostBuffer&& other) noexcept;  ///< Frees the current block first.
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  /// \return the first byte, or nullptr when empty.
  [[nodiscard]] void* data() const { return block_ != nullptr ? block_->ptr() : nullptr; }
  /// \return data() as \p T (the caller knows the element type, as with a Tensor's view).
  template <typename T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(data());
  }
  /// \return the bytes asked for (the block may be larger: pinned blocks are powers of two).
  [[nodiscard]] std::size_t bytes() const { return block_ != nullptr ? block_->requested_size : 0; }
  /// \return the block, for CachingHostAllocator::record_stream (nullptr when empty).
  [[nodiscard]] HostBlock* block() const { return block_; }

 private:
  void reset() noexcept;

  CachingHostAllocator* allocator_ = nullptr;
  HostBlock* block_ = nullptr;
};

}  // namespace vramlab::memory
