/// \file
/// \brief KernelBackend: every kernel the nn, optim and train layers run, and the memory movement
/// between the host and a Runtime's buffers, behind one interface so the same modules train on
/// host memory (the CPU kernels), on device memory (the CUDA kernels, on a GPU or emulated), or on
/// nothing at all (the meta kernels, which run no kernel: a 70B step's allocations in seconds).
///
/// The public methods take typed views (memory::TensorView) and check, before anything runs, that
/// each has the dtype and the element count the op's sizes call for; a mismatch is a bug in the
/// caller and throws vramlab::InternalError naming the op and the argument. They then call the
/// backend's implementation with raw pointers (the private virtual `do_*` functions), so the
/// checks are written once for every backend. Semantics follow kernels/cpu: forward ops write
/// their outputs, backward ops ACCUMULATE into every gradient.
///
/// Implementations: CpuKernelBackend (kernels/cpu and the OpenMP-split GEMMs of parallel_linear.h),
/// MetaKernelBackend (nothing runs) and the CUDA backends of common/nn/cuda (kernels/cuda/ops.h,
/// emulated or on a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/memory/tensor_view.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/optimizer.h"

namespace vramlab::nn {

using memory::TensorView;
/// Dropout of the attention probabilities: {p, seed, offset}, p = 0 (the default) is none.
using kernels::cpu::AttentionDropout;

/// Which implementation of the kernels a Runtime dispatches to.
enum class KernelKind {
  cpu,            ///< kernels/cpu on host memory (cpu and sim devices)
  cuda_emulated,  ///< kernels/cuda compiled by g++, run by the SIMT emulator on host memory
  cuda,           ///< kernels/cuda compiled by nvcc, run on a GPU (cuda devices only)
  meta,           ///< no kernel runs (the meta device: shapes and allocations only)
};

/// \return "cpu", "cuda-emulated", "cuda" or "meta" (the `--kernels` spelling).
std::string_view kernel_kind_name(KernelKind kind);

/// Parses the `--kernels` spelling of a kind: "cpu", "cuda-emulated", "cuda" or "meta".
/// \throws vramlab::UsageError naming \p text when it is none of them.
KernelKind parse_kernel_kind(std::string_view text);

/// The kernels and memory movement of one Runtime. Methods are const: a backend holds no state
/// that a call changes visibly (scratch memory at most). Every view given to a backend is memory
/// of its Runtime ("device" memory), except the host side of copy_to_device / copy_to_host.
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  /// Fixed for the backend's lifetime; Runtime::kernel_kind() reports it.
  [[nodiscard]] virtual KernelKind kind() const = 0;

  // ---- memory movement -----------------------------------------------------------------------

  /// Sets every byte of \p buffer, of any dtype, to zero.
  void fill_zero(const TensorView& buffer) const;
  /// Copies buffer.bytes() bytes from \p host_pointer into \p buffer (synchronous).
  void copy_to_device(const TensorView& buffer, const void* host_pointer) const;
  /// Copies \p buffer into buffer.bytes() bytes at \p host_pointer (synchronous: the data is
  /// there on return).
  void copy_to_host(void* host_pointer, const TensorView& buffer) const;

  /// Computes elements [first, first + count) of a buffer into a host chunk.
  using HostGenerator = std::function<void(float* chunk, int64_t first, int64_t count)>;
  /// Fills an f32 buffer with values computed on the host, chunk by chunk (at most 2^20 elements
  /// of host memory whatever the buffer's size), e.g. initial weights. On meta nothing is
  /// generated, which keeps a 70B model's setup instant. \p buffer must be f32.
  void fill_from_host(const TensorView& buffer, const HostGenerator& generate) const;

  // ---- linear layer (GEMMs) ------------------------------------------------------------------

  /// out = inp · weightᵀ + bias. Shapes: out (N, OC), inp (N, C), weight (OC, C), bias (OC) or
  /// none.
  /// \throws vramlab::UsageError on a size the GEMM library cannot index.
  void linear_forward(const TensorView& out, const TensorView& inp, const TensorView& weight,
                      const TensorView& bias, int64_t N, int64_t C, int64_t OC) const;
  /// dinp += dout · weight, dweight += doutᵀ · inp, dbias += Σ_rows dout. Shapes as
  /// linear_forward, with dout (N, OC); dinp and dbias may be none. \throws as linear_forward.
  void linear_backward(const TensorView& dinp, const TensorView& dweight, const TensorView& dbias,
                       const TensorView& dout, const TensorView& inp, const TensorView& weight,
                       int64_t N, int64_t C, int64_t OC) const;

  // ---- normalization -------------------------------------------------------------------------

  /// LayerNorm over the last axis (eps 1e-5). Shapes: out, inp (N, C); mean, rstd (N);
  /// weight, bias (C).
  void layernorm_forward(const TensorView& out, const TensorView& mean, const TensorView& rstd,
                         const TensorView& inp, const TensorView& weight, const TensorView& bias,
                         int64_t N, int64_t C) const;
  /// LayerNorm gradients, accumulated. Shapes as layernorm_forward; mean and rstd are its outputs.
  void layernorm_backward(const TensorView& dinp, const TensorView& dweight,
                          const TensorView& dbias, const TensorView& dout, const TensorView& inp,
                          const TensorView& weight, const TensorView& mean, const TensorView& rstd,
                          int64_t N, int64_t C) const;
  /// RMSNorm over the last axis (eps 1e-5). Shapes: out, inp (N, C); rstd (N); weight (C).
  void rmsnorm_forward(const TensorView& out, const TensorView& rstd, const TensorView& inp,
                       const TensorView& weight, int64_t N, int64_t C) const;
  /// RMSNorm gradients, accumulated. Shapes as rmsnorm_forward.
  void rmsnorm_backward(const TensorView& dinp, const TensorView& dweight, const TensorView& dout,
                        const TensorView& inp, const TensorView& weight, const TensorView& rstd,
                        int64_t N, int64_t C) const;

  // ---- elementwise ---------------------------------------------------------------------------

  /// out = a + b, all (n); out may alias a or b.
  void residual_forward(const TensorView& out, const TensorView& a, const TensorView& b) const;
  /// GELU, tanh approximation; out and inp (n).
  void gelu_forward(const TensorView& out, const TensorView& inp) const;
  /// dinp += GELU'(inp) · dout, all (n).
  void gelu_backward(const TensorView& dinp, const TensorView& inp, const TensorView& dout) const;
  /// out = SiLU(gate) · up, all (n).
  void swiglu_forward(const TensorView& out, const TensorView& gate, const TensorView& up) const;
  /// dgate += SiLU'(gate) · up · dout, dup += SiLU(gate) · dout, all (n).
  void swiglu_backward(const TensorView& dgate, const TensorView& dup, const TensorView& dout,
                       const TensorView& gate, const TensorView& up) const;

  // ---- dropout and int8 quantisation ---------------------------------------------------------

  /// out = inp · keep / (1 − p), keep[i] = dropout_uniform(seed, offset + i) ≥ p
  /// (common/dtype/dropout_mask.h: a pure function of the index, so a recomputed forward and the
  /// backward regenerate the same mask); out and inp (n), may alias; p = 0 is an exact copy.
  /// \param out the result. \param inp the input. \param p drop probability in [0, 1) (validated
  /// by the model; here a bad one is a bug). \param seed the mask's stream. \param offset added to
  /// every element index (e.g. distinct per layer).
  /// \throws vramlab::InternalError for p outside [0, 1) or a wrong view.
  void dropout_forward(const TensorView& out, const TensorView& inp, float p, uint64_t seed,
                       uint64_t offset) const;
  /// dinp = dout · keep / (1 − p) with the mask of dropout_forward for the same (p, seed, offset):
  /// WRITTEN, not accumulated; dinp and dout (n), may alias.
  /// \param dinp the input's gradient. \param dout the output's gradient. \param p as
  /// dropout_forward. \param seed as dropout_forward. \param offset as dropout_forward.
  /// \throws as dropout_forward.
  void dropout_backward(const TensorView& dinp, const TensorView& dout, float p, uint64_t seed,
                        uint64_t offset) const;
  /// Symmetric int8 in blocks of \p block elements (block ≥ 1; the last block may be shorter;
  /// block = n gives one scale for the tensor): scale[j] = amax(|x| over block j) / 127,
  /// q = round-half-to-even(x / scale) clamped to [−127, 127]; an all-zero block has scale 0 and
  /// q = 0; a block holding a NaN or ±inf gets scale NaN and q = 0 (it dequantises to NaN).
  /// \param q i8 (n). \param scales f32 (ceil(n / block)). \param x f32 (n). \param block
  /// elements per scale. \throws vramlab::InternalError for block < 1 or a wrong view.
  void quantize_int8(const TensorView& q, const TensorView& scales, const TensorView& x,
                     int64_t block) const;
  /// x = q · scale[i / block]; shapes as quantize_int8.
  /// \param x f32 (n). \param q i8 (n). \param scales f32 (ceil(n / block)). \param block as
  /// quantize_int8. \throws as quantize_int8.
  void dequantize_int8(const TensorView& x, const TensorView& q, const TensorView& scales,
                       int64_t block) const;

  // ---- attention -----------------------------------------------------------------------------

  /// Rotary embedding of every head vector; out and inp (B, T, H, D), may alias; D even;
  /// \p theta is the angles' base (10000 in Llama 2).
  void rope_forward(const TensorView& out, const TensorView& inp, int64_t B, int64_t T, int64_t H,
                    int64_t D, double theta) const;
  /// dinp += rotate⁻¹(dout); shapes and \p theta as rope_forward.
  void rope_backward(const TensorView& dinp, const TensorView& dout, int64_t B, int64_t T,
                     int64_t H, int64_t D, double theta) const;
  /// Causal attention with grouped KV heads (Hkv divides H). Shapes: out, q (B, T, H, D);
  /// k, v (B, T, Hkv, D); preatt (scaled scores) and att (probabilities, before dropout)
  /// (B, H, T, T). Each row's probabilities are written after its scores are read, so preatt may
  /// be att itself: the scores are then scratch, overwritten in place (what the runtime does).
  /// \p out may be none (TensorView{}): only preatt and att are computed, what a selective
  /// recompute of the probabilities needs. \p dropout (default none) multiplies the
  /// probabilities that meet v by keep / (1 − p), keep from mask element
  /// offset + ((b·H + h)·T + t)·T + s; p = 0 is bitwise the result without dropout.
  /// \throws vramlab::InternalError for a dropout p outside [0, 1) or a wrong view.
  void attention_forward(const TensorView& out, const TensorView& preatt, const TensorView& att,
                         const TensorView& q, const TensorView& k, const TensorView& v, int64_t B,
                         int64_t T, int64_t H, int64_t Hkv, int64_t D,
                         const AttentionDropout& dropout = {}) const;
  /// Attention gradients (dq, dk, dv accumulated; dpreatt is (B, H, T, T) scratch, written).
  /// Every other shape as attention_forward, dX like X; \p dropout must be the forward's (the
  /// mask is regenerated: the score gradient is (dout·vᵀ) · keep / (1 − p) before the softmax
  /// backward, and dv uses the dropped probabilities). \throws as attention_forward.
  void attention_backward(const TensorView& dq, const TensorView& dk, const TensorView& dv,
                          const TensorView& dpreatt, const TensorView& dout, const TensorView& q,
                          const TensorView& k, const TensorView& v, const TensorView& att,
                          int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                          const AttentionDropout& dropout = {}) const;

  // ---- embedding and loss --------------------------------------------------------------------

  /// out[b, t] = wte[tokens[b, t]] + wpe[t]. Shapes: out (B, T, C), tokens (B, T) i32,
  /// wte (V, C), wpe (≥T, C) or none.
  /// \throws vramlab::InternalError for a token outside [0, V) (CPU; a device error on a GPU).
  void embedding_forward(const TensorView& out, const TensorView& tokens, const TensorView& wte,
                         const TensorView& wpe, int64_t B, int64_t T, int64_t C, int64_t V) const;
  /// dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += Σ_b dout[b, t]. Shapes as embedding_forward.
  /// \throws as embedding_forward.
  void embedding_backward(const TensorView& dwte, const TensorView& dwpe, const TensorView& dout,
                          const TensorView& tokens, int64_t B, int64_t T, int64_t C,
                          int64_t V) const;
  /// losses[row] = logsumexp(logits[row]) − logits[row, target], probs = softmax(logits).
  /// Shapes: losses, logsumexp, targets (N), targets i32; probs, logits (N, V).
  /// \throws vramlab::InternalError for a target outside [0, V) (CPU; a device error on a GPU).
  void cross_entropy_forward(const TensorView& losses, const TensorView& logsumexp,
                             const TensorView& probs, const TensorView& logits,
                             const TensorView& targets, int64_t N, int64_t V) const;
  /// dlogits = scale · (probs − onehot(target)), WRITTEN (not accumulated): the gradient of
  /// scale · Σ losses with respect to the logits. Elementwise, so dlogits may alias the logits or
  /// probs (the model writes it over its saved probabilities).
  /// Shapes as cross_entropy_forward; \p scale e.g. 1/N for a mean loss.
  void cross_entropy_dlogits(const TensorView& dlogits, const TensorView& probs,
                             const TensorView& targets, int64_t N, int64_t V, float scale) const;
  /// \return Σ x over an f32 (n), accumulated in double, on the host (0 on meta).
  [[nodiscard]] double sum(const TensorView& x) const;

  // ---- optimizers ----------------------------------------------------------------------------

  /// One AdamW step in place; param, grad and the moments m, v all (n); \p step is 1-based.
  void adamw_update(const TensorView& param, const TensorView& grad, const TensorView& m,
                    const TensorView& v, const kernels::cpu::AdamWHyperparameters& hp,
                    int64_t step) const;
  /// One SGD step in place (torch.optim.SGD); param, grad (n); momentum_buffer (n), or none
  /// when momentum is 0.
  void sgd_update(const TensorView& param, const TensorView& grad,
                  const TensorView& momentum_buffer, float learning_rate, float momentum,
                  float weight_decay, bool nesterov) const;

 private:
  // The implementations, on raw pointers whose dtypes and sizes the public methods checked.
  virtual void do_fill_zero(void* device_pointer, std::size_t bytes) const = 0;
  virtual void do_copy_to_device(void* device_pointer, const void* host_pointer,
                                 std::size_t bytes) const = 0;
  virtual void do_copy_to_host(void* host_pointer, const void* device_pointer,
                               std::size_t bytes) const = 0;
  // Generates chunk by chunk and copies each chunk in (meta overrides it with nothing).
  virtual void do_fill_from_host(float* device_pointer, int64_t numel,
                                 const HostGenerator& generate) const;
  virtual void do_linear_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int64_t N, int64_t C, int64_t OC) const = 0;
  virtual void do_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int64_t N, int64_t C,
                                  int64_t OC) const = 0;
  virtual void do_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int64_t N,
                                    int64_t C) const = 0;
  virtual void do_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int64_t N, int64_t C) const = 0;
  virtual void do_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                  int64_t N, int64_t C) const = 0;
  virtual void do_rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                   const float* weight, const float* rstd, int64_t N,
                                   int64_t C) const = 0;
  virtual void do_residual_forward(float* out, const float* a, const float* b, int64_t n) const = 0;
  virtual void do_gelu_forward(float* out, const float* inp, int64_t n) const = 0;
  virtual void do_gelu_backward(float* dinp, const float* inp, const float* dout,
                                int64_t n) const = 0;
  virtual void do_swiglu_forward(float* out, const float* gate, const float* up,
                                 int64_t n) const = 0;
  virtual void do_swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                  const float* up, int64_t n) const = 0;
  virtual void do_dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                                  uint64_t offset) const = 0;
  virtual void do_dropout_backward(float* dinp, const float* dout, int64_t n, float p,
                                   uint64_t seed, uint64_t offset) const = 0;
  virtual void do_quantize_int8(int8_t* q, float* scales, const float* x, int64_t n,
                                int64_t block) const = 0;
  virtual void do_dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n,
                                  int64_t block) const = 0;
  virtual void do_rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H,
                               int64_t D, double theta) const = 0;
  virtual void do_rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H,
                                int64_t D, double theta) const = 0;
  // out is nullptr when the caller passed none.
  virtual void do_attention_forward(float* out, float* preatt, float* att, const float* q,
                                    const float* k, const float* v, int64_t B, int64_t T, int64_t H,
                                    int64_t Hkv, int64_t D,
                                    const AttentionDropout& dropout) const = 0;
  virtual void do_attention_backward(float* dq, float* dk, float* dv, float* dpreatt,
                                     const float* dout, const float* q, const float* k,
                                     const float* v, const float* att, int64_t B, int64_t T,
                                     int64_t H, int64_t Hkv, int64_t D,
                                     const AttentionDropout& dropout) const = 0;
  virtual void do_embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                    const float* wpe, int64_t B, int64_t T, int64_t C,
                                    int64_t V) const = 0;
  virtual void do_embedding_backward(float* dwte, float* dwpe, const float* dout,
                                     const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                     int64_t V) const = 0;
  virtual void do_cross_entropy_forward(float* losses, float* logsumexp, float* probs,
                                        const float* logits, const int32_t* targets, int64_t N,
                                        int64_t V) const = 0;
  virtual void do_cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets,
                                        int64_t N, int64_t V, float scale) const = 0;
  [[nodiscard]] virtual double do_sum(const float* x, int64_t n) const = 0;
  virtual void do_adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                               const kernels::cpu::AdamWHyperparameters& hp,
                               int64_t step) const = 0;
  virtual void do_sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                             float learning_rate, float momentum, float weight_decay,
                             bool nesterov) const = 0;
};

}  // namespace vramlab::nn
