// Linear layer forward/backward over the ParameterStore (see linear.h).
#include "common/nn/linear.h"

#include <stdexcept>

#include "common/dist/communicator.h"

namespace vramlab::nn {

Linear::Linear(const ParameterStore& params, const std::string& weight_name,
               const std::string& bias_name, int64_t row_begin, int64_t rows)
    : params_(params), weight_(&params.find(weight_name)), row_begin_(row_begin) {
  if (params.contains(bias_name)) bias_ = &params.find(bias_name);
  const int64_t total_rows = weight_->shape.at(0);
  in_features_ = weight_->shape.at(1);
  out_features_ = rows < 0 ? total_rows - row_begin : rows;
  if (row_begin < 0 || out_features_ < 0 || row_begin + out_features_ > total_rows)
    throw std::logic_error("linear '" + weight_name + "': rows out of range");
}

// This layer's rows of a weight (or its gradient): (OC, C).
TensorView Linear::band(const TensorView& tensor) const {
  return tensor.slice(row_begin_ * in_features_, {out_features_, in_features_});
}

// This layer's entries of a bias (or its gradient), or none: (OC).
TensorView Linear::bias_band(const TensorView& tensor) const {
  return bias_ ? tensor.slice(row_begin_, {out_features_}) : TensorView();
}

void Linear::forward(const Runtime& runtime, const TensorView& out, const TensorView& inp,
                     int64_t N) const {
  const bool add_bias =
      bias_ != nullptr && (tensor_parallel_ == nullptr || tensor_parallel_->rank() == 0);
  runtime.kernels().linear_forward(out, inp, band(params_.value(*weight_)),
                                   add_bias ? bias_band(params_.value(*bias_)) : TensorView(), N,
                                   in_features_, out_features_);
  if (tensor_parallel_ != nullptr) tensor_parallel_->all_reduce(out, dist::Traffic::activations);
}

void Linear::backward(const Runtime& runtime, const TensorView& dinp, const TensorView& dout,
                      const TensorView& inp, int64_t N) const {
  runtime.kernels().linear_backward(
      dinp, band(params_.grad(*weight_)), bias_ ? bias_band(params_.grad(*bias_)) : TensorView(),
      dout, inp, band(params_.value(*weight_)), N, in_features_, out_features_);
}

}  // namespace vramlab::nn
