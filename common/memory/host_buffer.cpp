#include "common/memory/host_buffer.h"

#include <new>
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
  // free() throws for a block this allocator did not hand out, which an owner cannot hold, and
  // bad_alloc while recording its events, before it changes anything: then the block stays
  // allocated (in active_bytes, where a leak check sees it) and the allocator's destructor
  // returns its pages.
  if (allocator_ != nullptr && block_ != nullptr) {
    try {
      allocator_->free(block_);
    } catch (const std::bad_alloc&) {
    }
  }
  allocator_ = nullptr;
  block_ = nullptr;
}

}  // namespace vramlab::memory
