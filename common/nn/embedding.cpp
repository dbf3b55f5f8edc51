// Token and position embedding module (see embedding.h).
#include "common/nn/embedding.h"

#include "common/model/saved_tensor_names.h"

namespace vramlab::nn {

Embedding::Embedding(const ParameterStore& params, const std::string& token_table,
                     const std::string& position_table)
    : params_(params),
      wte_(&params.find(token_table)),
      V_(wte_->shape.at(0)),
      C_(wte_->shape.at(1)) {
  if (!position_table.empty()) wpe_ = &params.find(position_table);
}

const Tensor& Embedding::forward(Runtime& runtime, SavedActivations& saved,
                                 const TensorView& tokens, int64_t B, int64_t T) const {
  const Tensor& encoded = saved.save(-1, saved::encoded, {B, T, C_});  // (B, T, C)
  runtime.kernels().embedding_forward(encoded.view(), tokens, params_.value(*wte_),
                                      wpe_ ? params_.value(*wpe_) : TensorView(), B, T, C_, V_);
  return encoded;
}

void Embedding::backward(const Runtime& runtime, const TensorView& dout, const TensorView& tokens,
                         int64_t B, int64_t T) const {
  runtime.kernels().embedding_backward(
      params_.grad(*wte_), wpe_ ? params_.grad(*wpe_) : TensorView(), dout, tokens, B, T, C_, V_);
}

}  // namespace vramlab::nn
