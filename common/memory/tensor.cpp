// Tensor storage, views and copies between devices.
#include "common/memory/tensor.h"

#include <atomic>
#include <cstring>
#include <stdexcept>

#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

struct TransferCounters {
  std::atomic<std::int64_t> host_to_device_bytes{0};
  std::atomic<std::int64_t> device_to_host_bytes{0};
  std::atomic<std::int64_t> device_to_device_bytes{0};
  std::atomic<std::int64_t> host_to_device_copies{0};
  std::atomic<std::int64_t> device_to_host_copies{0};
  std::atomic<std::int64_t> device_to_device_copies{0};
};

TransferCounters& counters() {
  static TransferCounters instance;
  return instance;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + ")";
}

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t size : shape) {
    if (size < 0) throw UsageError("negative dimension in shape " + shape_text(shape));
    count *= size;
  }
  return count;
}

bool same_device(const Device& a, const Device& b) {
  return a.kind == b.kind && a.index == b.index;
}

void count_transfer(const Device& from, const Device& to, std::size_t bytes) {
  if (same_device(from, to)) return;
  TransferCounters& c = counters();
  const auto amount = static_cast<std::int64_t>(bytes);
  if (from.kind == DeviceKind::cpu) {
    c.host_to_device_bytes += amount;
    ++c.host_to_device_copies;
  } else if (to.kind == DeviceKind::cpu) {
    c.device_to_host_bytes += amount;
    ++c.device_to_host_copies;
  } else {
    c.device_to_device_bytes += amount;
    ++c.device_to_device_copies;
  }
}

}  // namespace

Storage::Storage(DeviceAllocator& allocator, std::size_t bytes, StreamId stream,
                 MemoryCategory category, const std::string& name)
    : allocator_(allocator),
      data_(allocator.raw_alloc(bytes, stream, category, name)),
      bytes_(bytes) {}

Storage::~Storage() {
  allocator_.raw_free(data_);
}

TransferStats transfer_stats() {
  const TransferCounters& c = counters();
  return TransferStats{c.host_to_device_bytes,  c.device_to_host_bytes,  c.device_to_device_bytes,
                       c.host_to_device_copies, c.device_to_host_copies, c.device_to_device_copies};
}

void reset_transfer_stats() {
  TransferCounters& c = counters();
  c.host_to_device_bytes = c.device_to_host_bytes = c.device_to_device_bytes = 0;
  c.host_to_device_copies = c.device_to_host_copies = c.device_to_device_copies = 0;
}

Tensor Tensor::empty(const std::vector<std::int64_t>& shape, DType dtype, const Device& device,
                     MemoryCategory category, const std::string& name, StreamId stream) {
  const std::int64_t count = element_count(shape);
  Tensor tensor;
  tensor.storage_ = std::make_shared<Storage>(
      device_allocator(device), static_cast<std::size_t>(count) * dtype_size_bytes(dtype), stream,
      category, name);
  tensor.shape_ = shape;
  tensor.dtype_ = dtype;
  tensor.category_ = category;
  tensor.name_ = name;
  return tensor;
}

Tensor Tensor::zeros(const std::vector<std::int64_t>& shape, DType dtype, const Device& device,
                     MemoryCategory category, const std::string& name) {
  Tensor tensor = empty(shape, dtype, device, category, name);
  if (tensor.storage_->host_accessible() && tensor.nbytes() > 0) {
    std::memset(tensor.storage_->data(), 0, tensor.nbytes());
  }
  return tensor;
}

const Device& Tensor::device() const {
  if (!storage_) throw std::logic_error("Tensor::device: undefined tensor");
  return storage_->device();
}

std::int64_t Tensor::numel() const {
  return element_count(shape_);
}

std::size_t Tensor::nbytes() const {
  return static_cast<std::size_t>(numel()) * dtype_size_bytes(dtype_);
}

void* Tensor::data() const {
  if (!storage_) throw std::logic_error("Tensor::data: undefined tensor");
  if (!storage_->host_accessible()) {
    throw std::logic_error("Tensor::data: '" + name_ + "' lives on " + device().name() +
                           ", whose memory the host cannot touch");
  }
  return static_cast<char*>(storage_->data()) +
         static_cast<std::size_t>(offset_elements_) * dtype_size_bytes(dtype_);
}

void Tensor::check_element_size(std::size_t size) const {
  if (size != dtype_size_bytes(dtype_)) {
    throw std::logic_error("Tensor::data_as: element of " + std::to_string(size) +
                           " bytes requested for a " + std::string(dtype_name(dtype_)) + " tensor");
  }
}

Tensor Tensor::view(const std::vector<std::int64_t>& shape, std::int64_t offset_elements,
                    const std::string& name) const {
  const std::int64_t count = element_count(shape);
  if (offset_elements < 0 || offset_elements + count > numel()) {
    throw UsageError("view " + shape_text(shape) + " at offset " + std::to_string(offset_elements) +
                     " does not fit in tensor '" + name_ + "' of shape " + shape_text(shape_));
  }
  Tensor result = *this;
  result.shape_ = shape;
  result.offset_elements_ = offset_elements_ + offset_elements;
  if (!name.empty()) result.name_ = name;
  return result;
}

Tensor Tensor::reshape(const std::vector<std::int64_t>& shape) const {
  if (element_count(shape) != numel()) {
    throw UsageError("cannot reshape '" + name_ + "' of shape " + shape_text(shape_) + " to " +
                     shape_text(shape));
  }
  return view(shape, 0);
}

Tensor Tensor::to(const Device& device, MemoryCategory category) const {
  Tensor copy = empty(shape_, dtype_, device, category, name_);
  copy.copy_from(*this);
  return copy;
}

void Tensor::copy_from(const Tensor& source) {
  if (source.dtype_ != dtype_ || source.numel() != numel()) {
    throw UsageError("copy_from: '" + source.name_ + "' " + std::string(dtype_name(source.dtype_)) +
                     shape_text(source.shape_) + " into '" + name_ + "' " +
                     std::string(dtype_name(dtype_)) + shape_text(shape_) +
                     ": dtype and element count must match");
  }
  if (device().kind == DeviceKind::cuda || source.device().kind == DeviceKind::cuda) {
    throw std::runtime_error("copy_from: copies of cuda tensors go through the CUDA kernels layer");
  }
  count_transfer(source.device(), device(), nbytes());
  if (storage_->host_accessible() && source.storage_->host_accessible() && nbytes() > 0) {
    std::memmove(data(), source.data(), nbytes());
  }
}

}  // namespace vramlab::memory
