#include "common/memory/host_buffer.h"

#include <utility>

namespace vramlab::memory {

HostBuffer::HostBuffer(CachingHostAllocator& allocator, std::size_t bytes, MemoryCategory category,
                       std::string_view name)
    : allocator_(&allocator), block_(allocator.allocate(bytes, category, name)) {}

HostBuffer::~HostBuffer() {
  reset();
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      block_(std::exchange(other.block_, nullptr)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    allocator_ = std::exchange(other.allocator_, nullptr);
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

void HostBuffer::reset() noexcept {
  // free() throws only for a block this allocator did not hand out, which an owner cannot hold.
  if (allocator_ != nullptr && block_ != nullptr) allocator_->free(block_);
  allocator_ = nullptr;
  block_ = nullptr;
}

}  // namespace vramlab::memory
