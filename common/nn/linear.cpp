// Linear layer forward/backward over the ParameterStore (see linear.h).
#include "common/nn/linear.h"

#include <stdexcept>

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

void Linear::forward(const Runtime& runtime, float* out, const float* inp, int64_t N) const {
  if (!runtime.runs_kernels()) return;
  const float* weight = params_.value(*weight_) + row_begin_ * in_features_;  // (OC, C)
  const float* bias = bias_ ? params_.value(*bias_) + row_begin_ : nullptr;   // (OC)
  runtime.kernels().linear_forward(out, inp, weight, bias, N, in_features_, out_features_);
}

void Linear::backward(const Runtime& runtime, float* dinp, const float* dout, const float* inp,
                      int64_t N) const {
  if (!runtime.runs_kernels()) return;
  const float* weight = params_.value(*weight_) + row_begin_ * in_features_;  // (OC, C)
  float* dweight = params_.grad(*weight_) + row_begin_ * in_features_;        // (OC, C)
  float* dbias = bias_ ? params_.grad(*bias_) + row_begin_ : nullptr;         // (OC)
  runtime.kernels().linear_backward(dinp, dweight, dbias, dout, inp, weight, N, in_features_,
                                    out_features_);
}

}  // namespace vramlab::nn
