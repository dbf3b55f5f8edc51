/// \file
/// \brief TensorView: a non-owning, typed, dense row-major view of device memory (data, dtype,
/// shape). Kernel backends take views and check the dtype and the element count of each against
/// the op's sizes before they run, so a wrong buffer is an InternalError naming the op, the
/// argument and the expected numbers, not silent memory corruption. A later dtype (bf16, fp8, int8
/// states) is a new case of the same check, not a new interface.
///
/// A default-constructed view is "none" (an optional argument such as a missing bias).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/platform/errors.h"

namespace vramlab::memory {

/// A view of \p shape elements of \p dtype at \p data; it does not keep the memory alive.
class TensorView {
 public:
  /// The "none" view: no data, no elements.
  TensorView() = default;
  /// \param data the first element (a host, GPU or meta address). \param dtype element type.
  /// \param shape dimensions, each ≥ 0. \throws vramlab::InternalError for a negative dimension.
  TensorView(void* data, DType dtype, std::vector<int64_t> shape);

  /// \return true for the "none" view.
  [[nodiscard]] bool none() const { return data_ == nullptr && numel_ == 0 && shape_.empty(); }
  /// \return the first element's address (never dereference it on meta).
  [[nodiscard]] void* data() const { return data_; }
  /// Checked by f32(), i32() and i8() before a cast.
  [[nodiscard]] DType dtype() const { return dtype_; }
  /// Row-major, no strides: the view is always dense.
  [[nodiscard]] const std::vector<int64_t>& shape() const { return shape_; }
  /// Product of shape(); 0 for "none".
  [[nodiscard]] int64_t numel() const { return numel_; }
  /// \return numel × element size.
  [[nodiscard]] int64_t bytes() const {
    return numel_ * static_cast<int64_t>(dtype_size_bytes(dtype_));
  }

  /// \param where the caller (filled in by the compiler).
  /// \return data() as float. \throws vramlab::InternalError unless the dtype is f32.
  [[nodiscard]] float* f32(
      vramlab::source_location where = vramlab::source_location::current()) const;
  /// \param where the caller (filled in by the compiler).
  /// \return data() as int32. \throws vramlab::InternalError unless the dtype is i32.
  [[nodiscard]] int32_t* i32(
      vramlab::source_location where = vramlab::source_location::current()) const;
  /// \param where the caller (filled in by the compiler).
  /// \return data() as int8 (quantised activations). \throws vramlab::InternalError unless the
  /// dtype is i8.
  [[nodiscard]] int8_t* i8(
      vramlab::source_location where = vramlab::source_location::current()) const;

  /// A view of \p shape elements starting \p offset elements into this one (one parameter of the
  /// flat parameter block, the k projection inside a fused qkv buffer).
  /// \param offset first element, relative to this view. \param shape the slice's dimensions.
  /// \return the slice. \throws vramlab::InternalError when it does not lie inside this view.
  [[nodiscard]] TensorView slice(int64_t offset, std::vector<int64_t> shape) const;
  /// The same elements with other dimensions.
  /// \param shape dimensions with the same element count. \return the view.
  /// \throws vramlab::InternalError when the counts differ.
  [[nodiscard]] TensorView reshape(std::vector<int64_t> shape) const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
};

/// \param shape dimensions. \return e.g. "(8, 128, 256)".
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace vramlab::memory
