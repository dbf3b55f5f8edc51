// Attention module: projections, (RoPE,) materialized causal attention, output projection.
#include "common/nn/attention.h"

#include "common/model/saved_tensor_names.h"

namespace vramlab::nn {

namespace {

std::vector<Linear> make_qkv(const ParameterStore& params, const ModelConfig& c,
                             const std::string& p) {
  std::vector<Linear> qkv;
  if (c.family == ModelFamily::gpt2) {
    for (int64_t i = 0; i < 3; ++i)
      qkv.emplace_back(params, p + "attn.qkv.weight", p + "attn.qkv.bias", i * c.hidden, c.hidden);
  } else {
    qkv.push_back(Linear::from_prefix(params, p + "attn.q"));
    qkv.push_back(Linear::from_prefix(params, p + "attn.k"));
    qkv.push_back(Linear::from_prefix(params, p + "attn.v"));
  }
  return qkv;
}

std::string prefix(int64_t layer) {
  return "blocks." + std::to_string(layer) + ".";
}

}  // namespace

Attention::Attention(const ParameterStore& params, const ModelConfig& config, int64_t layer)
    : layer_(layer),
      C_(config.hidden),
      H_(config.heads),
      Hkv_(config.kv_heads),
      D_(config.head_dim()),
      rope_(config.family == ModelFamily::llama),
      rope_theta_(config.rope_theta),
      qkv_(make_qkv(params, config, prefix(layer))),
      proj_(Linear::from_prefix(
          params, prefix(layer) + (config.family == ModelFamily::gpt2 ? "attn.proj" : "attn.o"))) {}

const DeviceBuffer& Attention::forward(Runtime& runtime, SavedActivations& saved, const float* inp,
                                       int64_t B, int64_t T, const std::string& output_name) const {
  const int64_t N = B * T;
  const int64_t kvC = Hkv_ * D_;
  const float *q, *k, *v;  // (B, T, H, D), (B, T, Hkv, D), (B, T, Hkv, D)
  if (!rope_) {
    const DeviceBuffer& qkv = saved.save(layer_, saved::qkv, {3, B, T, C_});  // (3, B, T, C)
    for (int64_t i = 0; i < 3; ++i)
      qkv_[static_cast<size_t>(i)].forward(runtime, qkv.f32() + i * N * C_, inp, N);
    q = qkv.f32();
    k = q + N * C_;
    v = k + N * C_;
  } else {
    const DeviceBuffer& qb = saved.save(layer_, saved::q, {B, T, C_});   // (B, T, C)
    const DeviceBuffer& kb = saved.save(layer_, saved::k, {B, T, kvC});  // (B, T, kvC)
    const DeviceBuffer& vb = saved.save(layer_, saved::v, {B, T, kvC});  // (B, T, kvC)
    qkv_[0].forward(runtime, qb.f32(), inp, N);
    qkv_[1].forward(runtime, kb.f32(), inp, N);
    qkv_[2].forward(runtime, vb.f32(), inp, N);
    if (runtime.runs_kernels()) {
      runtime.kernels().rope_forward(qb.f32(), qb.f32(), B, T, H_, D_, rope_theta_);
      runtime.kernels().rope_forward(kb.f32(), kb.f32(), B, T, Hkv_, D_, rope_theta_);
    }
    q = qb.f32();
    k = kb.f32();
    v = vb.f32();
  }
  const DeviceBuffer& preatt = saved.save(layer_, saved::preatt, {B, H_, T, T});  // (B, H, T, T)
  const DeviceBuffer& att = saved.save(layer_, saved::att, {B, H_, T, T});        // (B, H, T, T)
  const DeviceBuffer& atty = saved.save(layer_, saved::atty, {B, T, C_});         // (B, T, C)
  if (runtime.runs_kernels())
    runtime.kernels().attention_forward(atty.f32(), preatt.f32(), att.f32(), q, k, v, B, T, H_,
                                        Hkv_, D_);
  const DeviceBuffer& out = saved.save(layer_, output_name, {B, T, C_});  // (B, T, C)
  proj_.forward(runtime, out.f32(), atty.f32(), N);
  return out;
}

void Attention::backward(Runtime& runtime, const SavedActivations& saved, float* dinp,
                         const float* dout, const float* inp, int64_t B, int64_t T) const {
  const int64_t N = B * T;
  const int64_t kvC = Hkv_ * D_;
  const DeviceBuffer& atty = saved.get(layer_, saved::atty);
  DeviceBuffer datty = runtime.zeros({B, T, C_}, memory::MemoryCategory::temporary, "datty");
  proj_.backward(runtime, datty.f32(), dout, atty.f32(), N);

  // Gradients of q, k, v as they entered the attention kernel: (B, T, C), (B, T, kvC) x 2.
  DeviceBuffer dqkv =
      runtime.zeros({N * (C_ + 2 * kvC)}, memory::MemoryCategory::temporary, "dqkv");
  float* dq = dqkv.f32();
  float* dk = dq + N * C_;
  float* dv = dk + N * kvC;
  const float *q, *k, *v;
  if (!rope_) {
    q = saved.get(layer_, saved::qkv).f32();
    k = q + N * C_;
    v = k + N * C_;
  } else {
    q = saved.get(layer_, saved::q).f32();
    k = saved.get(layer_, saved::k).f32();
    v = saved.get(layer_, saved::v).f32();
  }
  {
    DeviceBuffer dpreatt = runtime.temporary({B, H_, T, T}, "dpreatt");  // (B, H, T, T)
    if (runtime.runs_kernels())
      runtime.kernels().attention_backward(dq, dk, dv, dpreatt.f32(), datty.f32(), q, k, v,
                                           saved.get(layer_, saved::att).f32(), B, T, H_, Hkv_, D_);
  }
  datty.reset();
  if (rope_) {
    // Undo the rotation: gradients with respect to the projections' outputs.
    DeviceBuffer dqk =
        runtime.zeros({N * (C_ + kvC)}, memory::MemoryCategory::temporary, "dqk_prerope");
    if (runtime.runs_kernels()) {
      runtime.kernels().rope_backward(dqk.f32(), dq, B, T, H_, D_, rope_theta_);
      runtime.kernels().rope_backward(dqk.f32() + N * C_, dk, B, T, Hkv_, D_, rope_theta_);
    }
    qkv_[0].backward(runtime, dinp, dqk.f32(), inp, N);
    qkv_[1].backward(runtime, dinp, dqk.f32() + N * C_, inp, N);
  } else {
    qkv_[0].backward(runtime, dinp, dq, inp, N);
    qkv_[1].backward(runtime, dinp, dk, inp, N);
  }
  qkv_[2].backward(runtime, dinp, dv, inp, N);
}

}  // namespace vramlab::nn
