// Activation offload: saved tensors kept in pinned host memory between a layer's forward and its
// backward (activation_storage.h, make_offloading_activation_storage).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/memory/host_buffer.h"
#include "common/memory/memory_category.h"
#include "common/nn/activation_storage.h"
#include "common/stream/event.h"

namespace vramlab::nn {

// Note [Activation offload]
// PyTorch offloads saved tensors with a saved_tensors_hooks pair: torch.autograd.graph.save_on_cpu
// copies each one to (pinned) host memory on the current stream and back when the backward
// unpacks it; torchtune's OffloadActivations (torchtune/training/_activation_offloading.py) makes
// the copies on a second stream and keeps the last few tensors alive until their copies end (its
// forward stash, 5 by default), but also brings each one back only when it is unpacked;
// Megatron-LM's fine-grained activation offloading (megatron/core/transformer, its README) reloads
// the next module's tensors while the backward runs the current one. Here the three steps are the
// seam's pack, prefetch and unpack, all on one copy stream the caller gives:
// - pack: the copy stream waits for the compute stream (the tensor is final), the bytes go to a
//   pinned block (power-of-two rounded, cached: the host's bytes count the rounding), and the
//   device block is marked as used by the copy stream (record_stream), so the caller may free it
//   at once: the caching allocator does not hand it out again before the copy has ended. That is
//   torchtune's stash kept by the allocator, and unbounded: a forward that outruns the link keeps
//   more blocks waiting (torchtune's compute stream would wait instead), and the device's memory
//   shows it.
// - prefetch (SavedActivations calls it for layer L − 1 when layer L's backward starts): a device
//   tensor is allocated and filled on the copy stream, after the compute stream's work so far;
//   from here its bytes are on the device again.
// - unpack: the compute stream waits for the copy (what did not hide is the stream's waited
//   time) and takes the tensor. A tensor nobody prefetched (the input of a recomputed span) is
//   copied back now, fully exposed.
// The bytes are the saved tensor's own, so the backward computes the same numbers bitwise. The
// clock does not share a link between streams: this stream's copies and the optimizer's go in
// opposite directions during the backward (PCIe is full duplex), but two copies the same way at
// the same time would each get the whole link here.

namespace {

// One saved tensor in host memory, and its way back while it is on it.
class HostPacked final : public PackedActivation {
 public:
  HostPacked(memory::HostBuffer host, std::vector<int64_t> shape, DType dtype, std::string name)
      : host_(std::move(host)), shape_(std::move(shape)), dtype_(dtype), name_(std::move(name)) {}
  // What it holds on the device: the prefetched tensor, once prefetch() has allocated it.
  [[nodiscard]] int64_t bytes() const override { return device_.bytes(); }

  memory::HostBuffer host_;     // (shape_) in dtype_, pinned: the tensor's bytes
  std::vector<int64_t> shape_;  // as saved
  DType dtype_;                 // as saved
  std::string name_;            // as saved
  Tensor device_;               // (shape_) on its way back to the device; empty until prefetch
  stream::Event arrived_;       // recorded on the copy stream after device_ is filled
};

class HostStorage final : public ActivationStorage {
 public:
  explicit HostStorage(stream::StreamId copy_stream) : copy_stream_(copy_stream) {}
  [[nodiscard]] std::string_view name() const override { return "offload"; }

  [[nodiscard]] std::unique_ptr<PackedActivation> pack(Runtime& runtime,
                                                       const Tensor& tensor) override {
    stream::Clock& clock = runtime.clock();
    memory::HostBuffer host(runtime.host_allocator(), static_cast<size_t>(tensor.bytes()),
                            memory::MemoryCategory::activation, tensor.name());
    stream::Event made;
    made.record(clock, clock.current_stream());
    made.wait(clock, copy_stream_);
    runtime.copy_to_host_async(host.data(), tensor, copy_stream_);
    runtime.host_allocator().record_stream(host.block(), copy_stream_);
    tensor.record_stream(copy_stream_);
    return std::make_unique<HostPacked>(std::move(host), tensor.shape(), tensor.dtype(),
                                        tensor.name());
  }

  void prefetch(Runtime& runtime, PackedActivation& packed) override {
    auto& host = dynamic_cast<HostPacked&>(packed);
    if (!host.device_.empty()) return;
    stream::Clock& clock = runtime.clock();
    host.device_ =
        runtime.allocate(host.shape_, host.dtype_, memory::MemoryCategory::activation, host.name_);
    // The block may have served the compute stream's kernels until now: the copy comes after
    // them.
    stream::Event before;
    before.record(clock, clock.current_stream());
    before.wait(clock, copy_stream_);
    runtime.copy_to_device_async(host.device_, host.host_.data(), copy_stream_);
    host.arrived_.record(clock, copy_stream_);
  }

  [[nodiscard]] Tensor unpack(Runtime& runtime, PackedActivation& packed,
                              const std::vector<int64_t>& shape, DType dtype,
                              const std::string& name) override {
    (void)shape, (void)dtype, (void)name;  // kept by pack
    auto& host = dynamic_cast<HostPacked&>(packed);
    prefetch(runtime, host);
    stream::Clock& clock = runtime.clock();
    host.arrived_.wait(clock, clock.current_stream());
    return std::move(host.device_);
  }

 private:
  stream::StreamId copy_stream_;
};

}  // namespace

std::unique_ptr<ActivationStorage> make_offloading_activation_storage(
    stream::StreamId copy_stream) {
  return std::make_unique<HostStorage>(copy_stream);
}

}  // namespace vramlab::nn
