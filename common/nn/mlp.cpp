// The GELU and SwiGLU feed-forward sub-layers (see mlp.h).
#include "common/nn/mlp.h"

#include "common/model/saved_tensor_names.h"

namespace vramlab::nn {

Mlp::Mlp(const ParameterStore& params, const std::string& prefix, int64_t layer)
    : layer_(layer),
      fc_(Linear::from_prefix(params, prefix + ".fc")),
      proj_(Linear::from_prefix(params, prefix + ".proj")) {}

const DeviceBuffer& Mlp::forward(Runtime& runtime, SavedActivations& saved, const float* inp,
                                 int64_t B, int64_t T, const std::string& output_name) const {
  const int64_t N = B * T;
  const int64_t F = fc_.out_features();
  const DeviceBuffer& fch = saved.save(layer_, saved::fch, {B, T, F});            // (B, T, F)
  const DeviceBuffer& fch_gelu = saved.save(layer_, saved::fch_gelu, {B, T, F});  // (B, T, F)
  fc_.forward(runtime, fch.f32(), inp, N);
  if (runtime.runs_kernels()) runtime.kernels().gelu_forward(fch_gelu.f32(), fch.f32(), N * F);
  const DeviceBuffer& out =
      saved.save(layer_, output_name, {B, T, proj_.out_features()});  // (B, T, C)
  proj_.forward(runtime, out.f32(), fch_gelu.f32(), N);
  return out;
}

void Mlp::backward(Runtime& runtime, const SavedActivations& saved, float* dinp, const float* dout,
                   const float* inp, int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const int64_t F = fc_.out_features();
  // dfch_gelu, then dfch in the same temporary after GELU's backward (it reads dfch_gelu).
  DeviceBuffer dfch_gelu = runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dfch_gelu");
  proj_.backward(runtime, dfch_gelu.f32(), dout, saved.get(layer_, saved::fch_gelu).f32(), N);
  DeviceBuffer dfch = runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dfch");
  if (runtime.runs_kernels())
    runtime.kernels().gelu_backward(dfch.f32(), saved.get(layer_, saved::fch).f32(),
                                    dfch_gelu.f32(), N * F);
  dfch_gelu.reset();
  fc_.backward(runtime, dinp, dfch.f32(), inp, N);
}

SwigluMlp::SwigluMlp(const ParameterStore& params, const std::string& prefix, int64_t layer)
    : layer_(layer),
      gate_(Linear::from_prefix(params, prefix + ".gate")),
      up_(Linear::from_prefix(params, prefix + ".up")),
      down_(Linear::from_prefix(params, prefix + ".down")) {}

const DeviceBuffer& SwigluMlp::forward(Runtime& runtime, SavedActivations& saved, const float* inp,
                                       int64_t B, int64_t T, const std::string& output_name) const {
  const int64_t N = B * T;
  const int64_t F = gate_.out_features();
  const DeviceBuffer& gate = saved.save(layer_, saved::gate, {B, T, F});      // (B, T, F)
  const DeviceBuffer& up = saved.save(layer_, saved::up, {B, T, F});          // (B, T, F)
  const DeviceBuffer& swiglu = saved.save(layer_, saved::swiglu, {B, T, F});  // (B, T, F)
  gate_.forward(runtime, gate.f32(), inp, N);
  up_.forward(runtime, up.f32(), inp, N);
  if (runtime.runs_kernels())
    runtime.kernels().swiglu_forward(swiglu.f32(), gate.f32(), up.f32(), N * F);
  const DeviceBuffer& out =
      saved.save(layer_, output_name, {B, T, down_.out_features()});  // (B, T, C)
  down_.forward(runtime, out.f32(), swiglu.f32(), N);
  return out;
}

void SwigluMlp::backward(Runtime& runtime, const SavedActivations& saved, float* dinp,
                         const float* dout, const float* inp, int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const int64_t F = gate_.out_features();
  DeviceBuffer dswiglu = runtime.zeros({B, T, F}, memory::MemoryCategory::temporary, "dswiglu");
  down_.backward(runtime, dswiglu.f32(), dout, saved.get(layer_, saved::swiglu).f32(), N);
  DeviceBuffer dgate_up =
      runtime.zeros({2, B, T, F}, memory::MemoryCategory::temporary, "dgate_up");
  float* dgate = dgate_up.f32();  // (B, T, F)
  float* dup = dgate + N * F;     // (B, T, F)
  if (runtime.runs_kernels())
    runtime.kernels().swiglu_backward(dgate, dup, dswiglu.f32(),
                                      saved.get(layer_, saved::gate).f32(),
                                      saved.get(layer_, saved::up).f32(), N * F);
  dswiglu.reset();
  gate_.backward(runtime, dinp, dgate, inp, N);
  up_.backward(runtime, dinp, dup, inp, N);
}

}  // namespace vramlab::nn
