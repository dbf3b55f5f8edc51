/// \file
/// \brief Device allocations of emulated kernels, through a pluggable memory resource.
///
/// By default "device" memory is host memory (operator new, 256-byte aligned like cudaMalloc).
/// A caching allocator (for instance the sim device's, so memory lessons see what emulated
/// kernels allocate) plugs in with set_device_memory_resource() without any change here.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

namespace vramlab::simt {

/// Where device_malloc() gets memory from. Implementations must be thread-safe.
class DeviceMemoryResource {
 public:
  virtual ~DeviceMemoryResource() = default;
  /// \param bytes how much (may be 0). \return at least 256-byte aligned memory.
  /// \throws whatever the resource throws on failure (e.g. an out-of-memory error).
  virtual void* allocate(std::size_t bytes) = 0;
  /// \param pointer memory from allocate() of this resource (nullptr is ignored).
  virtual void deallocate(void* pointer) = 0;
};

/// The default resource: aligned host memory.
class HostDeviceMemoryResource final : public DeviceMemoryResource {
 public:
  /// \param bytes how much. \return 256-byte aligned memory. \throws std::bad_alloc.
  void* allocate(std::size_t bytes) override {
    return ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256});
  }
  /// \param pointer memory from allocate().
  void deallocate(void* pointer) override {
    if (pointer != nullptr) ::operator delete (pointer, std::align_val_t{256});
  }
};

namespace detail {
/// \return the default resource.
inline HostDeviceMemoryResource& host_device_memory_resource() {
  static HostDeviceMemoryResource resource;
  return resource;
}
/// \return the slot holding the resource in use.
inline DeviceMemoryResource*& current_device_memory_resource() {
  static DeviceMemoryResource* resource = &host_device_memory_resource();
  return resource;
}
}  // namespace detail

/// Routes every following device_malloc/device_free through a resource. Not thread-safe against
/// concurrent allocations: call it at start-up or between phases. Memory must be freed through
/// the resource that allocated it.
/// \param resource the new resource, or nullptr for the default host resource.
/// \return the previous resource.
inline DeviceMemoryResource* set_device_memory_resource(DeviceMemoryResource* resource) {
  DeviceMemoryResource* previous = detail::current_device_memory_resource();
  detail::current_device_memory_resource() =
      resource != nullptr ? resource : &detail::host_device_memory_resource();
  return previous;
}

/// \return the resource device_malloc() uses now.
inline DeviceMemoryResource& device_memory_resource() {
  return *detail::current_device_memory_resource();
}

/// cudaMalloc for emulated kernels. \param bytes how much. \return the memory.
/// \throws what the current resource throws.
inline void* device_malloc(std::size_t bytes) {
  return device_memory_resource().allocate(bytes);
}

/// cudaFree for emulated kernels. \param pointer memory from device_malloc (nullptr is ignored).
inline void device_free(void* pointer) {
  device_memory_resource().deallocate(pointer);
}

/// cudaMemcpy for emulated kernels (host and device memory are the same address space here).
/// \param destination where to. \param source where from. \param bytes how much.
inline void memcpy(void* destination, const void* source, std::size_t bytes) {
  if (bytes != 0) std::memcpy(destination, source, bytes);
}

/// An owning device array of `count` elements of T, freed with device_free.
template <class T>
class DeviceBuffer {
 public:
  /// \param count elements. \throws what device_malloc throws.
  explicit DeviceBuffer(std::size_t count)
      : data_(static_cast<T*>(device_malloc(count * sizeof(T)))), count_(count) {}
  ~DeviceBuffer() { device_free(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Takes other's memory. \param other left empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  /// Takes other's memory. \param other left empty. \return *this.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  /// \return the device pointer.
  T* data() const { return data_; }
  /// \return the number of elements.
  std::size_t size() const { return count_; }
  /// Copies count elements in from host memory. \param host (size()) source.
  void copy_from_host(const T* host) { memcpy(data_, host, count_ * sizeof(T)); }
  /// Copies count elements out to host memory. \param host (size()) destination.
  void copy_to_host(T* host) const { memcpy(host, data_, count_ * sizeof(T)); }

 private:
  T* data_;
  std::size_t count_;
};

}  // namespace vramlab::simt
