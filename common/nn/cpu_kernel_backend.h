/// \file
/// \brief CpuKernelBackend: the KernelBackend over kernels/cpu and the OpenMP-split GEMMs of
/// parallel_linear.h, on host memory (what the cpu and sim devices run by default).
#pragma once

#include "common/nn/kernel_backend.h"

namespace vramlab::nn {

/// The CPU kernels; "device" memory is host memory, so memory movement is memcpy/memset.
class CpuKernelBackend final : public KernelBackend {
 public:
  /// \return KernelKind::cpu.
  [[nodiscard]] KernelKind kind() const override { return KernelKind::cpu; }
  /// \copydoc KernelBackend::fill_zero
  void fill_zero(void* device_pointer, std::size_t bytes) const override;
  /// \copydoc KernelBackend::copy_to_device
  void copy_to_device(void* device_pointer, const void* host_pointer,
                      std::size_t bytes) const override;
  /// \copydoc KernelBackend::copy_to_host
  void copy_to_host(void* host_pointer, const void* device_pointer,
                    std::size_t bytes) const override;
  /// \copydoc KernelBackend::linear_forward
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t N, int64_t C, int64_t OC) const override;
  /// \copydoc KernelBackend::linear_backward
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t N, int64_t C,
                       int64_t OC) const override;
  /// \copydoc KernelBackend::layernorm_forward
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N,
                         int64_t C) const override;
  /// \copydoc KernelBackend::layernorm_backward
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int64_t C) const override;
  /// \copydoc KernelBackend::rmsnorm_forward
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                       int64_t C) const override;
  /// \copydoc KernelBackend::rmsnorm_backward
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, int64_t N,
                        int64_t C) const override;
  /// \copydoc KernelBackend::residual_forward
  void residual_forward(float* out, const float* a, const float* b, int64_t n) const override;
  /// \copydoc KernelBackend::gelu_forward
  void gelu_forward(float* out, const float* inp, int64_t n) const override;
  /// \copydoc KernelBackend::gelu_backward
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) const override;
  /// \copydoc KernelBackend::swiglu_forward
  void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const override;
  /// \copydoc KernelBackend::swiglu_backward
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, int64_t n) const override;
  /// \copydoc KernelBackend::rope_forward
  void rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                    double theta) const override;
  /// \copydoc KernelBackend::rope_backward
  void rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                     double theta) const override;
  /// \copydoc KernelBackend::attention_forward
  void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                         const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                         int64_t D) const override;
  /// \copydoc KernelBackend::attention_backward
  void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                          const float* q, const float* k, const float* v, const float* att,
                          int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D) const override;
  /// \copydoc KernelBackend::embedding_forward
  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int64_t B, int64_t T, int64_t C, int64_t V) const override;
  /// \copydoc KernelBackend::embedding_backward
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int64_t B, int64_t T, int64_t C, int64_t V) const override;
  /// \copydoc KernelBackend::cross_entropy_forward
  void cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                             const int32_t* targets, int64_t N, int64_t V) const override;
  /// \copydoc KernelBackend::cross_entropy_dlogits
  void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets, int64_t N,
                             int64_t V, float scale) const override;
  /// \copydoc KernelBackend::sum
  [[nodiscard]] double sum(const float* x, int64_t n) const override;
  /// \copydoc KernelBackend::adamw_update
  void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                    const kernels::cpu::AdamWHyperparameters& hp, int64_t step) const override;
  /// \copydoc KernelBackend::sgd_update
  void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                  float learning_rate, float momentum, float weight_decay,
                  bool nesterov) const override;
};

}  // namespace vramlab::nn
