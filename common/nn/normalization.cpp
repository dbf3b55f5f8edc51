// LayerNorm / RMSNorm module over the kernels (see normalization.h).
#include "common/nn/normalization.h"

#include "common/model/saved_tensor_names.h"

namespace vramlab::nn {

Norm::Norm(const ParameterStore& params, const std::string& prefix, std::string saved_name,
           int64_t layer)
    : params_(params),
      weight_(&params.find(prefix + ".weight")),
      name_(std::move(saved_name)),
      mean_name_(saved::mean_of(name_)),
      rstd_name_(saved::rstd_of(name_)),
      layer_(layer),
      C_(weight_->shape.at(0)) {
  if (params.contains(prefix + ".bias")) bias_ = &params.find(prefix + ".bias");
}

const Tensor& Norm::forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp,
                            int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const Tensor& out = saved.save(layer_, name_, {B, T, C_});  // (B, T, C)
  if (is_layernorm()) {
    const Tensor& mean = saved.save(layer_, mean_name_, {B, T}, DType::f32, false);  // (B, T)
    const Tensor& rstd = saved.save(layer_, rstd_name_, {B, T}, DType::f32, false);  // (B, T)
    runtime.kernels().layernorm_forward(out.view(), mean.view(), rstd.view(), inp,
                                        params_.value(*weight_), params_.value(*bias_), N, C_);
  } else {
    const Tensor& rstd = saved.save(layer_, rstd_name_, {B, T}, DType::f32, false);  // (B, T)
    runtime.kernels().rmsnorm_forward(out.view(), rstd.view(), inp, params_.value(*weight_), N, C_);
  }
  return out;
}

void Norm::backward(const Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                    const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const TensorView rstd = saved.get(layer_, rstd_name_).view();  // (B, T)
  if (is_layernorm()) {
    const TensorView mean = saved.get(layer_, mean_name_).view();  // (B, T)
    runtime.kernels().layernorm_backward(dinp, params_.grad(*weight_), params_.grad(*bias_), dout,
                                         inp, params_.value(*weight_), mean, rstd, N, C_);
  } else {
    runtime.kernels().rmsnorm_backward(dinp, params_.grad(*weight_), dout, inp,
                                       params_.value(*weight_), rstd, N, C_);
  }
}

}  // namespace vramlab::nn
