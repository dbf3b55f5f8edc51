// The CPU kernel backend: kernels/cpu and parallel_linear on host memory (see
// cpu_kernel_backend.h).
#include "common/nn/cpu_kernel_backend.h"

#include <cstring>
#include <string>

#include "common/platform/errors.h"

#include "common/nn/parallel_linear.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/rope.h"

namespace vramlab::nn {

namespace {
void require_f32(OpTypes types, const char* op) {
  if (types.a != DType::f32 || types.g != DType::f32)
    throw InternalError(std::string(op) + ": " + std::string(dtype_name(types.a)) + "/" +
                        std::string(dtype_name(types.g)) + " kernels are not implemented yet");
}
}  // namespace

void CpuKernelBackend::do_fill_zero(void* device_pointer, std::size_t bytes) const {
  auto* first = static_cast<unsigned char*>(device_pointer);
  const auto total = static_cast<int64_t>(bytes);
  constexpr int64_t kChunkBytes = int64_t{1} << 18;
  const int64_t chunks = (total + kChunkBytes - 1) / kChunkBytes;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunkBytes;
    const int64_t end = begin + kChunkBytes < total ? begin + kChunkBytes : total;
    std::memset(first + begin, 0, static_cast<size_t>(end - begin));
  }
}

void CpuKernelBackend::do_copy_to_device(void* device_pointer, const void* host_pointer,
                                         std::size_t bytes) const {
  if (bytes != 0) std::memcpy(device_pointer, host_pointer, bytes);
}

void CpuKernelBackend::do_copy_to_host(void* host_pointer, const void* device_pointer,
                                       std::size_t bytes) const {
  if (bytes != 0) std::memcpy(host_pointer, device_pointer, bytes);
}

void CpuKernelBackend::f32_linear_forward(float* out, const float* inp, const float* weight,
                                         const float* bias, int64_t N, int64_t C,
                                         int64_t OC) const {
  parallel_linear_forward(out, inp, weight, bias, N, C, OC);
}

void CpuKernelBackend::f32_linear_backward(float* dinp, float* dweight, float* dbias,
                                          const float* dout, const float* inp, const float* weight,
                                          int64_t N, int64_t C, int64_t OC) const {
  parallel_linear_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuKernelBackend::f32_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                            const float* weight, const float* bias, int64_t N,
                                            int64_t C) const {
  kernels::cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
}

void CpuKernelBackend::f32_layernorm_backward(float* dinp, float* dweight, float* dbias,
                                             const float* dout, const float* inp,
                                             const float* weight, const float* mean,
                                             const float* rstd, int64_t N, int64_t C) const {
  kernels::cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void CpuKernelBackend::f32_rmsnorm_forward(float* out, float* rstd, const float* inp,
                                          const float* weight, int64_t N, int64_t C) const {
  kernels::cpu::rmsnorm_forward(out, rstd, inp, weight, N, C);
}

void CpuKernelBackend::f32_rmsnorm_backward(float* dinp, float* dweight, const float* dout,
                                           const float* inp, const float* weight, const float* rstd,
                                           int64_t N, int64_t C) const {
  kernels::cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
}

void CpuKernelBackend::f32_residual_forward(float* out, const float* a, const float* b,
                                           int64_t n) const {
  kernels::cpu::residual_forward(out, a, b, n);
}

void CpuKernelBackend::f32_gelu_forward(float* out, const float* inp, int64_t n) const {
  kernels::cpu::gelu_forward(out, inp, n);
}

void CpuKernelBackend::f32_gelu_backward(float* dinp, const float* inp, const float* dout,
                                        int64_t n) const {
  kernels::cpu::gelu_backward(dinp, inp, dout, n);
}

void CpuKernelBackend::f32_swiglu_forward(float* out, const float* gate, const float* up,
                                         int64_t n) const {
  kernels::cpu::swiglu_forward(out, gate, up, n);
}

void CpuKernelBackend::f32_swiglu_backward(float* dgate, float* dup, const float* dout,
                                          const float* gate, const float* up, int64_t n) const {
  kernels::cpu::swiglu_backward(dgate, dup, dout, gate, up, n);
}

void CpuKernelBackend::f32_rope_forward(float* out, const float* inp, int64_t B, int64_t T,
                                       int64_t H, int64_t D, double theta) const {
  kernels::cpu::rope_forward(out, inp, B, T, H, D, theta);
}

void CpuKernelBackend::f32_rope_backward(float* dinp, const float* dout, int64_t B, int64_t T,
                                        int64_t H, int64_t D, double theta) const {
  kernels::cpu::rope_backward(dinp, dout, B, T, H, D, theta);
}

void CpuKernelBackend::f32_dropout_forward(float* out, const float* inp, int64_t n, float p,
                                          uint64_t seed, uint64_t offset) const {
  kernels::cpu::dropout_forward(out, inp, n, p, seed, offset);
}

void CpuKernelBackend::f32_dropout_backward(float* dinp, const float* dout, int64_t n, float p,
                                           uint64_t seed, uint64_t offset) const {
  kernels::cpu::dropout_backward(dinp, dout, n, p, seed, offset);
}

void CpuKernelBackend::f32_quantize_int8(int8_t* q, float* scales, const float* x, int64_t n,
                                        int64_t block) const {
  kernels::cpu::quantize_int8(q, scales, x, n, block);
}

void CpuKernelBackend::f32_dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n,
                                          int64_t block) const {
  kernels::cpu::dequantize_int8(x, q, scales, n, block);
}

void CpuKernelBackend::f32_attention_forward(float* out, float* preatt, float* att, const float* q,
                                            const float* k, const float* v, int64_t B, int64_t T,
                                            int64_t H, int64_t Hkv, int64_t D,
                                            const AttentionDropout& dropout) const {
  kernels::cpu::attention_forward(out, preatt, att, q, k, v, B, T, H, Hkv, D, dropout);
}

void CpuKernelBackend::f32_attention_backward(float* dq, float* dk, float* dv, float* dpreatt,
                                             const float* dout, const float* q, const float* k,
                                             const float* v, const float* att, int64_t B, int64_t T,
                                             int64_t H, int64_t Hkv, int64_t D,
                                             const AttentionDropout& dropout) const {
  kernels::cpu::attention_backward(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D,
                                   dropout);
}

void CpuKernelBackend::f32_embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                            const float* wpe, int64_t B, int64_t T, int64_t C,
                                            int64_t V) const {
  kernels::cpu::embedding_forward(out, tokens, wte, wpe, B, T, C, V);
}

void CpuKernelBackend::f32_embedding_backward(float* dwte, float* dwpe, const float* dout,
                                             const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                             int64_t V) const {
  kernels::cpu::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V);
}

void CpuKernelBackend::f32_cross_entropy_forward(float* losses, float* logsumexp, float* probs,
                                                const float* logits, const int32_t* targets,
                                                int64_t N, int64_t V) const {
  kernels::cpu::cross_entropy_forward(losses, logsumexp, probs, logits, targets, N, V, V);
}

void CpuKernelBackend::f32_cross_entropy_dlogits(float* dlogits, const float* probs,
                                                const int32_t* targets, int64_t N, int64_t V,
                                                float scale) const {
  kernels::cpu::cross_entropy_dlogits(dlogits, probs, targets, N, V, V, scale);
}

double CpuKernelBackend::f32_sum(const float* x, int64_t n) const {
  return kernels::cpu::sum(x, n);
}

void CpuKernelBackend::f32_adamw_update(float* param, const float* grad, float* m, float* v,
                                       int64_t n, const kernels::cpu::AdamWHyperparameters& hp,
                                       int64_t step) const {
  kernels::cpu::adamw_update(param, grad, m, v, n, hp, step);
}

void CpuKernelBackend::f32_sgd_update(float* param, const float* grad, float* momentum_buffer,
                                     int64_t n, float learning_rate, float momentum,
                                     float weight_decay, bool nesterov) const {
  kernels::cpu::sgd_update(param, grad, momentum_buffer, n, learning_rate, momentum, weight_decay,
                           nesterov);
}

void CpuKernelBackend::do_linear_forward(OpTypes types, void* out, const void* inp, const void* weight, const void* bias, int64_t N, int64_t C, int64_t OC) const {
  require_f32(types, "linear_forward");
  f32_linear_forward(static_cast<float*>(out), static_cast<const float*>(inp), static_cast<const float*>(weight), static_cast<const float*>(bias), N, C, OC);
}

void CpuKernelBackend::do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight, int64_t N, int64_t C, int64_t OC) const {
  require_f32(types, "linear_backward");
  f32_linear_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<float*>(dbias), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), N, C, OC);
}

void CpuKernelBackend::do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias, int64_t N, int64_t C) const {
  require_f32(types, "layernorm_forward");
  f32_layernorm_forward(static_cast<float*>(out), mean, rstd, static_cast<const float*>(inp), static_cast<const float*>(weight), static_cast<const float*>(bias), N, C);
}

void CpuKernelBackend::do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd, int64_t N, int64_t C) const {
  require_f32(types, "layernorm_backward");
  f32_layernorm_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<float*>(dbias), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), mean, rstd, N, C);
}

void CpuKernelBackend::do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp, const void* weight, int64_t N, int64_t C) const {
  require_f32(types, "rmsnorm_forward");
  f32_rmsnorm_forward(static_cast<float*>(out), rstd, static_cast<const float*>(inp), static_cast<const float*>(weight), N, C);
}

void CpuKernelBackend::do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight, const void* dout, const void* inp, const void* weight, const float* rstd, int64_t N, int64_t C) const {
  require_f32(types, "rmsnorm_backward");
  f32_rmsnorm_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), rstd, N, C);
}

void CpuKernelBackend::do_residual_forward(OpTypes types, void* out, const void* a, const void* b, int64_t n) const {
  require_f32(types, "residual_forward");
  f32_residual_forward(static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b), n);
}

void CpuKernelBackend::do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const {
  require_f32(types, "gelu_forward");
  f32_gelu_forward(static_cast<float*>(out), static_cast<const float*>(inp), n);
}

void CpuKernelBackend::do_gelu_backward(OpTypes types, void* dinp, const void* inp, const void* dout, int64_t n) const {
  require_f32(types, "gelu_backward");
  f32_gelu_backward(static_cast<float*>(dinp), static_cast<const float*>(inp), static_cast<const float*>(dout), n);
}

void CpuKernelBackend::do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up, int64_t n) const {
  require_f32(types, "swiglu_forward");
  f32_swiglu_forward(static_cast<float*>(out), static_cast<const float*>(gate), static_cast<const float*>(up), n);
}

void CpuKernelBackend::do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout, const void* gate, const void* up, int64_t n) const {
  require_f32(types, "swiglu_backward");
  f32_swiglu_backward(static_cast<float*>(dgate), static_cast<float*>(dup), static_cast<const float*>(dout), static_cast<const float*>(gate), static_cast<const float*>(up), n);
}

void CpuKernelBackend::do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n, float p, uint64_t seed, uint64_t offset) const {
  require_f32(types, "dropout_forward");
  f32_dropout_forward(static_cast<float*>(out), static_cast<const float*>(inp), n, p, seed, offset);
}

void CpuKernelBackend::do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n, float p, uint64_t seed, uint64_t offset) const {
  require_f32(types, "dropout_backward");
  f32_dropout_backward(static_cast<float*>(dinp), static_cast<const float*>(dout), n, p, seed, offset);
}

void CpuKernelBackend::do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x, int64_t n, int64_t block) const {
  require_f32(types, "quantize_int8");
  f32_quantize_int8(q, scales, static_cast<const float*>(x), n, block);
}

void CpuKernelBackend::do_dequantize_int8(OpTypes types, void* x, const int8_t* q, const float* scales, int64_t n, int64_t block) const {
  require_f32(types, "dequantize_int8");
  f32_dequantize_int8(static_cast<float*>(x), q, scales, n, block);
}

void CpuKernelBackend::do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B, int64_t T, int64_t H, int64_t D, double theta) const {
  require_f32(types, "rope_forward");
  f32_rope_forward(static_cast<float*>(out), static_cast<const float*>(inp), B, T, H, D, theta);
}

void CpuKernelBackend::do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B, int64_t T, int64_t H, int64_t D, double theta) const {
  require_f32(types, "rope_backward");
  f32_rope_backward(static_cast<float*>(dinp), static_cast<const float*>(dout), B, T, H, D, theta);
}

void CpuKernelBackend::do_attention_forward(OpTypes types, void* out, void* preatt, void* att, const void* q, const void* k, const void* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D, const AttentionDropout& dropout) const {
  require_f32(types, "attention_forward");
  f32_attention_forward(static_cast<float*>(out), static_cast<float*>(preatt), static_cast<float*>(att), static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v), B, T, H, Hkv, D, dropout);
}

void CpuKernelBackend::do_attention_backward(OpTypes types, void* dq, void* dk, void* dv, void* dpreatt, const void* dout, const void* q, const void* k, const void* v, const void* att, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D, const AttentionDropout& dropout) const {
  require_f32(types, "attention_backward");
  f32_attention_backward(static_cast<float*>(dq), static_cast<float*>(dk), static_cast<float*>(dv), static_cast<float*>(dpreatt), static_cast<const float*>(dout), static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v), static_cast<const float*>(att), B, T, H, Hkv, D, dropout);
}

void CpuKernelBackend::do_embedding_forward(OpTypes types, void* out, const int32_t* tokens, const void* wte, const void* wpe, int64_t B, int64_t T, int64_t C, int64_t V) const {
  require_f32(types, "embedding_forward");
  f32_embedding_forward(static_cast<float*>(out), tokens, static_cast<const float*>(wte), static_cast<const float*>(wpe), B, T, C, V);
}

void CpuKernelBackend::do_embedding_backward(OpTypes types, void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int64_t B, int64_t T, int64_t C, int64_t V) const {
  require_f32(types, "embedding_backward");
  f32_embedding_backward(static_cast<float*>(dwte), static_cast<float*>(dwpe), static_cast<const float*>(dout), tokens, B, T, C, V);
}

void CpuKernelBackend::do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp, void* probs, const void* logits, const int32_t* targets, int64_t N, int64_t V) const {
  require_f32(types, "cross_entropy_forward");
  f32_cross_entropy_forward(losses, logsumexp, static_cast<float*>(probs), static_cast<const float*>(logits), targets, N, V);
}

void CpuKernelBackend::do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs, const int32_t* targets, int64_t N, int64_t V, float scale) const {
  require_f32(types, "cross_entropy_dlogits");
  f32_cross_entropy_dlogits(static_cast<float*>(dlogits), static_cast<const float*>(probs), targets, N, V, scale);
}

double CpuKernelBackend::do_sum(OpTypes types, const void* x, int64_t n) const {
  require_f32(types, "sum");
  return f32_sum(static_cast<const float*>(x), n);
}

void CpuKernelBackend::do_cast(void* out, DType out_type, const void* inp, DType inp_type,
                       int64_t n) const {
  if (out_type != DType::f32 || inp_type != DType::f32)
    throw InternalError("cast: only f32 is implemented yet");
  if (n > 0) std::memcpy(out, inp, static_cast<size_t>(n) * sizeof(float));
}

KernelBackend::GradientCheck CpuKernelBackend::do_check_gradients(const void*, DType, int64_t,
                                                       float) const {
  throw InternalError("check_gradients: not implemented yet");
}

void CpuKernelBackend::do_adamw_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                               void* v, void* working, int64_t n,
                               const kernels::cpu::AdamWHyperparameters& hp, int64_t step,
                               float grad_multiplier) const {
  if (types.param != DType::f32 || types.grad != DType::f32 || types.state != DType::f32 ||
      working != nullptr || grad_multiplier != 1.0f)
    throw InternalError("adamw_update: only f32 without a master copy is implemented yet");
  f32_adamw_update(static_cast<float*>(param), static_cast<const float*>(grad),
                   static_cast<float*>(m), static_cast<float*>(v), n, hp, step);
}

void CpuKernelBackend::do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                             void* momentum_buffer, void* working, int64_t n, float learning_rate,
                             float momentum, float weight_decay, bool nesterov,
                             float grad_multiplier) const {
  if (types.param != DType::f32 || types.grad != DType::f32 || types.state != DType::f32 ||
      working != nullptr || grad_multiplier != 1.0f)
    throw InternalError("sgd_update: only f32 without a master copy is implemented yet");
  f32_sgd_update(static_cast<float*>(param), static_cast<const float*>(grad),
                 static_cast<float*>(momentum_buffer), n, learning_rate, momentum, weight_decay,
                 nesterov);
}

}  // namespace vramlab::nn
