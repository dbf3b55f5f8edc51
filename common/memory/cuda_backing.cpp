// The cuda backing: cudaMalloc/cudaFree for segments and the driver's virtual-memory API
// (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess) for expandable segments.
// Compiled with the CUDA toolkit only (VRAMLAB_HAVE_CUDA); without it make_cuda_backing throws.
// The driver API is reached through the runtime's cudaGetDriverEntryPointByVersion rather than by
// linking libcuda, so binaries still start on machines with the toolkit but no driver.
#include <stdexcept>
#include <string>

#include "common/memory/backing.h"

#if VRAMLAB_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <map>
#endif

namespace vramlab::memory {

#if VRAMLAB_HAVE_CUDA
namespace {

// The driver's virtual-memory entry points, looked up once through the runtime (CUDA 12 ABI).
struct DriverVmmApi {
  decltype(&cuMemAddressReserve) address_reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
};

template <typename Fn>
void resolve(const char* symbol, Fn& fn) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &pointer, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || pointer == nullptr) {
    throw std::runtime_error(std::string("the CUDA driver does not provide ") + symbol +
                             " (needed for expandable segments)");
  }
  fn = reinterpret_cast<Fn>(pointer);
}

const DriverVmmApi& driver_vmm_api() {
  static const DriverVmmApi api = [] {
    DriverVmmApi a;
    resolve("cuMemAddressReserve", a.address_reserve);
    resolve("cuMemAddressFree", a.address_free);
    resolve("cuMemCreate", a.create);
    resolve("cuMemRelease", a.release);
    resolve("cuMemMap", a.map);
    resolve("cuMemUnmap", a.unmap);
    resolve("cuMemSetAccess", a.set_access);
    return a;
  }();
  return api;
}

void check_runtime(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
  }
}

class CudaBacking final : public Backing {
 public:
  explicit CudaBacking(int device_index) : device_index_(device_index) {
    check_runtime(cudaSetDevice(device_index_), "cudaSetDevice");
    check_runtime(cudaMemGetInfo(&free_cache_, &total_), "cudaMemGetInfo");
  }

  std::uint64_t allocate_segment(std::size_t bytes) override {
    cudaSetDevice(device_index_);
    void* pointer = nullptr;
    if (cudaMalloc(&pointer, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky out-of-memory error
      return 0;
    }
    return reinterpret_cast<std::uint64_t>(pointer);
  }
  void free_segment(std::uint64_t address, std::size_t) override {
    cudaSetDevice(device_index_);
    cudaFree(reinterpret_cast<void*>(address));
  }
  std::uint64_t reserve_address_range(std::size_t bytes) override {
    CUdeviceptr address = 0;
    if (driver_vmm_api().address_reserve(&address, bytes, 0, 0, 0) != CUDA_SUCCESS) return 0;
    return static_cast<std::uint64_t>(address);
  }
  bool map_pages(std::uint64_t address, std::size_t bytes) override {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_index_;
    CUmemGenericAllocationHandle handle{};
    if (driver_vmm_api().create(&handle, bytes, &prop, 0) != CUDA_SUCCESS) return false;
    if (driver_vmm_api().map(static_cast<CUdeviceptr>(address), bytes, 0, handle, 0) != CUDA_SUCCESS) {
      driver_vmm_api().release(handle);
      return false;
    }
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (driver_vmm_api().set_access(static_cast<CUdeviceptr>(address), bytes, &access, 1) != CUDA_SUCCESS) {
      driver_vmm_api().unmap(static_cast<CUdeviceptr>(address), bytes);
      driver_vmm_api().release(handle);
      return false;
    }
    handles_[address] = {handle, bytes};
    return true;
  }
  void unmap_pages(std::uint64_t address, std::size_t bytes) override {
    // The allocator unmaps whole pages it mapped, possibly several mappings at once.
    std::uint64_t cursor = address;
    while (cursor < address + bytes) {
      auto it = handles_.find(cursor);
      if (it == handles_.end()) break;
      driver_vmm_api().unmap(static_cast<CUdeviceptr>(cursor), it->second.bytes);
      driver_vmm_api().release(it->second.handle);
      cursor += it->second.bytes;
      handles_.erase(it);
    }
  }
  void release_address_range(std::uint64_t address, std::size_t bytes) override {
    driver_vmm_api().address_free(static_cast<CUdeviceptr>(address), bytes);
  }
  std::uint64_t total_bytes() const override { return total_; }
  std::uint64_t free_bytes() const override {
    std::size_t free_now = 0;
    std::size_t total_now = 0;
    cudaSetDevice(device_index_);
    if (cudaMemGetInfo(&free_now, &total_now) != cudaSuccess) return 0;
    return free_now;
  }
  bool host_accessible() const override { return false; }

 private:
  struct Mapping {
    CUmemGenericAllocationHandle handle;
    std::size_t bytes;
  };
  int device_index_;
  std::size_t free_cache_ = 0;
  std::size_t total_ = 0;
  std::map<std::uint64_t, Mapping> handles_;
};

}  // namespace

std::unique_ptr<Backing> make_cuda_backing(int device_index) {
  return std::make_unique<CudaBacking>(device_index);
}

#else

std::unique_ptr<Backing> make_cuda_backing(int device_index) {
  throw std::runtime_error("device cuda:" + std::to_string(device_index) +
                           " is not available: vramlab was built without CUDA");
}

#endif

}  // namespace vramlab::memory
