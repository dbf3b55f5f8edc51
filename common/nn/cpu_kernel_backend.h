/// \file
/// \brief CpuKernelBackend: the KernelBackend over kernels/cpu and the OpenMP-split GEMMs of
/// parallel_linear.h, on host memory (what the cpu and sim devices run by default). Every op runs
/// in f32, bf16 and f16 storage (kernel_backend.h, "Storage types"); the 16-bit GEMMs are
/// low_precision_linear.h.
#pragma once

#include "common/nn/kernel_backend.h"

namespace vramlab::nn {

/// The CPU kernels; "device" memory is host memory, so memory movement is memcpy/memset. Not final:
/// the meta backend is this one with its kind changed (Note [Meta kernels] in kernel_backend.cpp).
class CpuKernelBackend : public KernelBackend {
 public:
  [[nodiscard]] KernelKind kind() const override { return KernelKind::cpu; }

 private:
  void do_cast(void* out, DType out_type, const void* inp, DType inp_type,
               int64_t n) const override;
  [[nodiscard]] GradientCheck do_check_gradients(const void* grads, DType type, int64_t n,
                                                 float multiplier) const override;
  void do_adamw_update(const OptimizerTypes& types, void* param, const void* grad, void* m, void* v,
                       void* working, int64_t n, const kernels::cpu::AdamWHyperparameters& hp,
                       const UpdateStep& at) const override;
  void do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                     void* momentum_buffer, void* working, int64_t n,
                     const kernels::cpu::SgdHyperparameters& hp,
                     const UpdateStep& at) const override;
  void do_lion_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                      void* working, int64_t n, const kernels::cpu::LionHyperparameters& hp,
                      const UpdateStep& at) const override;
  void do_adam_mini_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                           void* v, void* working, int64_t block_size, int64_t count,
                           const kernels::cpu::AdamWHyperparameters& hp,
                           const UpdateStep& at) const override;
  void do_adafactor_update(const OptimizerTypes& types, void* param, const void* grad,
                           void* row_var, void* col_var, void* working, int64_t rows, int64_t cols,
                           bool factored, const kernels::cpu::AdafactorHyperparameters& hp,
                           const UpdateStep& at) const override;
  void do_adamw_8bit_update(const OptimizerTypes& types, void* param, const void* grad, uint8_t* qm,
                            uint8_t* qv, float* absmax_m, float* absmax_v, void* working, int64_t n,
                            int64_t block, const kernels::cpu::AdamWHyperparameters& hp,
                            const UpdateStep& at) const override;
  // Each entry point dispatches on its storage types to the kernels/cpu instantiation for
  // (A, G) (with_op_types in the .cpp); the f32 instantiations are the f32 kernels themselves.
  void do_linear_forward(OpTypes types, void* out, const void* inp, const void* weight,
                         const void* bias, int64_t N, int64_t C, int64_t OC) const override;
  void do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout,
                          const void* inp, const void* weight, int64_t N, int64_t C,
                          int64_t OC) const override;
  void do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd, const void* inp,
                            const void* weight, const void* bias, int64_t N,
                            int64_t C) const override;
  void do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                             const void* dout, const void* inp, const void* weight,
                             const float* mean, const float* rstd, int64_t N,
                             int64_t C) const override;
  void do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp,
                          const void* weight, int64_t N, int64_t C) const override;
  void do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight, const void* dout,
                           const void* inp, const void* weight, const float* rstd, int64_t N,
                           int64_t C) const override;
  void do_residual_forward(OpTypes types, void* out, const void* a, const void* b,
                           int64_t n) const override;
  void do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const override;
  void do_gelu_backward(OpTypes types, void* dinp, const void* inp, const void* dout,
                        int64_t n) const override;
  void do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up,
                         int64_t n) const override;
  void do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout, const void* gate,
                          const void* up, int64_t n) const override;
  void do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n, float p,
                          uint64_t seed, uint64_t offset) const override;
  void do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n, float p,
                           uint64_t seed, uint64_t offset) const override;
  void do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x, int64_t n,
                        int64_t block) const override;
  void do_dequantize_int8(OpTypes types, void* x, const int8_t* q, const float* scales, int64_t n,
                          int64_t block) const override;
  void do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B, int64_t T, int64_t H,
                       int64_t D, double theta) const override;
  void do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B, int64_t T,
                        int64_t H, int64_t D, double theta) const override;
  void do_attention_forward(OpTypes types, void* out, void* preatt, void* att, const void* q,
                            const void* k, const void* v, int64_t B, int64_t T, int64_t H,
                            int64_t Hkv, int64_t D, const AttentionDropout& dropout) const override;
  void do_attention_backward(OpTypes types, void* dq, void* dk, void* dv, void* dpreatt,
                             const void* dout, const void* q, const void* k, const void* v,
                             const void* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                             int64_t D, const AttentionDropout& dropout) const override;
  void do_flash_attention_forward(OpTypes types, void* out, float* lse, const void* q,
                                  const void* k, const void* v, int64_t B, int64_t T, int64_t H,
                                  int64_t Hkv, int64_t D,
                                  const AttentionDropout& dropout) const override;
  void do_flash_attention_backward(OpTypes types, void* dq, void* dk, void* dv, float* delta,
                                   const void* dout, const void* q, const void* k, const void* v,
                                   const void* out, const float* lse, int64_t B, int64_t T,
                                   int64_t H, int64_t Hkv, int64_t D,
                                   const AttentionDropout& dropout) const override;
  void do_embedding_forward(OpTypes types, void* out, const int32_t* tokens, const void* wte,
                            const void* wpe, int64_t B, int64_t T, int64_t C,
                            int64_t V) const override;
  void do_embedding_backward(OpTypes types, void* dwte, void* dwpe, const void* dout,
                             const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                             int64_t V) const override;
  void do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp, void* probs,
                                const void* logits, const int32_t* targets, int64_t N,
                                int64_t V) const override;
  void do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs,
                                const int32_t* targets, int64_t N, int64_t V,
                                float scale) const override;
  [[nodiscard]] double do_sum(OpTypes types, const void* x, int64_t n) const override;
  void do_fill_zero(void* device_pointer, std::size_t bytes) const override;
  void do_copy_to_device(void* device_pointer, const void* host_pointer,
                         std::size_t bytes) const override;
  void do_copy_to_host(void* host_pointer, const void* device_pointer,
                       std::size_t bytes) const override;
};

}  // namespace vramlab::nn
