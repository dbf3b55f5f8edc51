/// \file
/// \brief Host-side launchers of the CUDA kernels of the training runtime (kernels/cuda/ops/*.cu).
///
/// Namespace vramlab::kernels::cuda. Every launcher mirrors its CPU twin in kernels/cpu (same
/// argument order, same shapes, same semantics: forward kernels write, backward kernels ACCUMULATE
/// into every gradient), but every pointer is a DEVICE pointer. Which device depends on the
/// library the program links:
/// - vramlab::cuda_ops_emulated: the .cu files compiled by g++ against the SIMT emulator
///   (kernels/simt); "device" memory is host memory from simt::device_malloc, launches are
///   synchronous, GEMMs go through OpenBLAS.
/// - vramlab::cuda_ops (only with VRAMLAB_HAVE_CUDA): the same .cu files compiled by nvcc; device
///   memory comes from cudaMalloc, launches are queued on the default stream, GEMMs go through
///   cuBLAS.
///
/// Ops that matter for speed have two kernels, selected with KernelVersion: v1 is a plain port of
/// the CPU loop (one thread per output element or row), v2 is optimized as in llm.c's dev/cuda
/// (one warp per row with shuffle reductions, shared memory, float4 loads where aligned).
///
/// Storage types (lesson 03, the contract of common/nn/kernel_backend.h): the launchers the
/// training runtime calls are templates on the ACTIVATION storage type A (float, bf16_t or f16_t)
/// and, where they write parameter gradients (dweight, dbias, dwte, dwpe), the PARAMETER-GRADIENT
/// storage type G (float or A); they are instantiated for exactly those pairs. Every kernel widens
/// its inputs to f32, computes as the float kernel does, and rounds each output once (nearest-even,
/// common/dtype/convert.h); an accumulated gradient is round(widen(g) + contribution). Statistics
/// (mean, rstd, losses, logsumexp, int8 scales) stay float. With A = G = float every kernel is the
/// float kernel, bit for bit. One documented exception: a 16-bit attention_backward computes dq and
/// dk from its dpreatt output as stored in A. Launchers the runtime does not call (softmax, SiLU,
/// residual_backward, bias_add_forward, scale, cross_entropy_backward, sum_of_squares) stay float.
/// Pointers that may be nullptr are not deduced (NoDeduce), so a float call site still deduces A
/// from its other arguments.
///
/// Determinism: no float atomics anywhere; parameter gradients that sum over rows (bias, norm
/// weights, embeddings) are reduced by one thread per column in a fixed order, so every run gives
/// the same bits.
///
/// Bad sizes throw vramlab::UsageError (naming the value) before any launch; zero-size work
/// launches nothing.
///
/// Both builds of the launchers can live in one program: they sit in an inline namespace named by
/// VRAMLAB_CUDA_OPS_ABI, `gpu` for the nvcc build and `emulated` for the g++ build. A host file
/// compiled by g++ that calls the nvcc-built kernels defines VRAMLAB_CUDA_OPS_ABI as gpu before
/// including this header; everyone else writes `cuda::layernorm_forward(...)` and gets the build
/// they link.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/dtype.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/optimizer.h"

#if !defined(VRAMLAB_CUDA_OPS_ABI)
#if defined(__CUDACC__)
/// The inline namespace of the launchers: gpu (nvcc build) or emulated (g++ build).
#define VRAMLAB_CUDA_OPS_ABI gpu
#else
/// The inline namespace of the launchers: gpu (nvcc build) or emulated (g++ build).
#define VRAMLAB_CUDA_OPS_ABI emulated
#endif
#endif

namespace vramlab::kernels::cuda {

/// Which kernel of an op runs.
enum class KernelVersion {
  v1,  ///< the plain port of the CPU loop
  v2,  ///< the optimized kernel (warp reductions, shared memory, vectorized loads)
};

/// \p T in a parameter that takes no part in template argument deduction: such a pointer may be
/// nullptr while the storage type is deduced from the other arguments.
template <class T>
using NoDeduce = std::type_identity_t<T>;

/// The launchers of one build (see VRAMLAB_CUDA_OPS_ABI).
inline namespace VRAMLAB_CUDA_OPS_ABI {

/// \return "v1" or "v2", e.g. for test and benchmark names.
const char* kernel_version_name(KernelVersion version);

// ---- elementwise (elementwise.cu) ----------------------------------------------------------

/// out = a + b, all (n). \throws vramlab::UsageError when n < 0.
template <class A>
void residual_forward(A* out, const A* a, const A* b, int64_t n);
/// da += dout, db += dout, all (n). \throws vramlab::UsageError when n < 0.
void residual_backward(float* da, float* db, const float* dout, int64_t n);
/// x[row, c] += bias[c] in place; x (N, C), bias (C).
/// \throws vramlab::UsageError when N or C < 0.
void bias_add_forward(float* x, const float* bias, int64_t N, int64_t C);
/// dbias[c] += Σ_row dout[row, c] (one thread per column, rows in order); dbias (C), dout (N, C).
/// \throws vramlab::UsageError when N or C < 0.
template <class A, class G>
void bias_add_backward(G* dbias, const A* dout, int64_t N, int64_t C);
/// out = scale · inp; out, inp (n). \throws vramlab::UsageError when n < 0.
void scale_forward(float* out, const float* inp, float scale, int64_t n);
/// dinp += scale · dout; dinp, dout (n). \throws vramlab::UsageError when n < 0.
void scale_backward(float* dinp, const float* dout, float scale, int64_t n);

// ---- dropout (dropout.cu) ------------------------------------------------------------------

/// out[i] = keep(i) ? inp[i] / (1 − p) : 0 with keep(i) = dropout_uniform(seed, offset + i) >= p
/// (the CPU kernel's mask, bit for bit); out, inp (n), may alias; one thread per element.
/// \throws vramlab::InternalError when n < 0 or p is outside [0, 1).
template <class A>
void dropout_forward(A* out, const A* inp, int64_t n, float p, uint64_t seed, uint64_t offset);
/// dinp[i] = keep(i) ? dout[i] / (1 − p) : 0, WRITTEN; dinp, dout (n), may alias.
/// \throws as dropout_forward.
template <class A>
void dropout_backward(A* dinp, const A* dout, int64_t n, float p, uint64_t seed, uint64_t offset);

// ---- int8 quantisation (quantize.cu) -------------------------------------------------------

/// Symmetric int8 in blocks (kernels/cpu/quantize.h, the same bits): q (n), scales
/// (ceil(n / block)), x (n). One warp per block: a shuffle max of |x| (exact in any order), then
/// every lane quantises its elements. \throws vramlab::InternalError when n < 0 or block < 1.
template <class A>
void quantize_int8(int8_t* q, float* scales, const A* x, int64_t n, int64_t block);
/// x[i] = q[i] · scales[i / block], one thread per element; shapes as quantize_int8.
/// \throws as quantize_int8.
template <class A>
void dequantize_int8(A* x, const int8_t* q, const float* scales, int64_t n, int64_t block);

// ---- activations (activation.cu) -----------------------------------------------------------

/// GELU, tanh approximation (GPT-2); out, inp (n). \throws vramlab::UsageError when n < 0.
template <class A>
void gelu_forward(A* out, const A* inp, int64_t n);
/// dinp += GELU'(inp) · dout, all (n). \throws vramlab::UsageError when n < 0.
template <class A>
void gelu_backward(A* dinp, const A* inp, const A* dout, int64_t n);
/// SiLU: out = inp · σ(inp); out, inp (n). \throws vramlab::UsageError when n < 0.
void silu_forward(float* out, const float* inp, int64_t n);
/// dinp += SiLU'(inp) · dout, all (n). \throws vramlab::UsageError when n < 0.
void silu_backward(float* dinp, const float* inp, const float* dout, int64_t n);
/// SwiGLU: out = SiLU(gate) · up, all (n). \throws vramlab::UsageError when n < 0.
template <class A>
void swiglu_forward(A* out, const A* gate, const A* up, int64_t n);
/// dgate += SiLU'(gate) · up · dout, dup += SiLU(gate) · dout, all (n).
/// \throws vramlab::UsageError when n < 0.
template <class A>
void swiglu_backward(A* dgate, A* dup, const A* dout, const A* gate, const A* up, int64_t n);

// ---- normalization (normalization.cu) ------------------------------------------------------

/// LayerNorm over the last axis; out, inp (N, C); mean, rstd (N); weight, bias (C); \p eps is
/// added to the variance. \p version v1: a thread per row; v2: a warp per row.
/// \throws vramlab::UsageError when N or C < 0.
template <class A>
void layernorm_forward(A* out, float* mean, float* rstd, const A* inp, const A* weight,
                       const A* bias, int64_t N, int64_t C, float eps,
                       KernelVersion version = KernelVersion::v2);
/// LayerNorm gradients, accumulated; shapes as layernorm_forward, dX like X. \p version v1: a
/// thread per row and per column; v2: a warp per row, and 32-column tiles reduced through shared
/// memory for dweight/dbias. \throws vramlab::UsageError when N or C < 0.
template <class A, class G>
void layernorm_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C,
                        KernelVersion version = KernelVersion::v2);
/// RMSNorm over the last axis; out, inp (N, C); rstd (N); weight (C); \p eps is added to the
/// mean square; \p version as layernorm_forward. \throws vramlab::UsageError when N or C < 0.
template <class A>
void rmsnorm_forward(A* out, float* rstd, const A* inp, const A* weight, int64_t N, int64_t C,
                     float eps, KernelVersion version = KernelVersion::v2);
/// RMSNorm gradients, accumulated; shapes as rmsnorm_forward, dX like X; \p version as
/// layernorm_backward. \throws vramlab::UsageError when N or C < 0.
template <class A, class G>
void rmsnorm_backward(A* dinp, G* dweight, const A* dout, const A* inp, const A* weight,
                      const float* rstd, int64_t N, int64_t C,
                      KernelVersion version = KernelVersion::v2);

// ---- softmax (softmax.cu) ------------------------------------------------------------------

/// Row softmax; out, inp (N, C). \p version v1: a thread per row; v2: a warp per row.
/// \throws vramlab::UsageError when N or C < 0.
void softmax_forward(float* out, const float* inp, int64_t N, int64_t C,
                     KernelVersion version = KernelVersion::v2);
/// dinp += out ⊙ (dout − Σ dout·out), per row; dinp, dout, out (the forward output) (N, C).
/// \p version as softmax_forward. \throws vramlab::UsageError when N or C < 0.
void softmax_backward(float* dinp, const float* dout, const float* out, int64_t N, int64_t C,
                      KernelVersion version = KernelVersion::v2);

// ---- fused softmax + cross-entropy (cross_entropy.cu) --------------------------------------

/// losses[row] = logsumexp(logits[row, :V]) − logits[row, target]. Columns V..Vp are padding
/// (Vp ≥ V). losses (N); logsumexp (N), saved for backward; probs (N, Vp) or nullptr; logits
/// (N, Vp); targets (N), device ints in [0, V). \p version v1: a thread per row; v2: a warp per
/// row. \throws vramlab::UsageError on a negative size, V < 1 with N > 0, or Vp < V. Targets are
/// not checked on the host (they live on the device); an out-of-range target stops the kernel with
/// a device error.
template <class A>
void cross_entropy_forward(float* losses, float* logsumexp, NoDeduce<A>* probs, const A* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp,
                           KernelVersion version = KernelVersion::v2);
/// dlogits[row, i] += dlosses[row] · (softmax(logits[row])[i] − [i == target]) for i < V
/// (padding untouched), one thread per element. dlogits, logits (N, Vp); dlosses, logsumexp (from
/// forward), targets (N). \throws as cross_entropy_forward.
void cross_entropy_backward(float* dlogits, const float* dlosses, const float* logits,
                            const float* logsumexp, const int32_t* targets, int64_t N, int64_t V,
                            int64_t Vp);
/// dlogits[row, i] = scale · (probs[row, i] − [i == target]) for i < V, WRITTEN (padding
/// untouched), one thread per element: the logits' gradient of scale · Σ losses from the saved
/// probabilities, so it may overwrite the logits in place. dlogits, probs (from forward) (N, Vp);
/// targets (N); \p scale e.g. 1/N for a mean loss. \throws as cross_entropy_forward.
template <class A>
void cross_entropy_dlogits(A* dlogits, const A* probs, const int32_t* targets, int64_t N, int64_t V,
                           int64_t Vp, float scale);

// ---- embedding (embedding.cu) --------------------------------------------------------------

/// out[b, t] = wte[tokens[b, t]] + wpe[t]; out (B, T, C), tokens (B, T) in [0, V), wte (V, C),
/// wpe (T, C) or nullptr (no position table). \throws vramlab::UsageError on a negative size; an
/// out-of-range token stops the kernel with a device error.
template <class A>
void embedding_forward(A* out, const int32_t* tokens, const A* wte, const NoDeduce<A>* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V);
/// dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += Σ_b dout[b, t]. Deterministic without atomics:
/// one thread per channel walks every position in order. Shapes as embedding_forward, dX like X;
/// dwpe may be nullptr. \throws as embedding_forward.
template <class A, class G>
void embedding_backward(G* dwte, NoDeduce<G>* dwpe, const A* dout, const int32_t* tokens, int64_t B,
                        int64_t T, int64_t C, int64_t V);

// ---- RoPE (rope.cu) ------------------------------------------------------------------------

/// Rotates each adjacent pair of every head vector by position · theta^(−2i/D) (angles in double,
/// as the CPU kernel); out (may alias inp), inp (B, T, H, D), D even; \p position_offset is the
/// position of t = 0. \throws vramlab::UsageError on a negative size, an odd D or theta <= 0.
template <class A>
void rope_forward(A* out, const A* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                  double theta = 10000.0, int64_t position_offset = 0);
/// dinp += rotate⁻¹(dout); dinp, dout (B, T, H, D); the rest as rope_forward.
/// \throws as rope_forward.
template <class A>
void rope_backward(A* dinp, const A* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                   double theta = 10000.0, int64_t position_offset = 0);

// ---- naive causal attention (attention.cu) -------------------------------------------------

/// Causal multi-head attention with grouped KV heads (Hkv divides H), materializing (B, H, T, T):
/// out, q (B, T, H, D); k, v (B, T, Hkv, D); preatt (B, H, T, T) scaled scores, −inf above the
/// diagonal; att (B, H, T, T) probabilities, 0 above the diagonal (before dropout); out may be
/// nullptr (only preatt and att are computed). \p dropout as the CPU kernel
/// (kernels/cpu/attention.h: the same mask bits). \throws vramlab::InternalError on a negative
/// size, Hkv not dividing H or a dropout probability outside [0, 1).
template <class A>
void attention_forward(NoDeduce<A>* out, A* preatt, A* att, const A* q, const A* k, const A* v,
                       int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const cpu::AttentionDropout& dropout = {});
/// Attention gradients: dq, dk, dv accumulated; dpreatt (B, H, T, T) scratch, written; att from
/// forward; \p dropout the forward's; every other shape as attention_forward, dX like X.
/// \throws as attention_forward.
template <class A>
void attention_backward(A* dq, A* dk, A* dv, A* dpreatt, const A* dout, const A* q, const A* k,
                        const A* v, const A* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                        int64_t D, const cpu::AttentionDropout& dropout = {});

// ---- flash attention (flash_attention.cu) --------------------------------------------------

/// Flash attention forward (kernels/cpu/flash_attention.h: the same maths, mask bits and lse):
/// out (B, T, H, D) written, lse (B, H, T) f32 written, q (B, T, H, D), k, v (B, T, Hkv, D); no
/// (B, H, T, T) tensor. \p version v1: one thread block per query tile of one (batch, head), one
/// thread per query row, plain global loads; v2: the K/V tile staged in shared memory, a warp per
/// group of rows with warp-shuffle reductions. \throws vramlab::InternalError on a negative size,
/// Hkv not dividing H, a dropout probability outside [0, 1) or D > 256 (each row's accumulators
/// live in registers; FlashAttention's own limit).
template <class A>
void flash_attention_forward(A* out, float* lse, const A* q, const A* k, const A* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const cpu::AttentionDropout& dropout = {},
                             KernelVersion version = KernelVersion::v2);
/// Flash attention backward: dq, dk, dv accumulated; delta (B, H, T) f32 scratch written
/// (rowsum(dout ∘ out)); out and lse are the forward's. Deterministic: dk/dv by one block per
/// key/value tile, then dq by one block per query tile (no atomics). \p version as the forward.
/// \throws as flash_attention_forward.
template <class A>
void flash_attention_backward(A* dq, A* dk, A* dv, float* delta, const A* dout, const A* q,
                              const A* k, const A* v, const A* out, const float* lse, int64_t B,
                              int64_t T, int64_t H, int64_t Hkv, int64_t D,
                              const cpu::AttentionDropout& dropout = {},
                              KernelVersion version = KernelVersion::v2);

// ---- reductions (reduction.cu) -------------------------------------------------------------

/// *out = Σ x over x (n), accumulated in double; \p out is one device double. \p version v1: one
/// thread walks x (the CPU loop); v2: one 1024-thread block, float4 loads, warp shuffles
/// (deterministic: fixed partition). \throws vramlab::UsageError when n < 0.
template <class A>
void sum(double* out, const A* x, int64_t n, KernelVersion version = KernelVersion::v2);
/// *out = Σ x² over x (n), accumulated in double; \p out and \p version as sum.
/// \throws vramlab::UsageError when n < 0.
void sum_of_squares(double* out, const float* x, int64_t n,
                    KernelVersion version = KernelVersion::v2);

// ---- optimizers (optimizer.cu) -------------------------------------------------------------

/// One AdamW step in place (bias corrections computed on the host in double); param, grad, m
/// (first moment), v (second moment) all (n); \p step 1-based. \p version v1: a thread per
/// element; v2: float4 loads and stores when all four buffers are 16-byte aligned.
/// \throws vramlab::UsageError when n < 0 or step < 1.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const cpu::AdamWHyperparameters& hp, int64_t step,
                  KernelVersion version = KernelVersion::v2);
/// One SGD step in place: g = grad + wd·param; with momentum buf = μ·buf + g and
/// g = nesterov ? g + μ·buf : buf; param −= lr·g. param, grad (n); momentum_buffer (n), or nullptr
/// when momentum == 0. \throws vramlab::UsageError when n < 0 or momentum != 0 without a buffer.
void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                const cpu::SgdHyperparameters& hp);

/// One AdamW step in place over mixed storage types (the optimizer of mixed precision): the update
/// is the float adamw_update's arithmetic on widened values with g = at.grad_multiplier · grad, and
/// each stored value (param, m, v) is rounded once. \p param P (float: fp32 or the master copy;
/// bf16_t: pure bf16), \p grad R (float, bf16_t, f16_t), \p m and \p v S (float or bf16_t), all
/// (n); \p working (n) is nullptr or the 16-bit working copy, of type \p working_type (bf16 or
/// f16), overwritten with round(param) after the update. \p version v1: a thread per element; v2:
/// four elements per thread with one vector load per buffer when every buffer is aligned to four
/// of its elements. \p at.rounding: how a bf16 \p param is rounded (stochastic rounding always
/// takes the v1 path). \throws vramlab::UsageError when n < 0, step < 1 or working_type is not
/// bf16 or f16 with a working copy.
template <class P, class R, class S>
void adamw_update(P* param, const R* grad, S* m, S* v, void* working, DType working_type, int64_t n,
                  const cpu::AdamWHyperparameters& hp, const cpu::UpdateStep& at,
                  KernelVersion version = KernelVersion::v2);
/// One SGD step in place over mixed storage types: sgd_update's arithmetic on widened values with
/// g = grad_multiplier · grad; types and \p working as the mixed adamw_update, \p momentum_buffer S
/// (n) or nullptr when momentum == 0; \p rounding as adamw_update's. \throws
/// vramlab::UsageError when n < 0, momentum != 0 without a buffer, or a bad working_type.
template <class P, class R, class S>
void sgd_update(P* param, const R* grad, NoDeduce<S>* momentum_buffer, void* working,
                DType working_type, int64_t n, const cpu::SgdHyperparameters& hp,
                const cpu::UpdateStep& at);

/// One Lion step in place (cpu::lion_update's arithmetic); types, \p working and \p rounding as
/// the mixed adamw_update; m S (n). \p version v1: a thread per element; v2: four elements per
/// thread. \throws vramlab::UsageError when n < 0 or a bad working_type.
template <class P, class R, class S>
void lion_update(P* param, const R* grad, S* m, void* working, DType working_type, int64_t n,
                 const cpu::LionHyperparameters& hp, const cpu::UpdateStep& at,
                 KernelVersion version = KernelVersion::v2);
/// One Adam-mini step in place over \p count blocks of \p block_size elements
/// (cpu::adam_mini_update's arithmetic; the block mean of g² summed in double in an order that
/// depends only on block_size, so the bits never depend on the schedule; block_size 1 is
/// adamw_update): m S (block_size × count), v S (count). \p version v1: a thread per block, in
/// element order; v2: a thread block per block (a warp below 256 elements), warp shuffles and
/// the warps' sums in order.
/// \throws vramlab::UsageError when block_size < 1, count < 0, step < 1 or a bad working_type.
template <class P, class R, class S>
void adam_mini_update(P* param, const R* grad, S* m, S* v, void* working, DType working_type,
                      int64_t block_size, int64_t count, const cpu::AdamWHyperparameters& hp,
                      const cpu::UpdateStep& at, KernelVersion version = KernelVersion::v2);
/// One Adafactor step on one tensor (cpu::adafactor_update's arithmetic; row and column means
/// and the RMS values reduced in a fixed order); row_var S (rows, or cols when unfactored),
/// col_var S (cols) or nullptr when unfactored. \p version v1: a thread per row / column / element
/// pass; v2: a warp per row with shuffle reductions. \throws vramlab::UsageError as the CPU
/// kernel, or a bad working_type.
template <class P, class R, class S>
void adafactor_update(P* param, const R* grad, S* row_var, NoDeduce<S>* col_var, void* working,
                      DType working_type, int64_t rows, int64_t cols, bool factored,
                      const cpu::AdafactorHyperparameters& hp, const cpu::UpdateStep& at,
                      KernelVersion version = KernelVersion::v2);
/// One 8-bit AdamW step on one tensor (cpu::adamw_8bit_update's arithmetic and codes; the maps
/// live in constant memory): qm, qv (n) u8; absmax_m, absmax_v (ceil(n / block)) f32. \p version
/// v1: a thread per quantization block; v2: a thread block per quantization block, the absmax by a
/// shared-memory reduction and the nearest code by binary search in a shared-memory copy of the
/// map. \throws vramlab::UsageError when n < 0, block < 1, step < 1 or a bad working_type.
template <class P, class R>
void adamw_8bit_update(P* param, const R* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                       float* absmax_v, void* working, DType working_type, int64_t n, int64_t block,
                       const cpu::AdamWHyperparameters& hp, const cpu::UpdateStep& at,
                       KernelVersion version = KernelVersion::v2);

// ---- casts and the loss scaler's check (cast.cu, check_gradients.cu) ----------------------

/// out = round(inp) into To (float, bf16_t or f16_t; nearest-even, overflow to ±inf, NaN kept as
/// NaN), one thread per element; out, inp (n). \throws vramlab::UsageError when n < 0.
template <class To, class From>
void cast(To* out, const From* inp, int64_t n);

/// The device doubles check_gradients needs at \p out: the result and the v1 per-block partials.
inline constexpr int64_t kCheckGradientsScratch = 1 + 64;

/// The loss scaler's check in one pass, gradients unchanged: out[0] = Σ (double)(multiplier·g)²
/// with multiplier·g computed in f32, so out[0] is ±inf or NaN exactly when some multiplier·g is
/// (a square is never negative, so nothing cancels an inf: found_inf = !isfinite(out[0])).
/// \p grads (n) of float, bf16_t or f16_t; \p out kCheckGradientsScratch device doubles.
/// \p version v1: a grid-stride loop, per-block partials summed by one thread in block order;
/// v2: one 1024-thread block, four-element vector loads, warp shuffles. Both are deterministic
/// (the partition depends only on n). \throws vramlab::UsageError when n < 0.
template <class T>
void check_gradients(double* out, const T* grads, int64_t n, float multiplier,
                     KernelVersion version = KernelVersion::v2);

// ---- GEMM (matmul.cu) ----------------------------------------------------------------------

/// out = inp · weightᵀ + bias: cuBLAS on a GPU (cublasGemmEx with 16-bit inputs and f32
/// compute for bf16/f16; the bias is broadcast into out first and added by the GEMM with beta 1,
/// so out is rounded once), OpenBLAS (kernels/cpu) under emulation (16-bit operands widened into
/// f32 host scratch outside any allocator, the result rounded once).
/// out (N, OC), inp (N, C), weight (OC, C), bias (OC) or nullptr.
/// \throws vramlab::UsageError on a negative size; on a GPU, std::runtime_error when cuBLAS fails.
template <class A>
void matmul_forward(A* out, const A* inp, const A* weight, const NoDeduce<A>* bias, int64_t N,
                    int64_t C, int64_t OC);
/// Gradients of matmul_forward, accumulated (beta 1: g = round(widen(g) + contribution)); shapes
/// as matmul_forward, dX like X; dinp and dbias may be nullptr; dweight and dbias are G (an f32
/// dweight from 16-bit operands is a GemmEx with an f32 output). \throws as matmul_forward.
template <class A, class G>
void matmul_backward(NoDeduce<A>* dinp, G* dweight, NoDeduce<G>* dbias, const A* dout, const A* inp,
                     const A* weight, int64_t N, int64_t C, int64_t OC);

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
