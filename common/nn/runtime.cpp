// Runtime: a device, its caching allocator, and the kernel backend (see runtime.h).
#include "common/nn/runtime.h"

#include <chrono>
#include <utility>

#include "common/memory/alloc_config.h"
#include "common/memory/make_caching_allocator.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/nn/meta_kernel_backend.h"
#include "common/platform/errors.h"

extern "C" void openblas_set_num_threads(int num_threads);  // stable OpenBLAS symbol

namespace vramlab::nn {

namespace {

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
  allocator_ = memory::make_caching_allocator(device, memory::alloc_conf_from_environment());
  kernels_ = make_kernels(kernels);
}

Runtime::~Runtime() = default;

Tensor Runtime::allocate(std::vector<int64_t> shape, DType dtype, memory::MemoryCategory category,
                         std::string name) {
  return Tensor(*allocator_, std::move(shape), dtype, category, std::move(name));
}

Tensor Runtime::zeros(std::vector<int64_t> shape, memory::MemoryCategory category,
                      std::string name, DType dtype) {
  Tensor buffer = allocate(std::move(shape), dtype, category, std::move(name));
  fill_zero(buffer);
  return buffer;
}

Tensor Runtime::temporary(std::vector<int64_t> shape, std::string name, DType dtype) {
  return allocate(std::move(shape), dtype, memory::MemoryCategory::temporary, std::move(name));
}

void Runtime::copy_to_device(const TensorView& destination, const void* host) {
  const auto start = std::chrono::steady_clock::now();
  kernels_->copy_to_device(destination, host);
  if (destination.bytes() == 0) return;
  transfers_.host_to_device_bytes += destination.bytes();
  ++transfers_.host_to_device_copies;
  transfers_.host_to_device_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Runtime::copy_to_host(void* host, const TensorView& source) {
  const auto start = std::chrono::steady_clock::now();
  kernels_->copy_to_host(host, source);
  if (source.bytes() == 0) return;
  transfers_.device_to_host_bytes += source.bytes();
  ++transfers_.device_to_host_copies;
  transfers_.device_to_host_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vramlab::nn
