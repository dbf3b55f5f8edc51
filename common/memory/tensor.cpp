// Tensor: an owned allocator block described as a dense tensor (see tensor.h).
#include "common/memory/tensor.h"

#include <limits>
#include <stdexcept>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::memory {

Tensor::Tensor(CachingAllocator& allocator, std::vector<int64_t> shape, DType dtype,
               MemoryCategory category, std::string name, StreamId stream)
    : shape_(std::move(shape)), dtype_(dtype), category_(category), name_(std::move(name)) {
  const auto element_bytes = static_cast<int64_t>(dtype_size_bytes(dtype));
  int64_t numel = 1;
  for (const int64_t dim : shape_) {
    if (dim < 0)
      throw UsageError("tensor '" + name_ + "': negative dimension in " + format_shape(shape_));
    if (dim != 0 && numel > std::numeric_limits<int64_t>::max() / element_bytes / dim)
      throw UsageError("tensor '" + name_ + "': size of " + format_shape(shape_) + " overflows");
    numel *= dim;
  }
  numel_ = numel;
  block_ = allocator.malloc(static_cast<size_t>(numel * element_bytes), stream, category_, name_);
  allocator_ = &allocator;
}

Tensor::~Tensor() {
  reset();
}

Tensor::Tensor(Tensor&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      block_(std::exchange(other.block_, nullptr)),
      shape_(std::move(other.shape_)),
      dtype_(other.dtype_),
      numel_(std::exchange(other.numel_, 0)),
      category_(other.category_),
      name_(std::move(other.name_)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
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

void Tensor::record_stream(StreamId stream) const {
  if (allocator_ == nullptr)
    throw std::logic_error("Tensor::record_stream: the tensor " + name_ + " is empty");
  allocator_->record_stream(block_, stream);
}

void Tensor::reset() {
  if (allocator_ != nullptr && block_ != nullptr) allocator_->free(block_);
  allocator_ = nullptr;
  block_ = nullptr;
  numel_ = 0;
}

void* Tensor::data() const {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): block addresses are host, GPU or meta addresses.
  return block_ == nullptr ? nullptr
                           : reinterpret_cast<void*>(static_cast<uintptr_t>(block_->address));
}

}  // namespace vramlab::memory
