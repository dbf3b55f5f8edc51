/// \file
/// \brief Where a caching allocator's segments come from: host memory (sim), nothing (meta), or a
/// real GPU (cuda). The allocator itself is the same over all three.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace vramlab::memory {

/// The device-memory driver under a caching allocator: cudaMalloc/cudaFree for whole segments, and
/// the virtual-memory API (reserve address space, map/unmap pages) for expandable segments.
/// Failures to get memory are reported by return values, never by exceptions: the allocator decides
/// whether that becomes an out-of-memory error, and it may retry after releasing cached segments.
/// Only when it gives up does it ask the backing, through raise_refusal_cause, whether the last
/// refusal had a cause other than the device being full.
class Backing {
 public:
  virtual ~Backing() = default;

  /// Allocates one segment (cudaMalloc).
  /// \param bytes the segment size, a multiple of 512.
  /// \return its address, or 0 when the device has not enough free memory.
  virtual std::uint64_t allocate_segment(std::size_t bytes) = 0;
  /// Frees a segment returned by allocate_segment (cudaFree).
  virtual void free_segment(std::uint64_t address, std::size_t bytes) = 0;
  /// Reserves address space without memory (cuMemAddressReserve).
  /// \return the range's address, or 0 if the address space cannot be reserved.
  virtual std::uint64_t reserve_address_range(std::size_t bytes) = 0;
  /// Backs [address, address + bytes) of a reserved range with memory (cuMemCreate + cuMemMap).
  /// \param address page-aligned start.  \param bytes a multiple of the page size.
  /// \return false when the device has not enough free memory (nothing is mapped then).
  virtual bool map_pages(std::uint64_t address, std::size_t bytes) = 0;
  /// Releases the memory behind [address, address + bytes) (cuMemUnmap + cuMemRelease).
  /// \param address page-aligned start.  \param bytes a multiple of the page size.
  virtual void unmap_pages(std::uint64_t address, std::size_t bytes) = 0;
  /// Returns a reserved range (cuMemAddressFree); its pages must be unmapped.
  virtual void release_address_range(std::uint64_t address, std::size_t bytes) = 0;
  /// \return the device's total memory in bytes (cudaMemGetInfo's total).
  virtual std::uint64_t total_bytes() const = 0;
  /// \return the device's free memory in bytes (cudaMemGetInfo's free).
  virtual std::uint64_t free_bytes() const = 0;
  /// \return true when addresses are real host pointers the program may read and write.
  virtual bool host_accessible() const = 0;
  /// Called by the allocator just before it raises an out-of-memory error. A backing whose last
  /// refused request (allocate_segment or map_pages) was refused for a reason other than the
  /// device being full throws that reason's error here instead; the host backing throws
  /// HostMemoryError when the process's host-RAM budget refused it (host_memory.h). The default
  /// has no other reason and returns.
  /// \param device_label the allocator's device, e.g. "sim:rtx4090-24g", for the message.
  virtual void raise_refusal_cause(std::string_view device_label) { (void)device_label; }
};

/// A simulated GPU: segments are host memory (anonymous mappings, committed lazily by the OS when
/// first touched) and the device is full when the mapped bytes would exceed \p capacity_bytes.
/// Every host backing also takes its segments and pages from the process's host-memory budget
/// (host_memory.h), so a simulated device larger than the machine's free RAM fails with a
/// HostMemoryError instead of being killed by the OS.
/// \throws vramlab::UsageError when `VRAMLAB_HOST_MEMORY_LIMIT` is set to something that is not a
///         size (resolve_host_memory_limit).
std::unique_ptr<Backing> make_host_backing(std::uint64_t capacity_bytes);

/// A meta device: addresses are handed out from a private virtual range and no memory is ever
/// touched, so a 1 TiB device works on a laptop.
std::unique_ptr<Backing> make_meta_backing(std::uint64_t capacity_bytes);

/// A real GPU through cudaMalloc and the driver's virtual-memory API.
/// \param device_index the CUDA device ordinal (cudaSetDevice's argument).
/// \throws std::runtime_error when vramlab was built without CUDA (VRAMLAB_HAVE_CUDA) or the
///         device cannot be used.
std::unique_ptr<Backing> make_cuda_backing(int device_index);

}  // namespace vramlab::memory
