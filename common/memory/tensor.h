/// \file
/// \brief Tensor: shape + dtype + device + storage (a ref-counted allocator block) + memory
/// category
/// + name. Views share a flat buffer (offset + shape), so flat or sharded parameter buffers are
/// views of one allocation. Copies between devices count host-device transfers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/device.h"
#include "common/memory/device_allocator.h"
#include "common/memory/history.h"
#include "common/memory/memory_category.h"

namespace vramlab::memory {

/// One allocation on a device, freed when the last tensor using it goes away.
class Storage {
 public:
  /// Allocates \p bytes on \p allocator's device.
  /// \param allocator the device's allocator.  \param bytes the size.
  /// \param stream the stream.  \param category what it holds.  \param name for snapshots.
  /// \throws OutOfMemoryError when the device is full.
  Storage(DeviceAllocator& allocator, std::size_t bytes, StreamId stream, MemoryCategory category,
          const std::string& name);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// \return the first byte (not dereferenceable on meta); nullptr for 0 bytes.
  void* data() const { return data_; }
  /// \return the size in bytes.
  std::size_t bytes() const { return bytes_; }
  /// \return the device.
  const Device& device() const { return allocator_.device(); }
  /// \return the device's allocator.
  DeviceAllocator& allocator() const { return allocator_; }
  /// \return true when the host may read and write data().
  bool host_accessible() const { return allocator_.host_accessible(); }

 private:
  DeviceAllocator& allocator_;
  void* data_;
  std::size_t bytes_;
};

/// Bytes and copies moved between devices by Tensor copies (process-wide).
struct TransferStats {
  std::int64_t host_to_device_bytes = 0;     ///< cpu -> sim/cuda/meta
  std::int64_t device_to_host_bytes = 0;     ///< sim/cuda/meta -> cpu
  std::int64_t device_to_device_bytes = 0;   ///< between two different non-cpu devices
  std::int64_t host_to_device_copies = 0;    ///< number of cpu -> device copies
  std::int64_t device_to_host_copies = 0;    ///< number of device -> cpu copies
  std::int64_t device_to_device_copies = 0;  ///< number of device -> device copies
};

/// \return the transfer counters so far.
TransferStats transfer_stats();
/// Zeroes the transfer counters.
void reset_transfer_stats();

/// A dense, row-major view of a storage.
class Tensor {
 public:
  /// An undefined tensor (no storage).
  Tensor() = default;

  /// Allocates an uninitialised tensor.
  /// \param shape sizes of each dimension, all ≥ 0.
  /// \param dtype the element type.
  /// \param device where it lives (its allocator comes from the device registry).
  /// \param category what it holds.  \param name for snapshots and OOM errors.
  /// \param stream the allocation stream.
  /// \return the tensor.
  /// \throws vramlab::UsageError for a negative dimension; OutOfMemoryError when the device is
  /// full.
  static Tensor empty(const std::vector<std::int64_t>& shape, DType dtype, const Device& device,
                      MemoryCategory category = MemoryCategory::other, const std::string& name = {},
                      StreamId stream = 0);
  /// As empty(), filled with zero bytes (nothing is written on meta).
  /// \param shape sizes.  \param dtype element type.  \param device where.
  /// \param category what it holds.  \param name its name.
  /// \return the tensor.
  /// \throws as empty().
  static Tensor zeros(const std::vector<std::int64_t>& shape, DType dtype, const Device& device,
                      MemoryCategory category = MemoryCategory::other,
                      const std::string& name = {});

  /// \return true when the tensor has storage.
  bool defined() const { return storage_ != nullptr; }
  /// \return the sizes.
  const std::vector<std::int64_t>& shape() const { return shape_; }
  /// \return the element type.
  DType dtype() const { return dtype_; }
  /// \return the device.
  /// \throws std::logic_error for an undefined tensor.
  const Device& device() const;
  /// \return what the memory holds.
  MemoryCategory category() const { return category_; }
  /// \return the name.
  const std::string& name() const { return name_; }
  /// \return the number of elements.
  std::int64_t numel() const;
  /// \return numel() × element size.
  std::size_t nbytes() const;
  /// \return the offset of the first element in the storage, in elements.
  std::int64_t storage_offset() const { return offset_elements_; }
  /// \return the shared storage.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// \return how many tensors share the storage.
  long use_count() const { return storage_.use_count(); }

  /// \return the first element's address.
  /// \throws std::logic_error when the memory is not host accessible (meta, cuda) or undefined.
  void* data() const;
  /// \return data() as \p T*.
  /// \throws std::logic_error as data(), or when sizeof(T) is not the element size.
  template <typename T>
  T* data_as() const {
    check_element_size(sizeof(T));
    return static_cast<T*>(data());
  }

  /// A view of the same storage: \p shape elements starting \p offset_elements after this view's
  /// first element (e.g. one parameter inside a flat buffer).
  /// \param shape the view's sizes.  \param offset_elements where it starts, relative to this view.
  /// \param name the view's name (defaults to this tensor's).
  /// \return the view.
  /// \throws vramlab::UsageError when the view does not fit inside this tensor.
  Tensor view(const std::vector<std::int64_t>& shape, std::int64_t offset_elements,
              const std::string& name = {}) const;
  /// The same elements with another shape (a view).
  /// \param shape sizes with the same number of elements.
  /// \return the view.
  /// \throws vramlab::UsageError when the element counts differ.
  Tensor reshape(const std::vector<std::int64_t>& shape) const;
  /// Copies this tensor to \p device into a new allocation (counted as a transfer when the device
  /// kinds differ in host/device sense).
  /// \param device the destination.  \param category the copy's category (default: the same).
  /// \return the copy.
  /// \throws OutOfMemoryError; std::runtime_error for cuda tensors (copies need the CUDA runtime).
  Tensor to(const Device& device, MemoryCategory category) const;
  /// As to(device, category()).  \param device the destination.  \return the copy.
  Tensor to(const Device& device) const { return to(device, category_); }
  /// Copies \p source's elements into this tensor.
  /// \param source same dtype and number of elements.
  /// \throws vramlab::UsageError when dtype or element count differ; std::runtime_error for cuda.
  void copy_from(const Tensor& source);

 private:
  void check_element_size(std::size_t size) const;

  std::shared_ptr<Storage> storage_;
  std::vector<std::int64_t> shape_;
  DType dtype_ = DType::f32;
  std::int64_t offset_elements_ = 0;
  MemoryCategory category_ = MemoryCategory::other;
  std::string name_;
};

}  // namespace vramlab::memory
