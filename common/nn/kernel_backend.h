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
/// Storage types (lesson 03, mixed precision). Every op has an ACTIVATION type A ∈ {f32, bf16, f16}
/// and, where it produces parameter gradients, a PARAMETER-GRADIENT type G ∈ {f32, A}:
/// - A: every activation-shaped tensor, its gradient, and the op's weights and biases (the working
///   copy of the parameters is in the activation type; common/amp/precision_policy.h);
/// - G: dweight, dbias (linear, layernorm, rmsnorm), dwte, dwpe (embedding): f32 when the model
///   keeps fp32 gradients (`--fp32-grads`, or fp32 training), else A;
/// - always f32: norm statistics (mean, rstd), losses, logsumexp, int8 scales; tokens and targets
///   i32, int8 payloads i8.
/// The semantics are those of the f32 kernel on the widened inputs, rounded once to nearest-even
/// into the output's type: out = round_A(op_f32(widen(inputs))). An accumulated gradient is
/// g = round(widen(g) + contribution), the whole contribution computed in f32 first. Nothing is
/// rounded to A in between inside an op (e.g. attention's scores stay f32 until written).
/// The public methods take A from the op's first activation argument and G from
/// its first parameter-gradient argument, and check every other argument against them.
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
#include "common/nn/roofline.h"
#include "common/stream/clock.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/optimizer_8bit.h"

namespace vramlab::nn {

using memory::TensorView;
/// Dropout of the attention probabilities: {p, seed, offset}, p = 0 (the default) is none.
using kernels::cpu::AttentionDropout;
/// How an optimizer step rounds a 16-bit parameter it updates in place (pure bf16).
using kernels::cpu::ParameterRounding;
using kernels::cpu::UpdateStep;

/// The storage types of one op's void pointers (see the file comment): a ∈ {f32, bf16, f16} for
/// activations and weights, g ∈ {f32, a} for parameter gradients (g = a for ops without any).
struct OpTypes {
  DType a = DType::f32;  ///< activations, their gradients, weights and biases
  DType g = DType::f32;  ///< parameter gradients
};

/// The storage types of an optimizer step's tensors.
struct OptimizerTypes {
  DType param = DType::f32;    ///< what the optimizer updates: f32 (fp32, or the master) or bf16
  DType grad = DType::f32;     ///< f32, bf16 or f16
  DType state = DType::f32;    ///< m, v, momentum: f32 or bf16
  DType working = DType::f32;  ///< the working copy written after the update (bf16/f16), if any
};

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

/// Hears every kernel a backend runs (the profiler's kernel spans). Called on the thread that runs
/// the kernel, around the implementation (after the argument checks); must not throw.
class KernelObserver {
 public:
  virtual ~KernelObserver() = default;
  /// \param op the public method's name, e.g. "linear_forward" (a string literal: it outlives the
  /// call).
  virtual void kernel_started(std::string_view op) noexcept = 0;
  /// \param op the name kernel_started was given. \param work what the call did (roofline.h):
  /// its matmul FLOPs and the bytes of its operands, counted from its sizes.
  virtual void kernel_finished(std::string_view op, const KernelWork& work) noexcept = 0;
};

/// The kernels and memory movement of one Runtime. Methods are const: a backend holds no state
/// that a call changes visibly (scratch memory at most). Every view given to a backend is memory
/// of its Runtime ("device" memory), except the host side of copy_to_device / copy_to_host.
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  /// Fixed for the backend's lifetime; Runtime::kernel_kind() reports it.
  [[nodiscard]] virtual KernelKind kind() const = 0;

  /// Installs \p observer (nullptr removes it); with none, a kernel call costs one pointer test.
  /// Not thread-safe against running kernels: set it between steps.
  void set_observer(KernelObserver* observer) const { observer_ = observer; }
  /// \return the observer set_observer() installed, or nullptr.
  [[nodiscard]] KernelObserver* observer() const { return observer_; }
  /// Puts every kernel from now on on \p clock's current stream with its measured time, or its
  /// roofline time when set_roofline() gave one (nullptr: none). The copies are the Runtime's to
  /// place (Runtime::copy_to_device). Set by Runtime.
  void set_clock(stream::Clock* clock) const { clock_ = clock; }
  /// \return the clock set_clock() installed, or nullptr.
  [[nodiscard]] stream::Clock* clock() const { return clock_; }
  /// From now on a kernel takes Roofline::seconds of its work on the clock instead of the time it
  /// took here (no value: the measured time again). Set by Runtime on a meta device with a preset,
  /// where no kernel runs (Note [A meta kernel's time: its roofline] in roofline.cpp).
  void set_roofline(const std::optional<Roofline>& roofline) const { roofline_ = roofline; }
  /// \return the roofline set_roofline() installed, if any.
  [[nodiscard]] const std::optional<Roofline>& roofline() const { return roofline_; }

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
  /// Fills a buffer with values computed on the host in f32, chunk by chunk (at most 2^20 elements
  /// of host memory whatever the buffer's size), e.g. initial weights, rounded to the buffer's
  /// type (f32, bf16 or f16). On meta nothing is generated, which keeps a 70B model's setup
  /// instant.
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

  /// Flash attention (kernels/cpu/flash_attention.h): the causal attention of attention_forward
  /// with the same dropout mask, computed tile by tile so that no (B, H, T, T) tensor exists.
  /// Shapes: out, q (B, T, H, D); k, v (B, T, Hkv, D); lse (B, H, T) f32, the per-row
  /// log-sum-exp of the scaled scores, written: with out, all the backward keeps.
  /// \throws vramlab::InternalError for a dropout p outside [0, 1) or a wrong view.
  void flash_attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q,
                               const TensorView& k, const TensorView& v, int64_t B, int64_t T,
                               int64_t H, int64_t Hkv, int64_t D,
                               const AttentionDropout& dropout = {}) const;
  /// Flash attention gradients: dq, dk, dv accumulated, each score tile recomputed from q, k and
  /// lse. delta (B, H, T) f32 is scratch, written (rowsum(dout ∘ out)); out and lse are the
  /// forward's; every other shape as flash_attention_forward, dX like X.
  /// \throws as flash_attention_forward.
  void flash_attention_backward(const TensorView& dq, const TensorView& dk, const TensorView& dv,
                                const TensorView& delta, const TensorView& dout,
                                const TensorView& q, const TensorView& k, const TensorView& v,
                                const TensorView& out, const TensorView& lse, int64_t B, int64_t T,
                                int64_t H, int64_t Hkv, int64_t D,
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
  /// \return Σ x over an f32, bf16 or f16 (n), accumulated in double, on the host (0 on meta).
  [[nodiscard]] double sum(const TensorView& x) const;

  // ---- casts and the loss scaler's check -------------------------------------------------------

  /// out = round(inp) into out's type (f32, bf16 or f16; nearest-even, overflow to ±inf, NaN kept
  /// as NaN, common/dtype/convert.h); out and inp (n), any of the three types each.
  void cast(const TensorView& out, const TensorView& inp) const;
  /// What check_gradients found.
  struct GradientCheck {
    bool found_inf = false;     ///< some multiplier·g is ±inf or NaN (g itself, or an overflow)
    double sum_of_squares = 0;  ///< Σ (multiplier·g)², in double; meaningless when found_inf
  };
  /// The loss scaler's inf/NaN check and the clipping norm in one pass, on gradients of any of
  /// f32, bf16, f16, WITHOUT changing them: the unscale itself is folded into the optimizer's
  /// \p grad_multiplier (a fused unscale, as apex's and DeepSpeed's fused optimizers do), so no
  /// f32 copy of 16-bit gradients is ever made. \param grads (n). \param multiplier 1/scale.
  /// \return found_inf and Σ(multiplier·g)² (0 on meta, which never finds an inf).
  [[nodiscard]] GradientCheck check_gradients(const TensorView& grads, float multiplier) const;

  // ---- optimizers ----------------------------------------------------------------------------

  /// One AdamW step in place with g = at.grad_multiplier · grad (the loss scaler's 1/scale times
  /// the clipping coefficient; 1 for neither). \p param is what the optimizer updates: f32 (fp32
  /// training, or the fp32 master copy of mixed precision) or bf16 (pure bf16); \p m and \p v
  /// are f32 or bf16 (the same type); \p grad is f32, bf16 or f16; \p working is none or the
  /// bf16/f16 working copy of a master, overwritten with round(param) after the update. All (n);
  /// \p at.step is 1-based. Updates are computed in f32 from widened values and each stored value
  /// is rounded once; \p at.rounding says how a bf16 \p param is (nearest-even by default;
  /// stochastic rounding is refused for an f32 param, which is exact).
  void adamw_update(const TensorView& param, const TensorView& grad, const TensorView& m,
                    const TensorView& v, const TensorView& working,
                    const kernels::cpu::AdamWHyperparameters& hp, const UpdateStep& at) const;
  /// One SGD step in place (torch.optim.SGD) with g = at.grad_multiplier · grad; types as
  /// adamw_update, \p momentum_buffer like m (or none when momentum is 0).
  void sgd_update(const TensorView& param, const TensorView& grad,
                  const TensorView& momentum_buffer, const TensorView& working,
                  const kernels::cpu::SgdHyperparameters& hp, const UpdateStep& at) const;

  /// One Lion step in place (kernels/cpu/optimizer.h) with g = at.grad_multiplier · grad; types as
  /// adamw_update, \p m like its m.
  void lion_update(const TensorView& param, const TensorView& grad, const TensorView& m,
                   const TensorView& working, const kernels::cpu::LionHyperparameters& hp,
                   const UpdateStep& at) const;
  /// One Adam-mini step in place over param.numel() / block_size blocks of \p block_size
  /// consecutive elements (one tensor, or one run of equal blocks inside it); types as
  /// adamw_update, \p m (n) and \p v (one per block) in the state type.
  void adam_mini_update(const TensorView& param, const TensorView& grad, const TensorView& m,
                        const TensorView& v, const TensorView& working, int64_t block_size,
                        const kernels::cpu::AdamWHyperparameters& hp, const UpdateStep& at) const;
  /// One Adafactor step on ONE parameter tensor of rows × cols elements; factored (a matrix):
  /// \p row_var (rows) and \p col_var (cols); unfactored (rows = 1): \p row_var (cols) and no
  /// \p col_var. Types as adamw_update, the variances in the state type.
  void adafactor_update(const TensorView& param, const TensorView& grad, const TensorView& row_var,
                        const TensorView& col_var, const TensorView& working, int64_t rows,
                        int64_t cols, bool factored,
                        const kernels::cpu::AdafactorHyperparameters& hp,
                        const UpdateStep& at) const;
  /// One 8-bit AdamW step on ONE parameter tensor (kernels/cpu/optimizer_8bit.h): \p qm, \p qv
  /// (n) u8 codes, \p absmax_m, \p absmax_v (ceil(n / block)) f32; param, grad and working as
  /// adamw_update's.
  void adamw_8bit_update(const TensorView& param, const TensorView& grad, const TensorView& qm,
                         const TensorView& qv, const TensorView& absmax_m,
                         const TensorView& absmax_v, const TensorView& working, int64_t block,
                         const kernels::cpu::AdamWHyperparameters& hp, const UpdateStep& at) const;

 private:
  mutable KernelObserver* observer_ = nullptr;
  mutable stream::Clock* clock_ = nullptr;
  mutable std::optional<Roofline> roofline_;

  // The implementations, on raw pointers whose dtypes and sizes the public methods checked.
  // `types.a` and `types.g` say what every void pointer holds (see the file comment): pointers
  // named d<param> (dweight, dbias, dwte, dwpe) are G, every other void pointer is A.
  virtual void do_fill_zero(void* device_pointer, std::size_t bytes) const = 0;
  virtual void do_copy_to_device(void* device_pointer, const void* host_pointer,
                                 std::size_t bytes) const = 0;
  virtual void do_copy_to_host(void* host_pointer, const void* device_pointer,
                               std::size_t bytes) const = 0;
  // Generates f32 chunk by chunk, rounds each chunk to \p dtype on the host and copies it in
  // (meta overrides it with nothing).
  virtual void do_fill_from_host(void* device_pointer, DType dtype, int64_t numel,
                                 const HostGenerator& generate) const;
  virtual void do_linear_forward(OpTypes types, void* out, const void* inp, const void* weight,
                                 const void* bias, int64_t N, int64_t C, int64_t OC) const = 0;
  virtual void do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                                  const void* dout, const void* inp, const void* weight, int64_t N,
                                  int64_t C, int64_t OC) const = 0;
  virtual void do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd,
                                    const void* inp, const void* weight, const void* bias,
                                    int64_t N, int64_t C) const = 0;
  virtual void do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                                     const void* dout, const void* inp, const void* weight,
                                     const float* mean, const float* rstd, int64_t N,
                                     int64_t C) const = 0;
  virtual void do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp,
                                  const void* weight, int64_t N, int64_t C) const = 0;
  virtual void do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight, const void* dout,
                                   const void* inp, const void* weight, const float* rstd,
                                   int64_t N, int64_t C) const = 0;
  virtual void do_residual_forward(OpTypes types, void* out, const void* a, const void* b,
                                   int64_t n) const = 0;
  virtual void do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const = 0;
  virtual void do_gelu_backward(OpTypes types, void* dinp, const void* inp, const void* dout,
                                int64_t n) const = 0;
  virtual void do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up,
                                 int64_t n) const = 0;
  virtual void do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout,
                                  const void* gate, const void* up, int64_t n) const = 0;
  virtual void do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n, float p,
                                  uint64_t seed, uint64_t offset) const = 0;
  virtual void do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n, float p,
                                   uint64_t seed, uint64_t offset) const = 0;
  virtual void do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x, int64_t n,
                                int64_t block) const = 0;
  virtual void do_dequantize_int8(OpTypes types, void* x, const int8_t* q, const float* scales,
                                  int64_t n, int64_t block) const = 0;
  virtual void do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B, int64_t T,
                               int64_t H, int64_t D, double theta) const = 0;
  virtual void do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B, int64_t T,
                                int64_t H, int64_t D, double theta) const = 0;
  // out is nullptr when the caller passed none.
  virtual void do_attention_forward(OpTypes types, void* out, void* preatt, void* att,
                                    const void* q, const void* k, const void* v, int64_t B,
                                    int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                    const AttentionDropout& dropout) const = 0;
  virtual void do_attention_backward(OpTypes types, void* dq, void* dk, void* dv, void* dpreatt,
                                     const void* dout, const void* q, const void* k, const void* v,
                                     const void* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                     int64_t D, const AttentionDropout& dropout) const = 0;
  virtual void do_flash_attention_forward(OpTypes types, void* out, float* lse, const void* q,
                                          const void* k, const void* v, int64_t B, int64_t T,
                                          int64_t H, int64_t Hkv, int64_t D,
                                          const AttentionDropout& dropout) const = 0;
  virtual void do_flash_attention_backward(OpTypes types, void* dq, void* dk, void* dv,
                                           float* delta, const void* dout, const void* q,
                                           const void* k, const void* v, const void* out,
                                           const float* lse, int64_t B, int64_t T, int64_t H,
                                           int64_t Hkv, int64_t D,
                                           const AttentionDropout& dropout) const = 0;
  virtual void do_embedding_forward(OpTypes types, void* out, const int32_t* tokens,
                                    const void* wte, const void* wpe, int64_t B, int64_t T,
                                    int64_t C, int64_t V) const = 0;
  virtual void do_embedding_backward(OpTypes types, void* dwte, void* dwpe, const void* dout,
                                     const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                                     int64_t V) const = 0;
  virtual void do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp, void* probs,
                                        const void* logits, const int32_t* targets, int64_t N,
                                        int64_t V) const = 0;
  virtual void do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs,
                                        const int32_t* targets, int64_t N, int64_t V,
                                        float scale) const = 0;
  // x holds types.a.
  [[nodiscard]] virtual double do_sum(OpTypes types, const void* x, int64_t n) const = 0;
  virtual void do_cast(void* out, DType out_type, const void* inp, DType inp_type,
                       int64_t n) const = 0;
  [[nodiscard]] virtual GradientCheck do_check_gradients(const void* grads, DType type, int64_t n,
                                                         float multiplier) const = 0;
  // param, m, v, grad, working: their types in `types` (working may be nullptr).
  virtual void do_adamw_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                               void* v, void* working, int64_t n,
                               const kernels::cpu::AdamWHyperparameters& hp,
                               const UpdateStep& at) const = 0;
  virtual void do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                             void* momentum_buffer, void* working, int64_t n,
                             const kernels::cpu::SgdHyperparameters& hp,
                             const UpdateStep& at) const = 0;
  virtual void do_lion_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                              void* working, int64_t n, const kernels::cpu::LionHyperparameters& hp,
                              const UpdateStep& at) const = 0;
  virtual void do_adam_mini_update(const OptimizerTypes& types, void* param, const void* grad,
                                   void* m, void* v, void* working, int64_t block_size,
                                   int64_t count, const kernels::cpu::AdamWHyperparameters& hp,
                                   const UpdateStep& at) const = 0;
  // col_var is nullptr when unfactored.
  virtual void do_adafactor_update(const OptimizerTypes& types, void* param, const void* grad,
                                   void* row_var, void* col_var, void* working, int64_t rows,
                                   int64_t cols, bool factored,
                                   const kernels::cpu::AdafactorHyperparameters& hp,
                                   const UpdateStep& at) const = 0;
  // types.state is f32 (the absmax); qm and qv are u8.
  virtual void do_adamw_8bit_update(const OptimizerTypes& types, void* param, const void* grad,
                                    uint8_t* qm, uint8_t* qv, float* absmax_m, float* absmax_v,
                                    void* working, int64_t n, int64_t block,
                                    const kernels::cpu::AdamWHyperparameters& hp,
                                    const UpdateStep& at) const = 0;
};

}  // namespace vramlab::nn
