// The GELU and SwiGLU feed-forward sub-layers (see mlp.h).
#include "common/nn/mlp.h"

#include "common/model/saved_tensor_names.h"

namespace vramlab::nn {

Mlp::Mlp(const ParameterStore& params, const std::string& prefix, int64_t layer,
         dist::Communicator* tensor_parallel)
    : layer_(layer),
      fc_(Linear::from_prefix(params, prefix + ".fc")),
      proj_(Linear::row_parallel(params, prefix + ".proj", tensor_parallel)) {}

const Tensor& Mlp::forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp,
                           int64_t B, int64_t T, const std::string& output_name) const {
  const int64_t N = B * T;
  const int64_t F = fc_.out_features();
  const Tensor& fch = saved.save(layer_, saved::fch, {B, T, F});            // (B, T, F)
  const Tensor& fch_gelu = saved.save(layer_, saved::fch_gelu, {B, T, F});  // (B, T, F)
  fc_.forward(runtime, fch.view(), inp, N);
  runtime.kernels().gelu_forward(fch_gelu.view(), fch.view());
  const Tensor& out = saved.save(layer_, output_name, {B, T, proj_.out_features()});  // (B, T, C)
  proj_.forward(runtime, out.view(), fch_gelu.view(), N);
  return out;
}

void Mlp::backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                   const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const int64_t F = fc_.out_features();
  // dfch_gelu, then dfch in the same temporary after GELU's backward (it reads dfch_gelu).
  Tensor dfch_gelu =
      runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dfch_gelu", dout.dtype());
  proj_.backward(runtime, dfch_gelu.view(), dout, saved.get(layer_, saved::fch_gelu).view(), N);
  Tensor dfch = runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dfch", dout.dtype());
  runtime.kernels().gelu_backward(dfch.view(), saved.get(layer_, saved::fch).view(),
                                  dfch_gelu.view());
  dfch_gelu.reset();
  fc_.backward(runtime, dinp, dfch.view(), inp, N);
}

SwigluMlp::SwigluMlp(const ParameterStore& params, const std::string& prefix, int64_t layer,
                     dist::Communicator* tensor_parallel)
    : layer_(layer),
      gate_(Linear::from_prefix(params, prefix + ".gate")),
      up_(Linear::from_prefix(params, prefix + ".up")),
      down_(Linear::row_parallel(params, prefix + ".down", tensor_parallel)) {}

const Tensor& SwigluMlp::forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp,
                                 int64_t B, int64_t T, const std::string& output_name) const {
  const int64_t N = B * T;
  const int64_t F = gate_.out_features();
  const Tensor& gate = saved.save(layer_, saved::gate, {B, T, F});      // (B, T, F)
  const Tensor& up = saved.save(layer_, saved::up, {B, T, F});          // (B, T, F)
  const Tensor& swiglu = saved.save(layer_, saved::swiglu, {B, T, F});  // (B, T, F)
  gate_.forward(runtime, gate.view(), inp, N);
  up_.forward(runtime, up.view(), inp, N);
  runtime.kernels().swiglu_forward(swiglu.view(), gate.view(), up.view());
  const Tensor& out = saved.save(layer_, output_name, {B, T, down_.out_features()});  // (B, T, C)
  down_.forward(runtime, out.view(), swiglu.view(), N);
  return out;
}

void SwigluMlp::backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                         const TensorView& dout, const TensorView& inp, int64_t B,
                         int64_t T) const {
  const int64_t N = B * T;
  const int64_t F = gate_.out_features();
  Tensor dswiglu =
      runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dswiglu", dout.dtype());
  down_.backward(runtime, dswiglu.view(), dout, saved.get(layer_, saved::swiglu).view(), N);
  Tensor dgate_up =
      runtime.zeros({2, B, T, F}, memory::MemoryCategory::temporary, "dgate_up", dout.dtype());
  const TensorView dgate = dgate_up.view(0, {B, T, F});
  const TensorView dup = dgate_up.view(N * F, {B, T, F});
  runtime.kernels().swiglu_backward(dgate, dup, dswiglu.view(),
                                    saved.get(layer_, saved::gate).view(),
                                    saved.get(layer_, saved::up).view());
  dswiglu.reset();
  gate_.backward(runtime, dinp, dgate, inp, N);
  up_.backward(runtime, dinp, dup, inp, N);
}

}  // namespace vramlab::nn
