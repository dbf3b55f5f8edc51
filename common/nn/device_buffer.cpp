// DeviceBuffer: an owned allocator block described as a dense tensor (see device_buffer.h).
#include "common/nn/device_buffer.h"

#include <limits>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::nn {

DeviceBuffer::DeviceBuffer(memory::CachingAllocator& allocator, std::vector<int64_t> shape,
                           DType dtype, memory::MemoryCategory category, std::string name)
    : shape_(std::move(shape)), dtype_(dtype), category_(category), name_(std::move(name)) {
  const auto element_bytes = static_cast<int64_t>(dtype_size_bytes(dtype));
  int64_t numel = 1;
  for (const int64_t dim : shape_) {
    if (dim < 0)
      throw UsageError("tensor '" + name_ + "': negative dimension in " +
                       memory::format_shape(shape_));
    if (dim != 0 && numel > std::numeric_limits<int64_t>::max() / element_bytes / dim)
      throw UsageError("tensor '" + name_ + "': size of " + memory::format_shape(shape_) +
                       " overflows");
    numel *= dim;
  }
  numel_ = numel;
  block_ = allocator.malloc(static_cast<size_t>(numel * element_bytes), 0, category_, name_);
  allocator_ = &allocator;
}

DeviceBuffer::~DeviceBuffer() {
  reset();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      block_(std::exchange(other.block_, nullptr)),
      shape_(std::move(other.shape_)),
      dtype_(other.dtype_),
      numel_(std::exchange(other.numel_, 0)),
      category_(other.category_),
      name_(std::move(other.name_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    allocator_ = std::exchange(other.allocator_, nullptr);
    block_ = std::exchange(other.block_, nullptr);
    shape_ = std::move(other.shape_);
    dtype_ = other.dtype_;
    numel_ = std::exchange(other.numel_, 0);
    category_ = other.category_;
    name_ = std::move(other.name_);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (allocator_ != nullptr && block_ != nullptr) allocator_->free(block_);
  allocator_ = nullptr;
  block_ = nullptr;
  numel_ = 0;
}

void* DeviceBuffer::data() const {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): block addresses are host or virtual addresses.
  return block_ == nullptr ? nullptr
                           : reinterpret_cast<void*>(static_cast<uintptr_t>(block_->address));
}

int64_t DeviceBuffer::bytes() const {
  return numel_ * static_cast<int64_t>(dtype_size_bytes(dtype_));
}

}  // namespace vramlab::nn
