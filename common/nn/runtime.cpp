// Runtime: a device, its caching allocator, and the kernel backend (see runtime.h).
#include "common/nn/runtime.h"

#include <utility>

#include "common/memory/backing.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/nn/meta_kernel_backend.h"
#include "common/platform/errors.h"
#include "common/platform/gpu_probe.h"

extern "C" void openblas_set_num_threads(int num_threads);  // stable OpenBLAS symbol

namespace vramlab::nn {

namespace {

// cpu memory has no capacity; the host backing still needs a number, so give it an exabyte.
constexpr uint64_t kUnlimitedBytes = memory::kOneExaByte;

std::string quoted_kernels(KernelKind kernels) {
  return "kernels '" + std::string(kernel_kind_name(kernels)) + "'";
}

void check_combination(const memory::Device& device, KernelKind kernels) {
  const std::string name = device.name();
  switch (device.kind) {
    case memory::DeviceKind::meta:
      if (kernels != KernelKind::meta)
        throw UsageError(quoted_kernels(kernels) + " cannot run on device '" + name +
                         "': no kernel runs on meta (only allocations are replayed)");
      break;
    case memory::DeviceKind::cpu:
    case memory::DeviceKind::sim:
      if (kernels == KernelKind::cuda)
        throw UsageError(quoted_kernels(kernels) + " need a cuda device, not '" + name +
                         "' (use --kernels cuda-emulated to run the CUDA kernels on the CPU)");
      if (kernels == KernelKind::meta)
        throw UsageError(quoted_kernels(kernels) + " need the meta device, not '" + name +
                         "' (use --device meta)");
      break;
    case memory::DeviceKind::cuda:
      if (kernels != KernelKind::cuda)
        throw UsageError(quoted_kernels(kernels) + " cannot run on device '" + name +
                         "': its memory is on the GPU (use --kernels cuda)");
      break;
  }
}

// The cuda device's allocator backing, after checking that this build and machine can use it.
std::unique_ptr<memory::Backing> usable_cuda_backing(const memory::Device& device) {
  const std::string name = device.name();
#if VRAMLAB_HAVE_CUDA
  const platform::GpuProbe probe = platform::probe_gpus();
  if (probe.status != platform::GpuStatus::available)
    throw UsageError(
        "device '" + name + "' is not available: " + platform::gpu_status_name(probe.status) +
        " (" + probe.detail + "); without a GPU use --device sim:t4-16g --kernels cuda-emulated");
  if (device.index >= static_cast<int64_t>(probe.devices.size()))
    throw UsageError("device '" + name + "' does not exist: the driver reports " +
                     std::to_string(probe.devices.size()) + " GPU(s)");
  return memory::make_cuda_backing(static_cast<int>(device.index));
#else
  throw UsageError("device '" + name +
                   "' is not available: this build of vramlab has no CUDA (configure with "
                   "-DVRAMLAB_CUDA=ON); without a GPU use --device sim:t4-16g --kernels "
                   "cuda-emulated");
#endif
}

std::unique_ptr<KernelBackend> make_kernels(KernelKind kernels) {
  switch (kernels) {
    case KernelKind::cpu:
      return std::make_unique<CpuKernelBackend>();
    case KernelKind::cuda_emulated:
      return make_emulated_cuda_kernel_backend();
    case KernelKind::meta:
      return make_meta_kernel_backend();
    case KernelKind::cuda:
#if VRAMLAB_HAVE_CUDA
      return make_gpu_cuda_kernel_backend();
#else
      break;
#endif
  }
  throw UsageError(quoted_kernels(kernels) + " are not in this build (it has no CUDA)");
}

}  // namespace

KernelKind Runtime::default_kernel_kind(const memory::Device& device) {
  switch (device.kind) {
    case memory::DeviceKind::cuda:
      return KernelKind::cuda;
    case memory::DeviceKind::meta:
      return KernelKind::meta;
    case memory::DeviceKind::cpu:
    case memory::DeviceKind::sim:
      break;
  }
  return KernelKind::cpu;
}

Runtime::Runtime(const memory::Device& device) : Runtime(device, default_kernel_kind(device)) {}

Runtime::Runtime(const memory::Device& device, KernelKind kernels) : device_(device) {
  check_combination(device, kernels);
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
      break;
    case memory::DeviceKind::cuda:
      allocator_ = std::make_unique<memory::CachingAllocator>(usable_cuda_backing(device),
                                                              device.name(), device.index);
      break;
  }
  kernels_ = make_kernels(kernels);
}

Runtime::~Runtime() = default;

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

}  // namespace vramlab::nn
