// The CPU kernel backend: kernels/cpu and parallel_linear on host memory (see
// cpu_kernel_backend.h).
#include "common/nn/cpu_kernel_backend.h"

#include <cstring>

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

void CpuKernelBackend::do_linear_forward(float* out, const float* inp, const float* weight,
                                         const float* bias, int64_t N, int64_t C,
                                         int64_t OC) const {
  parallel_linear_forward(out, inp, weight, bias, N, C, OC);
}

void CpuKernelBackend::do_linear_backward(float* dinp, float* dweight, float* dbias,
                                          const float* dout, const float* inp, const float* weight,
                                          int64_t N, int64_t C, int64_t OC) const {
  parallel_linear_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuKernelBackend::do_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                            const float* weight, const float* bias, int64_t N,
                                            int64_t C) const {
  kernels::cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
}

void CpuKernelBackend::do_layernorm_backward(float* dinp, float* dweight, float* dbias,
                                             const float* dout, const float* inp,
                                             const float* weight, const float* mean,
                                             const float* rstd, int64_t N, int64_t C) const {
  kernels::cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void CpuKernelBackend::do_rmsnorm_forward(float* out, float* rstd, const float* inp,
                                          const float* weight, int64_t N, int64_t C) const {
  kernels::cpu::rmsnorm_forward(out, rstd, inp, weight, N, C);
}

void CpuKernelBackend::do_rmsnorm_backward(float* dinp, float* dweight, const float* dout,
                                           const float* inp, const float* weight, const float* rstd,
                                           int64_t N, int64_t C) const {
  kernels::cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
}

void CpuKernelBackend::do_residual_forward(float* out, const float* a, const float* b,
                                           int64_t n) const {
  kernels::cpu::residual_forward(out, a, b, n);
}

void CpuKernelBackend::do_gelu_forward(float* out, const float* inp, int64_t n) const {
  kernels::cpu::gelu_forward(out, inp, n);
}

void CpuKernelBackend::do_gelu_backward(float* dinp, const float* inp, const float* dout,
                                        int64_t n) const {
  kernels::cpu::gelu_backward(dinp, inp, dout, n);
}

void CpuKernelBackend::do_swiglu_forward(float* out, const float* gate, const float* up,
                                         int64_t n) const {
  kernels::cpu::swiglu_forward(out, gate, up, n);
}

void CpuKernelBackend::do_swiglu_backward(float* dgate, float* dup, const float* dout,
                                          const float* gate, const float* up, int64_t n) const {
  kernels::cpu::swiglu_backward(dgate, dup, dout, gate, up, n);
}

void CpuKernelBackend::do_rope_forward(float* out, const float* inp, int64_t B, int64_t T,
                                       int64_t H, int64_t D, double theta) const {
  kernels::cpu::rope_forward(out, inp, B, T, H, D, theta);
}

void CpuKernelBackend::do_rope_backward(float* dinp, const float* dout, int64_t B, int64_t T,
                                        int64_t H, int64_t D, double theta) const {
  kernels::cpu::rope_backward(dinp, dout, B, T, H, D, theta);
}

void CpuKernelBackend::do_dropout_forward(float* out, const float* inp, int64_t n, float p,
                                          uint64_t seed, uint64_t offset) const {
  kernels::cpu::dropout_forward(out, inp, n, p, seed, offset);
}

void CpuKernelBackend::do_dropout_backward(float* dinp, const float* dout, int64_t n, float p,
                                           uint64_t seed, uint64_t offset) const {
  kernels::cpu::dropout_backward(dinp, dout, n, p, seed, offset);
}

void CpuKernelBackend::do_quantize_int8(int8_t* q, float* scales, const float* x, int64_t n,
                                        int64_t block) const {
  kernels::cpu::quantize_int8(q, scales, x, n, block);
}

void CpuKernelBackend::do_dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n,
                                          int64_t block) const {
  kernels::cpu::dequantize_int8(x, q, scales, n, block);
}

void CpuKernelBackend::do_attention_forward(float* out, float* preatt, float* att, const float* q,
                                            const float* k, const float* v, int64_t B, int64_t T,
                                            int64_t H, int64_t Hkv, int64_t D,
                                            const AttentionDropout& dropout) const {
  kernels::cpu::attention_forward(out, preatt, att, q, k, v, B, T, H, Hkv, D, dropout);
}

void CpuKernelBackend::do_attention_backward(float* dq, float* dk, float* dv, float* dpreatt,
                                             const float* dout, const float* q, const float* k,
                                             const float* v, const float* att, int64_t B, int64_t T,
                                             int64_t H, int64_t Hkv, int64_t D,
                                             const AttentionDropout& dropout) const {
  kernels::cpu::attention_backward(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D,
                                   dropout);
}

void CpuKernelBackend::do_embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                            const float* wpe, int64_t B, int64_t T, int64_t C,
                                            int64_t V) const {
  kernels::cpu::embedding_forward(out, tokens, wte, wpe, B, T, C, V);
}

void CpuKernelBackend::do_embedding_backward(float* dwte, float* dwpe, const float* dout,
                                             const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                             int64_t V) const {
  kernels::cpu::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V);
}

void CpuKernelBackend::do_cross_entropy_forward(float* losses, float* logsumexp, float* probs,
                                                const float* logits, const int32_t* targets,
                                                int64_t N, int64_t V) const {
  kernels::cpu::cross_entropy_forward(losses, logsumexp, probs, logits, targets, N, V, V);
}

void CpuKernelBackend::do_cross_entropy_dlogits(float* dlogits, const float* probs,
                                                const int32_t* targets, int64_t N, int64_t V,
                                                float scale) const {
  kernels::cpu::cross_entropy_dlogits(dlogits, probs, targets, N, V, V, scale);
}

double CpuKernelBackend::do_sum(const float* x, int64_t n) const {
  return kernels::cpu::sum(x, n);
}

void CpuKernelBackend::do_adamw_update(float* param, const float* grad, float* m, float* v,
                                       int64_t n, const kernels::cpu::AdamWHyperparameters& hp,
                                       int64_t step) const {
  kernels::cpu::adamw_update(param, grad, m, v, n, hp, step);
}

void CpuKernelBackend::do_sgd_update(float* param, const float* grad, float* momentum_buffer,
                                     int64_t n, float learning_rate, float momentum,
                                     float weight_decay, bool nesterov) const {
  kernels::cpu::sgd_update(param, grad, momentum_buffer, n, learning_rate, momentum, weight_decay,
                           nesterov);
}

}  // namespace vramlab::nn
