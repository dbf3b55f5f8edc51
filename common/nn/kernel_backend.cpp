// KernelKind names and the typed checks in front of every backend's kernels (see
// kernel_backend.h).
#include "common/nn/kernel_backend.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/quantize.h"

namespace vramlab::nn {

namespace {

// The arguments of one op call: each view must have the dtype and the element count the op's
// sizes give it. Products that overflow int64 cannot match any view, so they are reported too.
class Arguments {
 public:
  explicit Arguments(const char* op) : op_(op) {}

  float* f32(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::f32, numel, false);
    return static_cast<float*>(view.data());
  }
  float* f32_or_none(const TensorView& view, const char* name, int64_t numel) const {
    if (view.none()) return nullptr;
    return f32(view, name, numel);
  }
  // A table the op reads the first `numel` elements of (the position table: max_seq ≥ T rows).
  float* f32_prefix_or_none(const TensorView& view, const char* name, int64_t numel) const {
    if (view.none()) return nullptr;
    check(view, name, DType::f32, numel, true);
    return static_cast<float*>(view.data());
  }
  int32_t* i32(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::i32, numel, false);
    return static_cast<int32_t*>(view.data());
  }
  int8_t* i8(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::i8, numel, false);
    return static_cast<int8_t*>(view.data());
  }
  // A scalar argument the op needs in range (a model validates the user's value first).
  void require(bool condition, const std::string& message) const {
    if (!condition) throw InternalError(std::string(op_) + ": " + message);
  }
  void dropout_probability(float p) const {
    std::ostringstream text;
    text.precision(9);
    text << "dropout probability p = " << p << " must be in [0, 1)";
    require(p >= 0.0f && p < 1.0f, text.str());
  }

 private:
  void check(const TensorView& view, const char* name, DType dtype, int64_t numel,
             bool prefix) const {
    const bool count_ok = prefix ? view.numel() >= numel : view.numel() == numel;
    if (view.dtype() == dtype && numel >= 0 && count_ok) return;
    throw InternalError(std::string(op_) + ": " + name + " is a " +
                        std::string(dtype_name(view.dtype())) + " tensor " +
                        memory::format_shape(view.shape()) + " of " + std::to_string(view.numel()) +
                        " elements; the op needs " + (prefix ? "at least " : "") +
                        (numel < 0 ? std::string("an impossible size (negative or overflowing)")
                                   : std::to_string(numel) + " elements") +
                        " of " + std::string(dtype_name(dtype)));
  }

  const char* op_;
};

int64_t product(std::initializer_list<int64_t> sizes) {
  int64_t total = 1;
  for (const int64_t s : sizes)
    if (s < 0 || __builtin_mul_overflow(total, s, &total)) return -1;
  return total;
}

}  // namespace

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::cpu:
      return "cpu";
    case KernelKind::cuda_emulated:
      return "cuda-emulated";
    case KernelKind::cuda:
      return "cuda";
    case KernelKind::meta:
      return "meta";
  }
  return "unknown";
}

KernelKind parse_kernel_kind(std::string_view text) {
  for (const KernelKind kind :
       {KernelKind::cpu, KernelKind::cuda_emulated, KernelKind::cuda, KernelKind::meta})
    if (text == kernel_kind_name(kind)) return kind;
  throw UsageError("unknown kernels '" + std::string(text) +
                   "' (expected cpu, cuda-emulated, cuda or meta)");
}

void KernelBackend::fill_zero(const TensorView& buffer) const {
  if (buffer.numel() > 0) do_fill_zero(buffer.data(), static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::copy_to_device(const TensorView& buffer, const void* host_pointer) const {
  if (buffer.numel() > 0)
    do_copy_to_device(buffer.data(), host_pointer, static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::copy_to_host(void* host_pointer, const TensorView& buffer) const {
  if (buffer.numel() > 0)
    do_copy_to_host(host_pointer, buffer.data(), static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::fill_from_host(const TensorView& buffer, const HostGenerator& generate) const {
  const Arguments a("fill_from_host");
  do_fill_from_host(a.f32(buffer, "buffer", buffer.numel()), buffer.numel(), generate);
}

void KernelBackend::do_fill_from_host(float* device_pointer, int64_t numel,
                                      const HostGenerator& generate) const {
  constexpr int64_t kChunkElements = int64_t{1} << 20;
  std::vector<float> staging(static_cast<size_t>(std::min(numel, kChunkElements)));  // (chunk)
  for (int64_t first = 0; first < numel; first += kChunkElements) {
    const int64_t count = std::min(kChunkElements, numel - first);
    generate(staging.data(), first, count);
    do_copy_to_device(device_pointer + first, staging.data(),
                      static_cast<size_t>(count) * sizeof(float));
  }
}

void KernelBackend::linear_forward(const TensorView& out, const TensorView& inp,
                                   const TensorView& weight, const TensorView& bias, int64_t N,
                                   int64_t C, int64_t OC) const {
  const Arguments a("linear_forward");
  do_linear_forward(a.f32(out, "out", product({N, OC})), a.f32(inp, "inp", product({N, C})),
                    a.f32(weight, "weight", product({OC, C})), a.f32_or_none(bias, "bias", OC), N,
                    C, OC);
}

void KernelBackend::linear_backward(const TensorView& dinp, const TensorView& dweight,
                                    const TensorView& dbias, const TensorView& dout,
                                    const TensorView& inp, const TensorView& weight, int64_t N,
                                    int64_t C, int64_t OC) const {
  const Arguments a("linear_backward");
  do_linear_backward(a.f32_or_none(dinp, "dinp", product({N, C})),
                     a.f32(dweight, "dweight", product({OC, C})), a.f32_or_none(dbias, "dbias", OC),
                     a.f32(dout, "dout", product({N, OC})), a.f32(inp, "inp", product({N, C})),
                     a.f32(weight, "weight", product({OC, C})), N, C, OC);
}

void KernelBackend::layernorm_forward(const TensorView& out, const TensorView& mean,
                                      const TensorView& rstd, const TensorView& inp,
                                      const TensorView& weight, const TensorView& bias, int64_t N,
                                      int64_t C) const {
  const Arguments a("layernorm_forward");
  const int64_t NC = product({N, C});
  do_layernorm_forward(a.f32(out, "out", NC), a.f32(mean, "mean", N), a.f32(rstd, "rstd", N),
                       a.f32(inp, "inp", NC), a.f32(weight, "weight", C), a.f32(bias, "bias", C), N,
                       C);
}

void KernelBackend::layernorm_backward(const TensorView& dinp, const TensorView& dweight,
                                       const TensorView& dbias, const TensorView& dout,
                                       const TensorView& inp, const TensorView& weight,
                                       const TensorView& mean, const TensorView& rstd, int64_t N,
                                       int64_t C) const {
  const Arguments a("layernorm_backward");
  const int64_t NC = product({N, C});
  do_layernorm_backward(a.f32(dinp, "dinp", NC), a.f32(dweight, "dweight", C),
                        a.f32(dbias, "dbias", C), a.f32(dout, "dout", NC), a.f32(inp, "inp", NC),
                        a.f32(weight, "weight", C), a.f32(mean, "mean", N), a.f32(rstd, "rstd", N),
                        N, C);
}

void KernelBackend::rmsnorm_forward(const TensorView& out, const TensorView& rstd,
                                    const TensorView& inp, const TensorView& weight, int64_t N,
                                    int64_t C) const {
  const Arguments a("rmsnorm_forward");
  const int64_t NC = product({N, C});
  do_rmsnorm_forward(a.f32(out, "out", NC), a.f32(rstd, "rstd", N), a.f32(inp, "inp", NC),
                     a.f32(weight, "weight", C), N, C);
}

void KernelBackend::rmsnorm_backward(const TensorView& dinp, const TensorView& dweight,
                                     const TensorView& dout, const TensorView& inp,
                                     const TensorView& weight, const TensorView& rstd, int64_t N,
                                     int64_t C) const {
  const Arguments a("rmsnorm_backward");
  const int64_t NC = product({N, C});
  do_rmsnorm_backward(a.f32(dinp, "dinp", NC), a.f32(dweight, "dweight", C),
                      a.f32(dout, "dout", NC), a.f32(inp, "inp", NC), a.f32(weight, "weight", C),
                      a.f32(rstd, "rstd", N), N, C);
}

void KernelBackend::residual_forward(const TensorView& out, const TensorView& a_in,
                                     const TensorView& b_in) const {
  const Arguments a("residual_forward");
  const int64_t n = out.numel();
  do_residual_forward(a.f32(out, "out", n), a.f32(a_in, "a", n), a.f32(b_in, "b", n), n);
}

void KernelBackend::gelu_forward(const TensorView& out, const TensorView& inp) const {
  const Arguments a("gelu_forward");
  const int64_t n = out.numel();
  do_gelu_forward(a.f32(out, "out", n), a.f32(inp, "inp", n), n);
}

void KernelBackend::gelu_backward(const TensorView& dinp, const TensorView& inp,
                                  const TensorView& dout) const {
  const Arguments a("gelu_backward");
  const int64_t n = dinp.numel();
  do_gelu_backward(a.f32(dinp, "dinp", n), a.f32(inp, "inp", n), a.f32(dout, "dout", n), n);
}

void KernelBackend::swiglu_forward(const TensorView& out, const TensorView& gate,
                                   const TensorView& up) const {
  const Arguments a("swiglu_forward");
  const int64_t n = out.numel();
  do_swiglu_forward(a.f32(out, "out", n), a.f32(gate, "gate", n), a.f32(up, "up", n), n);
}

void KernelBackend::swiglu_backward(const TensorView& dgate, const TensorView& dup,
                                    const TensorView& dout, const TensorView& gate,
                                    const TensorView& up) const {
  const Arguments a("swiglu_backward");
  const int64_t n = dout.numel();
  do_swiglu_backward(a.f32(dgate, "dgate", n), a.f32(dup, "dup", n), a.f32(dout, "dout", n),
                     a.f32(gate, "gate", n), a.f32(up, "up", n), n);
}

void KernelBackend::dropout_forward(const TensorView& out, const TensorView& inp, float p,
                                    uint64_t seed, uint64_t offset) const {
  const Arguments a("dropout_forward");
  a.dropout_probability(p);
  const int64_t n = out.numel();
  do_dropout_forward(a.f32(out, "out", n), a.f32(inp, "inp", n), n, p, seed, offset);
}

void KernelBackend::dropout_backward(const TensorView& dinp, const TensorView& dout, float p,
                                     uint64_t seed, uint64_t offset) const {
  const Arguments a("dropout_backward");
  a.dropout_probability(p);
  const int64_t n = dinp.numel();
  do_dropout_backward(a.f32(dinp, "dinp", n), a.f32(dout, "dout", n), n, p, seed, offset);
}

void KernelBackend::quantize_int8(const TensorView& q, const TensorView& scales,
                                  const TensorView& x, int64_t block) const {
  const Arguments a("quantize_int8");
  a.require(block >= 1, "block = " + std::to_string(block) + " must be >= 1");
  const int64_t n = x.numel();
  do_quantize_int8(a.i8(q, "q", n),
                   a.f32(scales, "scales", kernels::cpu::int8_block_count(n, block)),
                   a.f32(x, "x", n), n, block);
}

void KernelBackend::dequantize_int8(const TensorView& x, const TensorView& q,
                                    const TensorView& scales, int64_t block) const {
  const Arguments a("dequantize_int8");
  a.require(block >= 1, "block = " + std::to_string(block) + " must be >= 1");
  const int64_t n = x.numel();
  do_dequantize_int8(a.f32(x, "x", n), a.i8(q, "q", n),
                     a.f32(scales, "scales", kernels::cpu::int8_block_count(n, block)), n, block);
}

void KernelBackend::rope_forward(const TensorView& out, const TensorView& inp, int64_t B, int64_t T,
                                 int64_t H, int64_t D, double theta) const {
  const Arguments a("rope_forward");
  const int64_t n = product({B, T, H, D});
  do_rope_forward(a.f32(out, "out", n), a.f32(inp, "inp", n), B, T, H, D, theta);
}

void KernelBackend::rope_backward(const TensorView& dinp, const TensorView& dout, int64_t B,
                                  int64_t T, int64_t H, int64_t D, double theta) const {
  const Arguments a("rope_backward");
  const int64_t n = product({B, T, H, D});
  do_rope_backward(a.f32(dinp, "dinp", n), a.f32(dout, "dout", n), B, T, H, D, theta);
}

void KernelBackend::attention_forward(const TensorView& out, const TensorView& preatt,
                                      const TensorView& att, const TensorView& q,
                                      const TensorView& k, const TensorView& v, int64_t B,
                                      int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                      const AttentionDropout& dropout) const {
  const Arguments a("attention_forward");
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const int64_t scores = product({B, H, T, T});
  do_attention_forward(a.f32_or_none(out, "out", q_numel), a.f32(preatt, "preatt", scores),
                       a.f32(att, "att", scores), a.f32(q, "q", q_numel), a.f32(k, "k", kv_numel),
                       a.f32(v, "v", kv_numel), B, T, H, Hkv, D, dropout);
}

void KernelBackend::attention_backward(const TensorView& dq, const TensorView& dk,
                                       const TensorView& dv, const TensorView& dpreatt,
                                       const TensorView& dout, const TensorView& q,
                                       const TensorView& k, const TensorView& v,
                                       const TensorView& att, int64_t B, int64_t T, int64_t H,
                                       int64_t Hkv, int64_t D,
                                       const AttentionDropout& dropout) const {
  const Arguments a("attention_backward");
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const int64_t scores = product({B, H, T, T});
  do_attention_backward(a.f32(dq, "dq", q_numel), a.f32(dk, "dk", kv_numel),
                        a.f32(dv, "dv", kv_numel), a.f32(dpreatt, "dpreatt", scores),
                        a.f32(dout, "dout", q_numel), a.f32(q, "q", q_numel),
                        a.f32(k, "k", kv_numel), a.f32(v, "v", kv_numel), a.f32(att, "att", scores),
                        B, T, H, Hkv, D, dropout);
}

void KernelBackend::embedding_forward(const TensorView& out, const TensorView& tokens,
                                      const TensorView& wte, const TensorView& wpe, int64_t B,
                                      int64_t T, int64_t C, int64_t V) const {
  const Arguments a("embedding_forward");
  do_embedding_forward(a.f32(out, "out", product({B, T, C})),
                       a.i32(tokens, "tokens", product({B, T})), a.f32(wte, "wte", product({V, C})),
                       a.f32_prefix_or_none(wpe, "wpe", product({T, C})), B, T, C, V);
}

void KernelBackend::embedding_backward(const TensorView& dwte, const TensorView& dwpe,
                                       const TensorView& dout, const TensorView& tokens, int64_t B,
                                       int64_t T, int64_t C, int64_t V) const {
  const Arguments a("embedding_backward");
  do_embedding_backward(a.f32(dwte, "dwte", product({V, C})),
                        a.f32_prefix_or_none(dwpe, "dwpe", product({T, C})),
                        a.f32(dout, "dout", product({B, T, C})),
                        a.i32(tokens, "tokens", product({B, T})), B, T, C, V);
}

void KernelBackend::cross_entropy_forward(const TensorView& losses, const TensorView& logsumexp,
                                          const TensorView& probs, const TensorView& logits,
                                          const TensorView& targets, int64_t N, int64_t V) const {
  const Arguments a("cross_entropy_forward");
  const int64_t NV = product({N, V});
  do_cross_entropy_forward(a.f32(losses, "losses", N), a.f32(logsumexp, "logsumexp", N),
                           a.f32(probs, "probs", NV), a.f32(logits, "logits", NV),
                           a.i32(targets, "targets", N), N, V);
}

void KernelBackend::cross_entropy_dlogits(const TensorView& dlogits, const TensorView& probs,
                                          const TensorView& targets, int64_t N, int64_t V,
                                          float scale) const {
  const Arguments a("cross_entropy_dlogits");
  const int64_t NV = product({N, V});
  do_cross_entropy_dlogits(a.f32(dlogits, "dlogits", NV), a.f32(probs, "probs", NV),
                           a.i32(targets, "targets", N), N, V, scale);
}

double KernelBackend::sum(const TensorView& x) const {
  const Arguments a("sum");
  return do_sum(a.f32(x, "x", x.numel()), x.numel());
}

void KernelBackend::adamw_update(const TensorView& param, const TensorView& grad,
                                 const TensorView& m, const TensorView& v,
                                 const kernels::cpu::AdamWHyperparameters& hp, int64_t step) const {
  const Arguments a("adamw_update");
  const int64_t n = param.numel();
  do_adamw_update(a.f32(param, "param", n), a.f32(grad, "grad", n), a.f32(m, "exp_avg", n),
                  a.f32(v, "exp_avg_sq", n), n, hp, step);
}

void KernelBackend::sgd_update(const TensorView& param, const TensorView& grad,
                               const TensorView& momentum_buffer, float learning_rate,
                               float momentum, float weight_decay, bool nesterov) const {
  const Arguments a("sgd_update");
  const int64_t n = param.numel();
  do_sgd_update(a.f32(param, "param", n), a.f32(grad, "grad", n),
                a.f32_or_none(momentum_buffer, "momentum_buffer", n), n, learning_rate, momentum,
                weight_decay, nesterov);
}

}  // namespace vramlab::nn
