/// \file
/// \brief Where a saved activation lives between its layer's forward and its backward: one seam,
/// PyTorch's torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook) in the runtime's
/// explicit style.
///
/// SavedActivations (saved_activations.h) asks its storage to pack() each packable tensor once the
/// forward is done with it, to prefetch() it one layer before the backward needs it, and to
/// unpack() it before the backward reads it. What "packed" means is the strategy's:
/// - `none` keeps the tensor as it is (pack() declines);
/// - `int8` and `int8-block` keep int8 values with an fp32 absmax scale per tensor or per
///   kInt8ActivationBlock elements, and dequantise into a fresh tensor of the saved dtype;
/// - `offload` keeps the bytes in pinned host memory, copied there on a copy stream, and its
///   prefetch starts the copy back ahead of the backward (Note [Activation offload];
///   torch.autograd.graph.save_on_cpu keeps every saved tensor in host memory in the same way,
///   without the prefetch).
///
/// The order of allocations is the one a pack hook has: the packed form is allocated while the
/// tensor still exists, and the tensor is freed after; the unpacked tensor is allocated while the
/// packed form still exists. So the activation peak counts both for a moment, as on a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/tensor.h"
#include "common/nn/runtime.h"
#include "common/recompute/activation_compression.h"

namespace vramlab::nn {

/// What a storage keeps in place of one saved tensor.
class PackedActivation {
 public:
  virtual ~PackedActivation() = default;
  /// \return the bytes the packed form holds in the runtime's memory (what the saved-activation
  /// store counts), requested bytes before the allocator's rounding.
  [[nodiscard]] virtual int64_t bytes() const = 0;
};

/// A strategy for where and how saved tensors are kept (file comment).
class ActivationStorage {
 public:
  virtual ~ActivationStorage() = default;
  /// \return the strategy's name as --compress-activations spells it, e.g. "int8-block".
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// \param runtime the runtime whose memory and kernels the packed form uses.
  /// \param tensor a saved tensor the forward is done with; its name names the packed form's
  /// allocations.
  /// \return its packed form, allocated and filled (the caller frees the tensor), or nullptr
  /// when this strategy keeps the tensor as it is (for instance a dtype it does not pack).
  /// \throws memory::OutOfMemoryError when the device is full.
  [[nodiscard]] virtual std::unique_ptr<PackedActivation> pack(Runtime& runtime,
                                                               const Tensor& tensor) = 0;
  /// The backward reaches this tensor's layer soon: a strategy that moves bytes starts now. What
  /// it brings to the device counts in \p packed's bytes() from here.
  virtual void prefetch(Runtime& runtime, PackedActivation& packed) {
    (void)runtime;
    (void)packed;
  }
  /// \param runtime the runtime pack() was given.
  /// \param packed what pack() returned (the caller frees it after); a strategy may take from it
  /// what prefetch() brought.
  /// \param shape the tensor's shape, as saved.
  /// \param dtype the tensor's dtype, as saved.
  /// \param name the tensor's name, as saved.
  /// \return the tensor again, allocated with the category activation.
  /// \throws memory::OutOfMemoryError when the device is full.
  [[nodiscard]] virtual Tensor unpack(Runtime& runtime, PackedActivation& packed,
                                      const std::vector<int64_t>& shape, DType dtype,
                                      const std::string& name) = 0;
};

/// \return the strategy of \p compression: none keeps tensors in place, int8 and int8-block
/// quantise them (file comment).
[[nodiscard]] std::unique_ptr<ActivationStorage> make_activation_storage(
    recompute::ActivationCompression compression);
/// \return the `offload` strategy (file comment): its copies go on \p copy_stream, a stream of the
/// clock of the runtime given to pack(), made once per run (clock().new_stream()).
[[nodiscard]] std::unique_ptr<ActivationStorage> make_offloading_activation_storage(
    stream::StreamId copy_stream);

}  // namespace vramlab::nn
