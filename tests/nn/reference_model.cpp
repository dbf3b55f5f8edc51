// Double-precision reference forward of the DecoderModel (see reference_model.h).
#include "tests/nn/reference_model.h"

#include <stdexcept>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/rope.h"

namespace vramlab::nn::testing {

namespace {

namespace k = vramlab::kernels::cpu;
using Vec = std::vector<double>;

struct Params {
  std::map<std::string, int64_t> offset;
  const std::vector<double>& values;
  [[nodiscard]] bool has(const std::string& name) const { return offset.count(name) > 0; }
  [[nodiscard]] const double* at(const std::string& name) const {
    const auto it = offset.find(name);
    if (it == offset.end()) throw std::logic_error("reference model: no parameter " + name);
    return values.data() + it->second;
  }
};

// out (N, C) = norm(inp) with LayerNorm when PREFIX.bias exists, else RMSNorm.
Vec norm(const Params& p, const std::string& prefix, const Vec& inp, int64_t N, int64_t C) {
  Vec out(static_cast<size_t>(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
  if (p.has(prefix + ".bias")) {
    k::layernorm_forward_reference<double>(out.data(), mean.data(), rstd.data(), inp.data(),
                                           p.at(prefix + ".weight"), p.at(prefix + ".bias"), N, C);
  } else {
    k::rmsnorm_forward_reference<double>(out.data(), rstd.data(), inp.data(),
                                         p.at(prefix + ".weight"), N, C);
  }
  return out;
}

// out (N, OC) = inp (N, C) · W[rows]ᵀ + b[rows].
Vec linear(const Params& p, const std::string& weight, const std::string& bias, const Vec& inp,
           int64_t N, int64_t C, int64_t OC, int64_t row_begin = 0) {
  Vec out(static_cast<size_t>(N * OC));
  const double* b = p.has(bias) ? p.at(bias) + row_begin : nullptr;
  k::matmul_forward_reference<double>(out.data(), inp.data(), p.at(weight) + row_begin * C, b, N, C,
                                      OC);
  return out;
}

Vec add(const Vec& a, const Vec& b) {
  Vec out(a.size());
  k::residual_forward_reference<double>(out.data(), a.data(), b.data(),
                                        static_cast<int64_t>(a.size()));
  return out;
}

}  // namespace

double reference_loss(const ModelConfig& c, const std::vector<double>& values,
                      const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                      int64_t B, int64_t T) {
  Params p{{}, values};
  int64_t offset = 0;
  for (const ParameterSpec& spec : c.parameters()) {
    p.offset[spec.name] = offset;
    offset += spec.numel();
  }
  const bool gpt2 = c.family == ModelFamily::gpt2;
  const int64_t N = B * T, C = c.hidden, H = c.heads, Hkv = c.kv_heads, D = c.head_dim();
  const int64_t kvC = c.kv_hidden(), F = c.ffn_hidden, V = c.vocab;
  const double theta = c.rope_theta;
  const std::string wte = gpt2 ? "wte" : "embed";
  Vec x(static_cast<size_t>(N * C));  // (B, T, C)
  k::embedding_forward_reference<double>(x.data(), tokens.data(), p.at(wte),
                                         p.has("wpe") ? p.at("wpe") : nullptr, B, T, C, V);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    const Vec ln1 = norm(p, b + (gpt2 ? "ln1" : "norm1"), x, N, C);
    Vec q, kk, v;
    if (gpt2) {
      q = linear(p, b + "attn.qkv.weight", b + "attn.qkv.bias", ln1, N, C, C, 0);
      kk = linear(p, b + "attn.qkv.weight", b + "attn.qkv.bias", ln1, N, C, C, C);
      v = linear(p, b + "attn.qkv.weight", b + "attn.qkv.bias", ln1, N, C, C, 2 * C);
    } else {
      const Vec q_raw = linear(p, b + "attn.q.weight", b + "attn.q.bias", ln1, N, C, C);
      const Vec k_raw = linear(p, b + "attn.k.weight", b + "attn.k.bias", ln1, N, C, kvC);
      v = linear(p, b + "attn.v.weight", b + "attn.v.bias", ln1, N, C, kvC);
      q.assign(q_raw.size(), 0.0);
      kk.assign(k_raw.size(), 0.0);
      k::rope_forward_reference<double>(q.data(), q_raw.data(), B, T, H, D, theta);
      k::rope_forward_reference<double>(kk.data(), k_raw.data(), B, T, Hkv, D, theta);
    }
    Vec atty(static_cast<size_t>(N * C)), preatt(static_cast<size_t>(B * H * T * T)),
        att(static_cast<size_t>(B * H * T * T));
    k::attention_forward_reference<double>(atty.data(), preatt.data(), att.data(), q.data(),
                                           kk.data(), v.data(), B, T, H, Hkv, D);
    const std::string proj = b + (gpt2 ? "attn.proj" : "attn.o");
    const Vec residual2 = add(x, linear(p, proj + ".weight", proj + ".bias", atty, N, C, C));
    const Vec ln2 = norm(p, b + (gpt2 ? "ln2" : "norm2"), residual2, N, C);
    Vec mlp_out;
    if (c.mlp == MlpKind::gelu) {
      const Vec fch = linear(p, b + "mlp.fc.weight", b + "mlp.fc.bias", ln2, N, C, F);
      Vec fch_gelu(fch.size());
      k::gelu_forward_reference<double>(fch_gelu.data(), fch.data(), N * F);
      mlp_out = linear(p, b + "mlp.proj.weight", b + "mlp.proj.bias", fch_gelu, N, F, C);
    } else {
      const Vec gate = linear(p, b + "mlp.gate.weight", b + "mlp.gate.bias", ln2, N, C, F);
      const Vec up = linear(p, b + "mlp.up.weight", b + "mlp.up.bias", ln2, N, C, F);
      Vec sw(gate.size());
      k::swiglu_forward_reference<double>(sw.data(), gate.data(), up.data(), N * F);
      mlp_out = linear(p, b + "mlp.down.weight", b + "mlp.down.bias", sw, N, F, C);
    }
    x = add(residual2, mlp_out);
  }
  const Vec lnf = norm(p, gpt2 ? "lnf" : "normf", x, N, C);
  const Vec logits = linear(p, c.tied_embeddings ? wte : "lm_head.weight", "", lnf, N, C, V);
  Vec losses(static_cast<size_t>(N)), lse(static_cast<size_t>(N));
  k::cross_entropy_forward_reference<double>(losses.data(), lse.data(), nullptr, logits.data(),
                                             targets.data(), N, V, V);
  double total = 0.0;
  for (const double loss : losses) total += loss;
  return total / static_cast<double>(N);
}

}  // namespace vramlab::nn::testing
