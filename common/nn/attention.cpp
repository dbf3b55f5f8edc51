// Attention module: projections, (RoPE,) causal attention (materialized, or flash), output
// projection.
#include "common/nn/attention.h"

#include "common/model/saved_tensor_names.h"

#include "common/dist/communicator.h"

namespace vramlab::nn {

namespace {

// The fused weight holds this rank's q rows, then its k rows, then its v rows: (3C/t, C).
std::vector<Linear> make_qkv(const ParameterStore& params, const ModelConfig& c,
                             const std::string& p, int64_t t) {
  std::vector<Linear> qkv;
  if (c.family == ModelFamily::gpt2) {
    const int64_t rows = c.hidden / t;
    for (int64_t i = 0; i < 3; ++i)
      qkv.emplace_back(params, p + "attn.qkv.weight", p + "attn.qkv.bias", i * rows, rows);
  } else {
    qkv.push_back(Linear::from_prefix(params, p + "attn.q"));
    qkv.push_back(Linear::from_prefix(params, p + "attn.k"));
    qkv.push_back(Linear::from_prefix(params, p + "attn.v"));
  }
  return qkv;
}

std::string prefix(int64_t layer) {
  return layer_module_name(layer) + ".";
}

}  // namespace

Attention::Attention(const ParameterStore& params, const ModelConfig& config, int64_t layer,
                     dist::Communicator* tensor_parallel)
    : layer_(layer),
      C_(config.hidden),
      H_(config.heads / dist::size_of(tensor_parallel)),
      Hkv_(config.kv_heads / dist::size_of(tensor_parallel)),
      D_(config.head_dim()),
      QC_(H_ * D_),
      rope_(config.family == ModelFamily::llama),
      rope_theta_(config.rope_theta),
      qkv_(make_qkv(params, config, prefix(layer), dist::size_of(tensor_parallel))),
      proj_(Linear::row_parallel(
          params, prefix(layer) + (config.family == ModelFamily::gpt2 ? "attn.proj" : "attn.o"),
          tensor_parallel)) {}

const Tensor& Attention::forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp,
                                 int64_t B, int64_t T, const std::string& output_name,
                                 const AttentionDropout& dropout) const {
  const KernelBackend& kernels = runtime.kernels();
  const int64_t N = B * T;
  const int64_t kvC = Hkv_ * D_;
  // Widths per rank: QC = C/t and kvC = kv_heads·D/t under tensor parallelism.
  TensorView q, k, v;  // (B, T, QC), (B, T, kvC), (B, T, kvC)
  if (!rope_) {
    const Tensor& qkv = saved.save(layer_, saved::qkv, {3, B, T, QC_});  // (3, B, T, QC)
    q = qkv.view(0, {B, T, QC_});
    k = qkv.view(N * QC_, {B, T, QC_});
    v = qkv.view(2 * N * QC_, {B, T, QC_});
  } else {
    q = saved.save(layer_, saved::q, {B, T, QC_}).view();  // (B, T, QC)
    k = saved.save(layer_, saved::k, {B, T, kvC}).view();  // (B, T, kvC)
    v = saved.save(layer_, saved::v, {B, T, kvC}).view();  // (B, T, kvC)
  }
  qkv_[0].forward(runtime, q, inp, N);
  qkv_[1].forward(runtime, k, inp, N);
  qkv_[2].forward(runtime, v, inp, N);
  if (rope_) {
    kernels.rope_forward(q, q, B, T, H_, D_, rope_theta_);
    kernels.rope_forward(k, k, B, T, Hkv_, D_, rope_theta_);
  }
  if (saved.attention() == AttentionKind::flash) {
    // Flash attention keeps only each row's log-sum-exp; the backward recomputes the scores.
    const Tensor& lse = saved.save(layer_, saved::lse, {B, H_, T}, DType::f32,
                                   /*compressible=*/false);             // (B, H, T)
    const Tensor& atty = saved.save(layer_, saved::atty, {B, T, QC_});  // (B, T, QC)
    kernels.flash_attention_forward(atty.view(), lse.view(), q, k, v, B, T, H_, Hkv_, D_, dropout);
  } else {
    // Softmax's backward needs only its output, so the scores are computed in place in att and
    // overwritten by the probabilities (PyTorch's autograd does not keep them either).
    const Tensor& att = saved.save(layer_, saved::att, {B, H_, T, T});  // (B, H, T, T)
    const Tensor& atty = saved.save(layer_, saved::atty, {B, T, QC_});  // (B, T, QC)
    kernels.attention_forward(atty.view(), att.view(), att.view(), q, k, v, B, T, H_, Hkv_, D_,
                              dropout);
  }
  const Tensor& atty = saved.get(layer_, saved::atty);              // (B, T, QC)
  const Tensor& out = saved.save(layer_, output_name, {B, T, C_});  // (B, T, C), all-reduced
  proj_.forward(runtime, out.view(), atty.view(), N);
  return out;
}

void Attention::backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                         const TensorView& dout, const TensorView& inp, int64_t B, int64_t T,
                         const AttentionDropout& dropout) const {
  const KernelBackend& kernels = runtime.kernels();
  const int64_t N = B * T;
  const int64_t kvC = Hkv_ * D_;
  Tensor datty = runtime.zeros({B, T, QC_}, memory::MemoryCategory::temporary, "datty",
                               dout.dtype());  // (B, T, QC)
  proj_.backward(runtime, datty.view(), dout, saved.get(layer_, saved::atty).view(), N);

  // Gradients of q, k, v as they entered the attention kernel: (B, T, QC), (B, T, kvC) x 2.
  Tensor dqkv =
      runtime.zeros({N * (QC_ + 2 * kvC)}, memory::MemoryCategory::temporary, "dqkv", dout.dtype());
  const TensorView dq = dqkv.view(0, {B, T, QC_});
  const TensorView dk = dqkv.view(N * QC_, {B, T, kvC});
  const TensorView dv = dqkv.view(N * (QC_ + kvC), {B, T, kvC});
  TensorView q, k, v;
  if (!rope_) {
    const Tensor& qkv = saved.get(layer_, saved::qkv);  // (3, B, T, QC)
    q = qkv.view(0, {B, T, QC_});
    k = qkv.view(N * QC_, {B, T, QC_});
    v = qkv.view(2 * N * QC_, {B, T, QC_});
  } else {
    q = saved.get(layer_, saved::q).view();
    k = saved.get(layer_, saved::k).view();
    v = saved.get(layer_, saved::v).view();
  }
  if (saved.attention() == AttentionKind::flash) {
    Tensor delta = runtime.temporary({B, H_, T}, "delta", DType::f32);  // (B, H, T) rowsum(dO∘O)
    kernels.flash_attention_backward(
        dq, dk, dv, delta.view(), datty.view(), q, k, v, saved.get(layer_, saved::atty).view(),
        saved.get(layer_, saved::lse).view(), B, T, H_, Hkv_, D_, dropout);
  } else {
    // Under selective recompute the probabilities were not kept: recompute them from q and k,
    // with the kernel that made them in forward, so they are bitwise the same.
    Tensor recomputed_att;  // (B, H, T, T), under selective recompute only
    if (saved.policy(layer_).recompute == Recompute::selective) {
      recomputed_att = runtime.temporary({B, H_, T, T}, "recomputed att", q.dtype());
      kernels.attention_forward(TensorView{}, recomputed_att.view(), recomputed_att.view(), q, k, v,
                                B, T, H_, Hkv_, D_);
    }
    const TensorView att =
        recomputed_att.empty() ? saved.get(layer_, saved::att).view() : recomputed_att.view();
    Tensor dpreatt = runtime.temporary({B, H_, T, T}, "dpreatt", dout.dtype());  // (B, H, T, T)
    kernels.attention_backward(dq, dk, dv, dpreatt.view(), datty.view(), q, k, v, att, B, T, H_,
                               Hkv_, D_, dropout);
  }
  datty.reset();
  if (rope_) {
    // Undo the rotation: gradients with respect to the projections' outputs.
    Tensor dqk = runtime.zeros({N * (QC_ + kvC)}, memory::MemoryCategory::temporary, "dqk_prerope",
                               dout.dtype());  // (B, T, QC) then (B, T, kvC)
    const TensorView dq_prerope = dqk.view(0, {B, T, QC_});
    const TensorView dk_prerope = dqk.view(N * QC_, {B, T, kvC});
    kernels.rope_backward(dq_prerope, dq, B, T, H_, D_, rope_theta_);
    kernels.rope_backward(dk_prerope, dk, B, T, Hkv_, D_, rope_theta_);
    qkv_[0].backward(runtime, dinp, dq_prerope, inp, N);
    qkv_[1].backward(runtime, dinp, dk_prerope, inp, N);
  } else {
    qkv_[0].backward(runtime, dinp, dq, inp, N);
    qkv_[1].backward(runtime, dinp, dk, inp, N);
  }
  qkv_[2].backward(runtime, dinp, dv, inp, N);
}

}  // namespace vramlab::nn
