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
  kernels_->set_clock(&clock_);
  // Nothing runs on meta: a kernel's time is its roofline (Note [A meta kernel's time: its
  // roofline] in roofline.cpp), when the preset gives the peaks; else the time spent here.
  if (device.kind == memory::DeviceKind::meta) kernels_->set_roofline(Roofline::of(device.spec));
  // Beside a meta device the host is meta too: its pinned blocks are counted, never touched.
  host_allocator_ = std::make_unique<memory::CachingHostAllocator>(
      clock_, memory::HostMemoryKind::pinned,
      device.kind == memory::DeviceKind::meta ? memory::HostMemoryBacking::meta
                                              : memory::HostMemoryBacking::ram);
  allocator_->set_clock(&clock_);
}

Runtime::~Runtime() = default;

Tensor Runtime::allocate(std::vector<int64_t> shape, DType dtype, memory::MemoryCategory category,
                         std::string name) {
  return Tensor(*allocator_, std::move(shape), dtype, category, std::move(name));
}

Tensor Runtime::zeros(std::vector<int64_t> shape, memory::MemoryCategory category, std::string name,
                      DType dtype) {
  Tensor buffer = allocate(std::move(shape), dtype, category, std::move(name));
  fill_zero(buffer);
  return buffer;
}

Tensor Runtime::temporary(std::vector<int64_t> shape, std::string name, DType dtype) {
  return allocate(std::move(shape), dtype, memory::MemoryCategory::temporary, std::move(name));
}

void Runtime::copy_to_device(const TensorView& destination, const void* host) {
  copy(Direction::host_to_device, const_cast<void*>(host), destination, clock_.current_stream(),
       true);
}

void Runtime::copy_to_host(void* host, const TensorView& source) {
  copy(Direction::device_to_host, host, source, clock_.current_stream(), true);
}

stream::Span Runtime::copy_to_device_async(const TensorView& destination, const void* host,
                                           stream::StreamId stream) {
  return copy(Direction::host_to_device, const_cast<void*>(host), destination, stream, false);
}

stream::Span Runtime::copy_to_host_async(void* host, const TensorView& source,
                                         stream::StreamId stream) {
  return copy(Direction::device_to_host, host, source, stream, false);
}

stream::Span Runtime::copy(Direction direction, void* host, const TensorView& view,
                           stream::StreamId stream, bool synchronous) {
  const bool to_device = direction == Direction::host_to_device;
  const std::string_view name = to_device ? "copy h2d" : "copy d2h";
  (void)clock_.stream_time(stream);  // an unknown stream is refused before any byte moves
  const auto start = std::chrono::steady_clock::now();
  if (to_device) {
    kernels_->copy_to_device(view, host);
  } else {
    kernels_->copy_to_host(host, view);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t bytes = view.bytes();
  if (bytes == 0)
    return stream::Span{stream, clock_.stream_time(stream), clock_.stream_time(stream),
                        std::string(name)};
  const double bandwidth =
      to_device ? device_.spec.host_to_device_bytes_per_s : device_.spec.device_to_host_bytes_per_s;
  const double seconds = bandwidth > 0.0 ? static_cast<double>(bytes) / bandwidth : wall;
  const stream::Span span = clock_.enqueue(stream, seconds, name);
  if (synchronous) clock_.synchronize_stream(stream);
  if (to_device) {
    transfers_.host_to_device_bytes += bytes;
    ++transfers_.host_to_device_copies;
    transfers_.host_to_device_seconds += seconds;
  } else {
    transfers_.device_to_host_bytes += bytes;
    ++transfers_.device_to_host_copies;
    transfers_.device_to_host_seconds += seconds;
  }
  return span;
}

}  // namespace vramlab::nn
