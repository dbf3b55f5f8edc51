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

/// The launchers of one build (see VRAMLAB_CUDA_OPS_ABI).
inline namespace VRAMLAB_CUDA_OPS_ABI {

/// \param version a version. \return "v1" or "v2".
const char* kernel_version_name(KernelVersion version);

// ---- elementwise (elementwise.cu) ----------------------------------------------------------

/// out = a + b. \param out (n) \param a (n) \param b (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void residual_forward(float* out, const float* a, const float* b, int64_t n);
/// da += dout, db += dout. \param da (n) \param db (n) \param dout (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void residual_backward(float* da, float* db, const float* dout, int64_t n);
/// x[row, c] += bias[c] in place. \param x (N, C) \param bias (C) \param N rows \param C columns.
/// \throws vramlab::UsageError when N or C < 0.
void bias_add_forward(float* x, const float* bias, int64_t N, int64_t C);
/// dbias[c] += Σ_row dout[row, c] (one thread per column, rows in order).
/// \param dbias (C) \param dout (N, C) \param N rows \param C columns.
/// \throws vramlab::UsageError when N or C < 0.
void bias_add_backward(float* dbias, const float* dout, int64_t N, int64_t C);
/// out = scale · inp. \param out (n) \param inp (n) \param scale factor \param n elements.
/// \throws vramlab::UsageError when n < 0.
void scale_forward(float* out, const float* inp, float scale, int64_t n);
/// dinp += scale · dout. \param dinp (n) \param dout (n) \param scale factor \param n elements.
/// \throws vramlab::UsageError when n < 0.
void scale_backward(float* dinp, const float* dout, float scale, int64_t n);

// ---- activations (activation.cu) -----------------------------------------------------------

/// GELU, tanh approximation (GPT-2). \param out (n) \param inp (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void gelu_forward(float* out, const float* inp, int64_t n);
/// dinp += GELU'(inp) · dout. \param dinp (n) \param inp (n) \param dout (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);
/// SiLU: out = inp · σ(inp). \param out (n) \param inp (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void silu_forward(float* out, const float* inp, int64_t n);
/// dinp += SiLU'(inp) · dout. \param dinp (n) \param inp (n) \param dout (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void silu_backward(float* dinp, const float* inp, const float* dout, int64_t n);
/// SwiGLU: out = SiLU(gate) · up. \param out (n) \param gate (n) \param up (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n);
/// dgate += SiLU'(gate) · up · dout, dup += SiLU(gate) · dout.
/// \param dgate (n) \param dup (n) \param dout (n) \param gate (n) \param up (n) \param n elements.
/// \throws vramlab::UsageError when n < 0.
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n);

// ---- normalization (normalization.cu) ------------------------------------------------------

/// LayerNorm over the last axis. \param out (N, C) \param mean (N) \param rstd (N)
/// \param inp (N, C) \param weight (C) \param bias (C) \param N rows \param C channels
/// \param eps added to the variance. \param version v1: a thread per row; v2: a warp per row.
/// \throws vramlab::UsageError when N or C < 0.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps,
                       KernelVersion version = KernelVersion::v2);
/// LayerNorm gradients, accumulated. \param dinp (N, C) \param dweight (C) \param dbias (C)
/// \param dout (N, C) \param inp (N, C) \param weight (C) \param mean (N) \param rstd (N)
/// \param N rows \param C channels. \param version v1: a thread per row and per column; v2: a warp
/// per row, and 32-column tiles reduced through shared memory for dweight/dbias.
/// \throws vramlab::UsageError when N or C < 0.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int64_t C, KernelVersion version = KernelVersion::v2);
/// RMSNorm over the last axis. \param out (N, C) \param rstd (N) \param inp (N, C)
/// \param weight (C) \param N rows \param C channels \param eps added to the mean square.
/// \param version as layernorm_forward. \throws vramlab::UsageError when N or C < 0.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps, KernelVersion version = KernelVersion::v2);
/// RMSNorm gradients, accumulated. \param dinp (N, C) \param dweight (C) \param dout (N, C)
/// \param inp (N, C) \param weight (C) \param rstd (N) \param N rows \param C channels.
/// \param version as layernorm_backward. \throws vramlab::UsageError when N or C < 0.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C,
                      KernelVersion version = KernelVersion::v2);

// ---- softmax (softmax.cu) ------------------------------------------------------------------

/// Row softmax. \param out (N, C) \param inp (N, C) \param N rows \param C columns.
/// \param version v1: a thread per row; v2: a warp per row. \throws vramlab::UsageError when N or
/// C < 0.
void softmax_forward(float* out, const float* inp, int64_t N, int64_t C,
                     KernelVersion version = KernelVersion::v2);
/// dinp += out ⊙ (dout − Σ dout·out), per row. \param dinp (N, C) \param dout (N, C)
/// \param out (N, C) the forward output \param N rows \param C columns.
/// \param version as softmax_forward. \throws vramlab::UsageError when N or C < 0.
void softmax_backward(float* dinp, const float* dout, const float* out, int64_t N, int64_t C,
                      KernelVersion version = KernelVersion::v2);

// ---- fused softmax + cross-entropy (cross_entropy.cu) --------------------------------------

/// losses[row] = logsumexp(logits[row, :V]) − logits[row, target]. Columns V..Vp are padding.
/// \param losses (N) \param logsumexp (N) saved for backward \param probs (N, Vp) or nullptr
/// \param logits (N, Vp) \param targets (N) device ints in [0, V) \param N rows \param V classes
/// \param Vp padded row length (>= V). \param version v1: a thread per row; v2: a warp per row.
/// \throws vramlab::UsageError on a negative size, V < 1 with N > 0, or Vp < V. Targets are not
/// checked on the host (they live on the device); an out-of-range target stops the kernel with a
/// device error.
void cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp,
                           KernelVersion version = KernelVersion::v2);
/// dlogits[row, i] += dlosses[row] · (softmax(logits[row])[i] − [i == target]) for i < V
/// (padding untouched), one thread per element. \param dlogits (N, Vp) \param dlosses (N)
/// \param logits (N, Vp) \param logsumexp (N) from forward \param targets (N) \param N rows
/// \param V classes \param Vp padded row length. \throws as cross_entropy_forward.
void cross_entropy_backward(float* dlogits, const float* dlosses, const float* logits,
                            const float* logsumexp, const int32_t* targets, int64_t N, int64_t V,
                            int64_t Vp);
/// dlogits[row, i] = scale · (probs[row, i] − [i == target]) for i < V, WRITTEN (padding
/// untouched), one thread per element: the logits' gradient of scale · Σ losses from the saved
/// probabilities, so it may overwrite the logits in place. \param dlogits (N, Vp)
/// \param probs (N, Vp) from forward \param targets (N) \param N rows \param V classes
/// \param Vp padded row length \param scale e.g. 1/N for a mean loss. \throws as
/// cross_entropy_forward.
void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets, int64_t N,
                           int64_t V, int64_t Vp, float scale);

// ---- embedding (embedding.cu) --------------------------------------------------------------

/// out[b, t] = wte[tokens[b, t]] + wpe[t]. \param out (B, T, C) \param tokens (B, T) in [0, V)
/// \param wte (V, C) \param wpe (T, C) or nullptr (no position table) \param B batch \param T time
/// \param C channels \param V vocabulary. \throws vramlab::UsageError on a negative size; an
/// out-of-range token stops the kernel with a device error.
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V);
/// dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += Σ_b dout[b, t]. Deterministic without atomics:
/// one thread per channel walks every position in order. \param dwte (V, C) \param dwpe (T, C)
/// or nullptr \param dout (B, T, C) \param tokens (B, T) \param B batch \param T time
/// \param C channels \param V vocabulary. \throws as embedding_forward.
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int64_t B, int64_t T, int64_t C, int64_t V);

// ---- RoPE (rope.cu) ------------------------------------------------------------------------

/// Rotates each adjacent pair of every head vector by position · theta^(−2i/D) (angles in double,
/// as the CPU kernel). \param out (B, T, H, D) may alias inp \param inp (B, T, H, D)
/// \param B batch \param T time \param H heads \param D head size (even) \param theta base
/// \param position_offset position of t = 0. \throws vramlab::UsageError on a negative size, an odd
/// D or theta <= 0.
void rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                  double theta = 10000.0, int64_t position_offset = 0);
/// dinp += rotate⁻¹(dout). \param dinp (B, T, H, D) \param dout (B, T, H, D) \param B batch
/// \param T time \param H heads \param D head size (even) \param theta base
/// \param position_offset position of t = 0. \throws as rope_forward.
void rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                   double theta = 10000.0, int64_t position_offset = 0);

// ---- naive causal attention (attention.cu) -------------------------------------------------

/// Causal multi-head attention with grouped KV heads, materializing (B, H, T, T).
/// \param out (B, T, H, D) \param preatt (B, H, T, T) scaled scores, −inf above the diagonal
/// \param att (B, H, T, T) probabilities, 0 above the diagonal \param q (B, T, H, D)
/// \param k (B, T, Hkv, D) \param v (B, T, Hkv, D) \param B batch \param T time \param H heads
/// \param Hkv kv heads (divides H) \param D head size.
/// \throws vramlab::UsageError on a negative size or Hkv not dividing H.
void attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                       const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D);
/// Attention gradients: dq, dk, dv accumulated; dpreatt (scratch) written.
/// \param dq (B, T, H, D) \param dk (B, T, Hkv, D) \param dv (B, T, Hkv, D)
/// \param dpreatt (B, H, T, T) scratch \param dout (B, T, H, D) \param q (B, T, H, D)
/// \param k (B, T, Hkv, D) \param v (B, T, Hkv, D) \param att (B, H, T, T) from forward
/// \param B batch \param T time \param H heads \param Hkv kv heads \param D head size.
/// \throws as attention_forward.
void attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                        const float* q, const float* k, const float* v, const float* att, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t D);

// ---- reductions (reduction.cu) -------------------------------------------------------------

/// *out = Σ x, accumulated in double. \param out (1) device double \param x (n) \param n elements.
/// \param version v1: one thread walks x (the CPU loop); v2: one 1024-thread block, float4 loads,
/// warp shuffles (deterministic: fixed partition). \throws vramlab::UsageError when n < 0.
void sum(double* out, const float* x, int64_t n, KernelVersion version = KernelVersion::v2);
/// *out = Σ x², accumulated in double. \param out (1) device double \param x (n)
/// \param n elements. \param version as sum. \throws vramlab::UsageError when n < 0.
void sum_of_squares(double* out, const float* x, int64_t n,
                    KernelVersion version = KernelVersion::v2);

// ---- optimizers (optimizer.cu) -------------------------------------------------------------

/// One AdamW step in place (bias corrections computed on the host in double).
/// \param param (n) \param grad (n) \param m (n) first moment \param v (n) second moment
/// \param n elements \param hp hyperparameters \param step 1-based step.
/// \param version v1: a thread per element; v2: float4 loads and stores when all four buffers are
/// 16-byte aligned. \throws vramlab::UsageError when n < 0 or step < 1.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const cpu::AdamWHyperparameters& hp, int64_t step,
                  KernelVersion version = KernelVersion::v2);
/// One SGD step in place: g = grad + wd·param; with momentum buf = μ·buf + g and
/// g = nesterov ? g + μ·buf : buf; param −= lr·g. \param param (n) \param grad (n)
/// \param momentum_buffer (n), or nullptr when momentum == 0 \param n elements
/// \param learning_rate lr \param momentum μ \param weight_decay wd \param nesterov Nesterov form.
/// \throws vramlab::UsageError when n < 0 or momentum != 0 without a buffer.
void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov);

// ---- GEMM (matmul.cu) ----------------------------------------------------------------------

/// out = inp · weightᵀ + bias: cuBLAS on a GPU, OpenBLAS (kernels/cpu) under emulation.
/// \param out (N, OC) \param inp (N, C) \param weight (OC, C) \param bias (OC) or nullptr
/// \param N rows \param C input features \param OC output features.
/// \throws vramlab::UsageError on a negative size; on a GPU, std::runtime_error when cuBLAS fails.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC);
/// Gradients of matmul_forward, accumulated. \param dinp (N, C) or nullptr \param dweight (OC, C)
/// \param dbias (OC) or nullptr \param dout (N, OC) \param inp (N, C) \param weight (OC, C)
/// \param N rows \param C input features \param OC output features. \throws as matmul_forward.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int64_t C, int64_t OC);

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
