/// \file
/// \brief ParameterStore: all parameters of a model in one contiguous block (f32, or 16-bit) (llm.c's layout),
/// their gradients in a second block, and named views in ModelConfig::parameters() order.
///
/// One block per role keeps the allocator's parameter bytes equal to 4 × parameter_count (up to
/// the allocator's 512-byte rounding of that one block), lets the optimizer update every tensor
/// with one kernel call, and zeroes all gradients with one fill.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/memory/tensor.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"

namespace vramlab::nn {

/// One named parameter tensor inside the store.
struct ParameterView {
  std::string name;            ///< e.g. "blocks.0.attn.qkv.weight".
  std::vector<int64_t> shape;  ///< e.g. {3C, C}.
  int64_t layer = -1;          ///< block index or -1.
  int64_t offset = 0;          ///< first element inside the store.
  int64_t numel = 0;           ///< number of elements.
  InitKind init{};             ///< how DecoderModel::initialise fills it (normal if unset).
};

/// The parameters (category parameter) and gradients (category gradient) of one model.
class ParameterStore {
 public:
  /// Allocates the parameter block (uninitialised) and lays out \p specs in order.
  /// \param runtime must outlive the store. \param specs from ModelConfig::parameters().
  /// \param value_dtype the parameters' type (f32, or the 16-bit working copy of mixed
  /// precision). \param grad_dtype the gradients' type.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs,
                 DType value_dtype = DType::f32, DType grad_dtype = DType::f32);

  /// Linear search over the names; modules call it once, at construction. \throws std::logic_error
  /// if absent.
  [[nodiscard]] const ParameterView& find(std::string_view name) const;
  /// Lets optional parameters (biases, position table) be probed without a throw.
  [[nodiscard]] bool contains(std::string_view name) const;
  /// In layout order (ModelConfig::parameters()).
  [[nodiscard]] const std::vector<ParameterView>& views() const { return views_; }
  /// Parameter count (not bytes): the values block holds numel × the type's size.
  [[nodiscard]] int64_t numel() const { return numel_; }

  /// \p view must come from this store. \return the values, with the parameter's shape.
  [[nodiscard]] memory::TensorView value(const ParameterView& view) const {
    return values_.view(view.offset, view.shape);
  }
  /// As value(), into the gradient block; call ensure_grads() first if they may be released.
  [[nodiscard]] memory::TensorView grad(const ParameterView& view) const {
    return grads_.view(view.offset, view.shape);
  }
  /// \return the parameter block, (numel).
  [[nodiscard]] const Tensor& values() const { return values_; }
  /// \return the gradient block, (numel); empty when gradients are released.
  [[nodiscard]] const Tensor& grads() const { return grads_; }

  /// Makes sure a zeroed gradient block exists (allocates it if it was released).
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  void ensure_grads();
  /// Clears the gradients before the next backward.
  /// \param set_to_none true: free the gradient block (PyTorch's zero_grad(set_to_none=True));
  /// false: keep it and fill it with zeros.
  void zero_grad(bool set_to_none);

 private:
  Runtime& runtime_;
  DType grad_dtype_;
  std::vector<ParameterView> views_;
  int64_t numel_ = 0;
  Tensor values_;  // (numel) every parameter, layout order
  Tensor grads_;   // (numel) their gradients, or empty
};

}  // namespace vramlab::nn
