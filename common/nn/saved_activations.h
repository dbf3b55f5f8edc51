/// \file
/// \brief SavedActivations: the one store through which every module keeps tensors for its
/// backward, for one training step, with a per-layer policy.
///
/// Policies: `save` keeps the tensor in device memory until the layer's backward (implemented);
/// `recompute` (gradient checkpointing), `offload` (to host) and `compress` (int8) are the
/// workbook's later techniques on the same mechanism; until the runtime has them, set_policy
/// refuses them by name — never silently replacing them by `save`.
/// Every saved tensor is allocated with the category `activation` and the name
/// "blocks.L.NAME" (or "NAME" outside the blocks), so snapshots and OOM messages name it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/tensor.h"
#include "common/nn/runtime.h"

namespace vramlab::nn {

/// What to do with the activations of one layer.
enum class ActivationPolicy : unsigned char {
  save,       ///< keep them in device memory until backward
  recompute,  ///< drop them and recompute in backward (not implemented yet)
  offload,    ///< copy them to host memory (not implemented yet)
  compress,   ///< keep an int8 copy (not implemented yet)
};

/// \return "save", "recompute", "offload" or "compress".
std::string_view activation_policy_name(ActivationPolicy policy);

/// One entry of SavedActivations::list().
struct SavedActivationInfo {
  std::string name;            ///< e.g. "preatt".
  int64_t layer = -1;          ///< block index, -1 outside the blocks.
  std::vector<int64_t> shape;  ///< e.g. {B, H, T, T}.
  DType dtype = DType::f32;    ///< as given to save().
  int64_t bytes = 0;           ///< numel × element size, before the allocator's rounding.
};

/// The per-step store of saved activations.
class SavedActivations {
 public:
  /// \param runtime allocates the tensors; must outlive the store. \param layers ≥ 0 blocks.
  SavedActivations(Runtime& runtime, int64_t layers);

  /// Sets the policy of block \p layer, in [0, layers).
  /// \throws vramlab::UsageError for a layer out of range, or any policy other than `save`
  /// (not implemented yet).
  void set_policy(int64_t layer, ActivationPolicy policy);
  /// \param layer in [-1, layers). \return the layer's policy (always `save` outside the blocks).
  [[nodiscard]] ActivationPolicy policy(int64_t layer) const;

  /// Allocates and registers a tensor to keep for backward.
  /// \p layer is a block index or -1; \p name is unique within the layer.
  /// \return the buffer to fill (valid until release_layer(layer) or clear()).
  /// \throws vramlab::memory::OutOfMemoryError when the device is full; std::logic_error when
  /// the name is already saved in that layer or the layer is out of range.
  Tensor& save(int64_t layer, std::string_view name, std::vector<int64_t> shape,
               DType dtype = DType::f32);
  /// The buffer save(\p layer, \p name) returned. \throws std::logic_error when nothing of that
  /// name is saved.
  [[nodiscard]] const Tensor& get(int64_t layer, std::string_view name) const;
  /// Frees everything \p layer (or -1) saved; called after the layer's backward.
  void release_layer(int64_t layer);
  /// Frees everything (end of a step, or unwinding from an error).
  void clear();

  /// \return every saved tensor, in the order they were saved.
  [[nodiscard]] std::vector<SavedActivationInfo> list() const;
  /// \return requested bytes of the saved tensors (the allocator's rounding excluded).
  [[nodiscard]] int64_t bytes() const;

 private:
  struct Entry {
    std::string name;
    Tensor buffer;
    uint64_t order = 0;
  };
  [[nodiscard]] size_t slot(int64_t layer) const;

  Runtime& runtime_;
  std::vector<ActivationPolicy> policies_;  // (layers)
  std::vector<std::deque<Entry>>
      slots_;  // (layers + 1): slot 0 is layer -1; deque keeps references
  uint64_t next_order_ = 0;
};

}  // namespace vramlab::nn
