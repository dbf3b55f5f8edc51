// Runtime: a device, its caching allocator, and the kernel dispatch rule (see runtime.h).
#include "common/nn/runtime.h"

#include <cstring>
#include <utility>

#include "common/platform/errors.h"

extern "C" void openblas_set_num_threads(int num_threads);  // stable OpenBLAS symbol

namespace vramlab::nn {

namespace {

// cpu memory has no capacity; the host backing still needs a number, so give it an exabyte.
constexpr uint64_t kUnlimitedBytes = memory::kOneExaByte;

}  // namespace

Runtime::Runtime(const memory::Device& device) : device_(device) {
  // One OpenMP pool owns the cores; OpenBLAS runs inside it, one thread per call
  // (parallel_linear.h).
  openblas_set_num_threads(1);
  switch (device.kind) {
    case memory::DeviceKind::cpu:
      allocator_ = std::make_unique<memory::CachingAllocator>(
          memory::make_host_backing(kUnlimitedBytes), device.name(), device.index);
      break;
    case memory::DeviceKind::sim:
      allocator_ = std::make_unique<memory::CachingAllocator>(
          memory::make_host_backing(device.spec.capacity_bytes), device.name(), device.index);
      break;
    case memory::DeviceKind::meta:
      allocator_ = std::make_unique<memory::CachingAllocator>(
          memory::make_meta_backing(device.spec.capacity_bytes), device.name(), device.index);
      runs_kernels_ = false;
      break;
    case memory::DeviceKind::cuda:
      throw UsageError("device '" + device.name() +
                       "' needs a GPU build of the nn layer; use --device cpu, sim or meta");
  }
}

DeviceBuffer Runtime::allocate(std::vector<int64_t> shape, DType dtype,
                               memory::MemoryCategory category, std::string name) {
  return DeviceBuffer(*allocator_, std::move(shape), dtype, category, std::move(name));
}

DeviceBuffer Runtime::zeros(std::vector<int64_t> shape, memory::MemoryCategory category,
                            std::string name) {
  DeviceBuffer buffer = allocate(std::move(shape), DType::f32, category, std::move(name));
  fill_zero(buffer);
  return buffer;
}

DeviceBuffer Runtime::temporary(std::vector<int64_t> shape, std::string name) {
  return allocate(std::move(shape), DType::f32, memory::MemoryCategory::temporary, std::move(name));
}

void Runtime::fill_zero(const DeviceBuffer& buffer) const {
  if (!runs_kernels_ || buffer.numel() == 0) return;
  auto* bytes = static_cast<unsigned char*>(buffer.data());
  const int64_t total = buffer.bytes();
  constexpr int64_t kChunkBytes = int64_t{1} << 18;
  const int64_t chunks = (total + kChunkBytes - 1) / kChunkBytes;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunkBytes;
    const int64_t end = begin + kChunkBytes < total ? begin + kChunkBytes : total;
    std::memset(bytes + begin, 0, static_cast<size_t>(end - begin));
  }
}

}  // namespace vramlab::nn
