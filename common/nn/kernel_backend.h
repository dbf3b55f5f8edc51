/// \file
/// \brief KernelBackend: every kernel the nn, optim and train layers run, and the memory movement
/// between the host and a Runtime's buffers, behind one interface so the same modules train on
/// host memory (the CPU kernels) or on device memory (the CUDA kernels, on a GPU or emulated).
///
/// Every pointer given to a backend is a pointer into its Runtime's buffers ("device" pointers),
/// except the host side of copy_to_device / copy_to_host. Semantics follow kernels/cpu: forward
/// ops write their outputs, backward ops ACCUMULATE into every gradient.
///
/// Implementations: CpuKernelBackend (kernels/cpu and the OpenMP-split GEMMs of parallel_linear.h)
/// and the CUDA backends of common/nn/cuda (kernels/cuda/ops.h, emulated or on a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cpu/optimizer.h"

namespace vramlab::nn {

/// Which implementation of the kernels a Runtime dispatches to.
enum class KernelKind {
  cpu,            ///< kernels/cpu on host memory (cpu and sim devices; nothing runs on meta)
  cuda_emulated,  ///< kernels/cuda compiled by g++, run by the SIMT emulator on host memory
  cuda,           ///< kernels/cuda compiled by nvcc, run on a GPU (cuda devices only)
};

/// \param kind a kind. \return "cpu", "cuda-emulated" or "cuda" (the `--kernels` spelling).
std::string_view kernel_kind_name(KernelKind kind);

/// Parses the `--kernels` spelling of a kind.
/// \param text "cpu", "cuda-emulated" or "cuda".
/// \return the kind.
/// \throws vramlab::UsageError naming \p text when it is none of them.
KernelKind parse_kernel_kind(std::string_view text);

/// The kernels and memory movement of one Runtime. Methods are const: a backend holds no state
/// that a call changes visibly (scratch memory at most).
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  /// \return which implementation this is.
  [[nodiscard]] virtual KernelKind kind() const = 0;

  // ---- memory movement -----------------------------------------------------------------------

  /// Sets \p bytes bytes at \p device_pointer to zero.
  /// \param device_pointer a Runtime buffer's memory. \param bytes how many.
  virtual void fill_zero(void* device_pointer, std::size_t bytes) const = 0;
  /// Copies host memory into a Runtime buffer (synchronous).
  /// \param device_pointer destination. \param host_pointer source. \param bytes how many.
  virtual void copy_to_device(void* device_pointer, const void* host_pointer,
                              std::size_t bytes) const = 0;
  /// Copies a Runtime buffer into host memory (synchronous: the data is there on return).
  /// \param host_pointer destination. \param device_pointer source. \param bytes how many.
  virtual void copy_to_host(void* host_pointer, const void* device_pointer,
                            std::size_t bytes) const = 0;

  // ---- linear layer (GEMMs) ------------------------------------------------------------------

  /// out = inp · weightᵀ + bias. \param out (N, OC) \param inp (N, C) \param weight (OC, C)
  /// \param bias (OC) or nullptr \param N rows \param C input features \param OC output features.
  /// \throws vramlab::UsageError on a size the GEMM library cannot index.
  virtual void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                              int64_t N, int64_t C, int64_t OC) const = 0;
  /// dinp += dout · weight, dweight += doutᵀ · inp, dbias += Σ_rows dout.
  /// \param dinp (N, C) or nullptr \param dweight (OC, C) \param dbias (OC) or nullptr
  /// \param dout (N, OC) \param inp (N, C) \param weight (OC, C) \param N rows
  /// \param C input features \param OC output features. \throws as linear_forward.
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int64_t N, int64_t C,
                               int64_t OC) const = 0;

  // ---- normalization -------------------------------------------------------------------------

  /// LayerNorm over the last axis (eps 1e-5). \param out (N, C) \param mean (N) \param rstd (N)
  /// \param inp (N, C) \param weight (C) \param bias (C) \param N rows \param C channels.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int64_t N,
                                 int64_t C) const = 0;
  /// LayerNorm gradients, accumulated. \param dinp (N, C) \param dweight (C) \param dbias (C)
  /// \param dout (N, C) \param inp (N, C) \param weight (C) \param mean (N) \param rstd (N)
  /// \param N rows \param C channels.
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int64_t N, int64_t C) const = 0;
  /// RMSNorm over the last axis (eps 1e-5). \param out (N, C) \param rstd (N) \param inp (N, C)
  /// \param weight (C) \param N rows \param C channels.
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               int64_t N, int64_t C) const = 0;
  /// RMSNorm gradients, accumulated. \param dinp (N, C) \param dweight (C) \param dout (N, C)
  /// \param inp (N, C) \param weight (C) \param rstd (N) \param N rows \param C channels.
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int64_t N,
                                int64_t C) const = 0;

  // ---- elementwise ---------------------------------------------------------------------------

  /// out = a + b (out may alias a or b). \param out (n) \param a (n) \param b (n)
  /// \param n elements.
  virtual void residual_forward(float* out, const float* a, const float* b, int64_t n) const = 0;
  /// GELU, tanh approximation. \param out (n) \param inp (n) \param n elements.
  virtual void gelu_forward(float* out, const float* inp, int64_t n) const = 0;
  /// dinp += GELU'(inp) · dout. \param dinp (n) \param inp (n) \param dout (n) \param n elements.
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) const = 0;
  /// out = SiLU(gate) · up. \param out (n) \param gate (n) \param up (n) \param n elements.
  virtual void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const = 0;
  /// dgate += SiLU'(gate) · up · dout, dup += SiLU(gate) · dout. \param dgate (n) \param dup (n)
  /// \param dout (n) \param gate (n) \param up (n) \param n elements.
  virtual void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                               const float* up, int64_t n) const = 0;

  // ---- attention -----------------------------------------------------------------------------

  /// Rotary embedding of every head vector (out may alias inp). \param out (B, T, H, D)
  /// \param inp (B, T, H, D) \param B batch \param T time \param H heads \param D head size (even)
  /// \param theta base of the angles.
  virtual void rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H,
                            int64_t D, double theta) const = 0;
  /// dinp += rotate⁻¹(dout). \param dinp (B, T, H, D) \param dout (B, T, H, D) \param B batch
  /// \param T time \param H heads \param D head size (even) \param theta base of the angles.
  virtual void rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H,
                             int64_t D, double theta) const = 0;
  /// Causal attention with grouped KV heads. \param out (B, T, H, D) \param preatt (B, H, T, T)
  /// \param att (B, H, T, T) \param q (B, T, H, D) \param k (B, T, Hkv, D) \param v (B, T, Hkv, D)
  /// \param B batch \param T time \param H heads \param Hkv kv heads \param D head size.
  virtual void attention_forward(float* out, float* preatt, float* att, const float* q,
                                 const float* k, const float* v, int64_t B, int64_t T, int64_t H,
                                 int64_t Hkv, int64_t D) const = 0;
  /// Attention gradients (dq, dk, dv accumulated; dpreatt scratch). \param dq (B, T, H, D)
  /// \param dk (B, T, Hkv, D) \param dv (B, T, Hkv, D) \param dpreatt (B, H, T, T)
  /// \param dout (B, T, H, D) \param q (B, T, H, D) \param k (B, T, Hkv, D) \param v (B, T, Hkv, D)
  /// \param att (B, H, T, T) \param B batch \param T time \param H heads \param Hkv kv heads
  /// \param D head size.
  virtual void attention_backward(float* dq, float* dk, float* dv, float* dpreatt,
                                  const float* dout, const float* q, const float* k, const float* v,
                                  const float* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                  int64_t D) const = 0;

  // ---- embedding and loss --------------------------------------------------------------------

  /// out[b, t] = wte[tokens[b, t]] + wpe[t]. \param out (B, T, C) \param tokens (B, T)
  /// \param wte (V, C) \param wpe (T, C) or nullptr \param B batch \param T time
  /// \param C channels \param V vocabulary.
  /// \throws vramlab::UsageError for a token outside [0, V) (CPU; a device error on a GPU).
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                 const float* wpe, int64_t B, int64_t T, int64_t C,
                                 int64_t V) const = 0;
  /// dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += Σ_b dout[b, t]. \param dwte (V, C)
  /// \param dwpe (T, C) or nullptr \param dout (B, T, C) \param tokens (B, T) \param B batch
  /// \param T time \param C channels \param V vocabulary. \throws as embedding_forward.
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout,
                                  const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                  int64_t V) const = 0;
  /// losses[row] = logsumexp(logits[row]) − logits[row, target], probs = softmax(logits).
  /// \param losses (N) \param logsumexp (N) \param probs (N, V) \param logits (N, V)
  /// \param targets (N) \param N rows \param V classes.
  /// \throws vramlab::UsageError for a target outside [0, V) (CPU; a device error on a GPU).
  virtual void cross_entropy_forward(float* losses, float* logsumexp, float* probs,
                                     const float* logits, const int32_t* targets, int64_t N,
                                     int64_t V) const = 0;
  /// dlogits = scale · (probs − onehot(target)), WRITTEN (not accumulated): the gradient of
  /// scale · Σ losses with respect to the logits. dlogits may alias the logits (not probs).
  /// \param dlogits (N, V) \param probs (N, V) \param targets (N) \param N rows \param V classes
  /// \param scale e.g. 1/N for a mean loss.
  virtual void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets,
                                     int64_t N, int64_t V, float scale) const = 0;
  /// \param x (n) \param n elements. \return Σ x accumulated in double, on the host.
  [[nodiscard]] virtual double sum(const float* x, int64_t n) const = 0;

  // ---- optimizers ----------------------------------------------------------------------------

  /// One AdamW step in place. \param param (n) \param grad (n) \param m (n) \param v (n)
  /// \param n elements \param hp hyperparameters \param step 1-based step.
  virtual void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                            const kernels::cpu::AdamWHyperparameters& hp, int64_t step) const = 0;
  /// One SGD step in place. \param param (n) \param grad (n) \param momentum_buffer (n) or
  /// nullptr when momentum is 0 \param n elements \param learning_rate lr \param momentum μ
  /// \param weight_decay wd \param nesterov Nesterov momentum.
  virtual void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                          float learning_rate, float momentum, float weight_decay,
                          bool nesterov) const = 0;
};

}  // namespace vramlab::nn
