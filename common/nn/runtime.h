/// \file
/// \brief Runtime: one device, its caching allocator, and the kernel backend the nn layer
/// dispatches to.
///
/// Dispatch (KernelKind):
/// - `cpu` (default on cpu and sim): the CPU kernels run on the blocks' host memory;
/// - `cuda-emulated` (cpu or sim): the CUDA kernels run under the SIMT emulator on the same host
///   memory, so the sim device's allocator statistics are those of the CUDA path;
/// - `cuda` (the only kernels of a cuda device, and its default): the nvcc-built kernels on a GPU,
///   the allocator over cudaMalloc and the driver's virtual-memory API;
/// - `meta` (the only kernels of a meta device): no kernel runs and only the outputs are
///   allocated, so a 70B training step's allocations replay in seconds. The modules call the
///   kernels the same way on every device; nothing in them asks which device it is.
///
/// Every device, cpu included, goes through its caching allocator (memory::make_caching_allocator;
/// cpu with no capacity), so a training step reuses cached blocks instead of asking the OS for
/// pages every step and the per-category statistics are measured the same way on every device.
/// Memory is owned by memory::Tensor; moving bytes between the host and the device is an operation
/// of the runtime, counted in transfer_stats() (bytes, copies and seconds per direction), which is
/// what the offload lesson measures.
///
/// Time: the runtime's stream::Clock (clock()) has the compute stream and any copy streams made
/// with clock().new_stream(). Every kernel is placed on the current stream (stream::StreamGuard)
/// with its measured time, on a meta preset with its roofline time (roofline.h: nothing runs
/// there, so the time is the larger of its FLOPs at the peak and its bytes at the memory
/// bandwidth); a copy takes its bytes over the host link's bandwidth when the device's
/// spec has one (a sim or meta preset), else its measured time. copy_to_device and copy_to_host
/// are synchronous (the host waits, as cudaMemcpy from pageable memory); the _async forms only
/// enqueue, so a copy on a side stream overlaps the kernels of the compute stream until an
/// stream::Event joins them. On cpu and sim the bytes move at once either way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/caching_host_allocator.h"
#include "common/memory/device.h"
#include "common/memory/tensor.h"
#include "common/nn/kernel_backend.h"
#include "common/stream/clock.h"

namespace vramlab::nn {

using memory::Tensor;

/// What a runtime's copies between host and device memory moved, and how long they took.
struct TransferStats {
  int64_t host_to_device_bytes = 0;     ///< copy_to_device
  int64_t host_to_device_copies = 0;    ///< copy_to_device calls that moved bytes
  double host_to_device_seconds = 0.0;  ///< their time on the clock (see Runtime)
  int64_t device_to_host_bytes = 0;     ///< copy_to_host
  int64_t device_to_host_copies = 0;    ///< copy_to_host calls that moved bytes
  double device_to_host_seconds = 0.0;  ///< their time on the clock (see Runtime)
};

/// A device with its allocator; modules allocate and dispatch through it.
class Runtime {
 public:
  /// A runtime with the device's default kernels (default_kernel_kind()).
  /// \param device from memory::parse_device().
  /// \throws vramlab::UsageError for a cuda device this build or machine cannot use (the
  /// message says why: no CUDA in the build, no driver, no device, index out of range).
  explicit Runtime(const memory::Device& device);
  /// \param device from memory::parse_device(). \param kernels which kernels run.
  /// \throws vramlab::UsageError naming the kernels or the device for a combination that cannot
  /// run (cuda-emulated on meta, cpu or cuda-emulated kernels on a cuda device, cuda kernels on
  /// a host device), or as Runtime(device) for an unusable cuda device.
  Runtime(const memory::Device& device, KernelKind kernels);
  ~Runtime();                        ///< Frees the allocator, then the backend.
  Runtime(const Runtime&) = delete;  ///< One runtime per allocator.
  Runtime& operator=(const Runtime&) = delete;

  /// \return cuda for a cuda device, meta for meta, cpu otherwise.
  [[nodiscard]] static KernelKind default_kernel_kind(const memory::Device& device);

  /// As given to the constructor, spec included.
  [[nodiscard]] const memory::Device& device() const { return device_; }
  /// Stats, snapshots, invariants; lives as long as the runtime.
  [[nodiscard]] memory::CachingAllocator& allocator() { return *allocator_; }
  /// Every module calls these; views must be memory of this runtime.
  [[nodiscard]] const KernelBackend& kernels() const { return *kernels_; }
  /// Not always default_kernel_kind(device()): cuda-emulated is chosen explicitly.
  [[nodiscard]] KernelKind kernel_kind() const { return kernels_->kind(); }

  /// Allocates an uninitialised buffer; \p category and \p name show in stats and snapshots.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  Tensor allocate(std::vector<int64_t> shape, DType dtype, memory::MemoryCategory category,
                  std::string name);
  /// Allocates a buffer filled with zeros (no fill on meta), f32 unless \p dtype says otherwise.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  Tensor zeros(std::vector<int64_t> shape, memory::MemoryCategory category, std::string name,
               DType dtype = DType::f32);
  /// Allocates a temporary (category temporary), uninitialised, f32 unless \p dtype says
  /// otherwise. \throws vramlab::memory::OutOfMemoryError when the device is full.
  Tensor temporary(std::vector<int64_t> shape, std::string name, DType dtype = DType::f32);
  /// Sets every byte of \p buffer to zero (through the kernels; nothing on meta).
  void fill_zero(const Tensor& buffer) const { kernels_->fill_zero(buffer.view()); }
  /// Copies host memory into (part of) this runtime's memory, counted in transfer_stats().
  /// \param destination a view of this runtime's memory. \param host destination.bytes() bytes.
  void copy_to_device(const TensorView& destination, const void* host);
  /// \param destination a tensor of this runtime. \param host destination.bytes() bytes.
  void copy_to_device(const Tensor& destination, const void* host) {
    copy_to_device(destination.view(), host);
  }
  /// Copies (part of) this runtime's memory into host memory, counted in transfer_stats().
  /// \param host source.bytes() bytes. \param source a view of this runtime's memory.
  void copy_to_host(void* host, const TensorView& source);
  /// \param host source.bytes() bytes. \param source a tensor of this runtime.
  void copy_to_host(void* host, const Tensor& source) { copy_to_host(host, source.view()); }
  /// As copy_to_device, without the host waiting: the copy is enqueued on \p stream (the
  /// current stream by default) and ordered against others only by events. The bytes move now.
  /// \return the span the copy occupies on the clock.
  stream::Span copy_to_device_async(const TensorView& destination, const void* host,
                                    stream::StreamId stream);
  /// \param destination a tensor of this runtime. \param host destination.bytes() bytes.
  /// \param stream the stream the copy goes to. \return the span the copy occupies.
  stream::Span copy_to_device_async(const Tensor& destination, const void* host,
                                    stream::StreamId stream) {
    return copy_to_device_async(destination.view(), host, stream);
  }
  /// As copy_to_host, without the host waiting (see copy_to_device_async).
  /// \return the span the copy occupies on the clock.
  stream::Span copy_to_host_async(void* host, const TensorView& source, stream::StreamId stream);
  /// \param host source.bytes() bytes. \param source a tensor of this runtime.
  /// \param stream the stream the copy goes to. \return the span the copy occupies.
  stream::Span copy_to_host_async(void* host, const Tensor& source, stream::StreamId stream) {
    return copy_to_host_async(host, source.view(), stream);
  }
  /// \return the bytes, copies and seconds of this runtime's host-device copies so far.
  [[nodiscard]] const TransferStats& transfer_stats() const { return transfers_; }

  /// The device's streams and their timelines (file comment).
  [[nodiscard]] stream::Clock& clock() { return clock_; }
  /// The pinned host memory beside the device (PyTorch's CachingHostAllocator, whose events are
  /// on clock()): what a copy_*_async reads or fills, taken from the process's host-RAM budget.
  [[nodiscard]] memory::CachingHostAllocator& host_allocator() { return *host_allocator_; }

 private:
  enum class Direction { host_to_device, device_to_host };
  // Moves the bytes and places the copy on \p stream; the host waits when \p synchronous.
  stream::Span copy(Direction direction, void* host, const TensorView& view,
                    stream::StreamId stream, bool synchronous);

  stream::Clock clock_;  // before kernels_: the backend holds a pointer to it
  std::unique_ptr<memory::CachingHostAllocator> host_allocator_;  // records events on clock_
  std::unique_ptr<KernelBackend> kernels_;
  memory::Device device_;
  std::unique_ptr<memory::CachingAllocator> allocator_;
  TransferStats transfers_;
};

}  // namespace vramlab::nn
