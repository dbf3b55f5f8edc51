// TensorView: a typed, non-owning view (see tensor_view.h).
#include "common/memory/tensor_view.h"

#include <utility>

#include "common/platform/errors.h"

namespace vramlab::memory {

namespace {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (const int64_t dim : shape) {
    if (dim < 0) throw InternalError("tensor view: negative dimension in " + format_shape(shape));
    numel *= dim;
  }
  return numel;
}

void require_dtype(const TensorView& view, DType expected, vramlab::source_location where) {
  if (view.dtype() != expected)
    throw InternalError("a " + std::string(dtype_name(view.dtype())) + " tensor " +
                            format_shape(view.shape()) + " used as " +
                            std::string(dtype_name(expected)),
                        where);
}

}  // namespace

TensorView::TensorView(void* data, DType dtype, std::vector<int64_t> shape)
    : data_(data), dtype_(dtype), shape_(std::move(shape)), numel_(element_count(shape_)) {}

float* TensorView::f32(vramlab::source_location where) const {
  require_dtype(*this, DType::f32, where);
  return static_cast<float*>(data_);
}

int32_t* TensorView::i32(vramlab::source_location where) const {
  require_dtype(*this, DType::i32, where);
  return static_cast<int32_t*>(data_);
}

int8_t* TensorView::i8(vramlab::source_location where) const {
  require_dtype(*this, DType::i8, where);
  return static_cast<int8_t*>(data_);
}

TensorView TensorView::slice(int64_t offset, std::vector<int64_t> shape) const {
  const int64_t count = element_count(shape);
  if (offset < 0 || offset > numel_ || count > numel_ - offset)
    throw InternalError("slice of " + std::to_string(count) + " elements at offset " +
                        std::to_string(offset) + " outside a tensor " + format_shape(shape_));
  auto* first =
      static_cast<unsigned char*>(data_) + offset * static_cast<int64_t>(dtype_size_bytes(dtype_));
  return TensorView(first, dtype_, std::move(shape));
}

TensorView TensorView::reshape(std::vector<int64_t> shape) const {
  if (element_count(shape) != numel_)
    throw InternalError("reshape of a tensor " + format_shape(shape_) + " to " +
                        format_shape(shape));
  return TensorView(data_, dtype_, std::move(shape));
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + ")";
}

}  // namespace vramlab::memory
