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
  /// \p bytes may be 0. \return at least 256-byte aligned memory (cudaMalloc's guarantee).
  /// \throws whatever the resource throws on failure (e.g. an out-of-memory error).
  virtual void* allocate(std::size_t bytes) = 0;
  /// \p pointer from allocate() of this resource; nullptr is ignored.
  virtual void deallocate(void* pointer) = 0;
};

/// The default resource: aligned host memory.
class HostDeviceMemoryResource final : public DeviceMemoryResource {
 public:
  /// Aligned operator new (0 bytes allocate 1). \throws std::bad_alloc.
  void* allocate(std::size_t bytes) override {
    return ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256});
  }
  void deallocate(void* pointer) override {
    if (pointer != nullptr) ::operator delete (pointer, std::align_val_t{256});
  }
};

namespace detail {
/// A function-local static, so it exists before any other static initializer allocates.
inline HostDeviceMemoryResource& host_device_memory_resource() {
  static HostDeviceMemoryResource resource;
  return resource;
}
/// The slot set_device_memory_resource() writes; starts at the host resource.
inline DeviceMemoryResource*& current_device_memory_resource() {
  static DeviceMemoryResource* resource = &host_device_memory_resource();
  return resource;
}
}  // namespace detail

/// Routes every following device_malloc/device_free through a resource. Not thread-safe against
/// concurrent allocations: call it at start-up or between phases. Memory must be freed through
/// the resource that allocated it.
/// \p resource nullptr restores the default host resource. \return the previous resource, to
/// restore later (ScopedDeviceMemoryResource does).
inline DeviceMemoryResource* set_device_memory_resource(DeviceMemoryResource* resource) {
  DeviceMemoryResource* previous = detail::current_device_memory_resource();
  detail::current_device_memory_resource() =
      resource != nullptr ? resource : &detail::host_device_memory_resource();
  return previous;
}

/// The resource device_malloc() uses now; never null.
inline DeviceMemoryResource& device_memory_resource() {
  return *detail::current_device_memory_resource();
}

/// cudaMalloc for emulated kernels. \throws what the current resource throws.
inline void* device_malloc(std::size_t bytes) {
  return device_memory_resource().allocate(bytes);
}

/// cudaFree for emulated kernels; nullptr is ignored. Free before changing the resource.
inline void device_free(void* pointer) {
  device_memory_resource().deallocate(pointer);
}

/// cudaMemcpy for emulated kernels (host and device memory are the same address space here);
/// no direction argument, and 0 bytes allow null pointers.
inline void memcpy(void* destination, const void* source, std::size_t bytes) {
  if (bytes != 0) std::memcpy(destination, source, bytes);
}

/// An owning device array of `count` elements of T, freed with device_free.
template <class T>
class DeviceBuffer {
 public:
  /// Uninitialised, as cudaMalloc. \throws what device_malloc throws.
  explicit DeviceBuffer(std::size_t count)
      : data_(static_cast<T*>(device_malloc(count * sizeof(T)))), count_(count) {}
  ~DeviceBuffer() { device_free(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Takes \p other's memory, leaving it empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  /// Swaps with \p other, whose destructor then frees this buffer's old memory.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  /// Host-addressable: the emulator's device memory is host memory.
  T* data() const { return data_; }
  /// Elements, not bytes.
  std::size_t size() const { return count_; }
  /// Copies size() elements in from \p host.
  void copy_from_host(const T* host) { memcpy(data_, host, count_ * sizeof(T)); }
  /// Copies size() elements out to \p host.
  void copy_to_host(T* host) const { memcpy(host, data_, count_ * sizeof(T)); }

 private:
  T* data_;
  std::size_t count_;
};

}  // namespace vramlab::simt
