/// \file
/// \brief Optimizer update kernels: AdamW (Loshchilov & Hutter, PyTorch's torch.optim.AdamW
/// semantics), SGD with momentum (torch.optim.SGD, dampening 0), Lion (Chen et al. 2023),
/// Adam-mini (Zhang et al. 2024) and Adafactor (Shazeer & Stern 2018, torch.optim.Adafactor
/// semantics). AdamW, SGD and Lion are elementwise and run once over the whole parameter store;
/// Adam-mini and Adafactor reduce over blocks or whole tensors, so the optim layer calls them once
/// per parameter tensor (or per run of equal blocks inside one). The 8-bit AdamW is in
/// kernels/cpu/optimizer_8bit.h. Every kernel's result is independent of the thread count (its
/// sums have a fixed order). Their arguments come from the runtime, so a bad size or step is a
/// caller's bug: vramlab::InternalError naming the value (kernels/cpu/kernel_checks.h).
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// Hyper-parameters of one AdamW step.
struct AdamWHyperparameters {
  float learning_rate = 1e-3f;  ///< step size
  float beta1 = 0.9f;           ///< decay of the first moment
  float beta2 = 0.999f;         ///< decay of the second moment
  float epsilon = 1e-8f;        ///< added to √v̂
  float weight_decay = 0.0f;    ///< decoupled: param *= 1 - lr·weight_decay
};

/// How an update rounds a 16-bit parameter it writes in place (pure 16-bit training, where no fp32
/// master keeps the updates): to nearest-even, as model.to(torch.bfloat16) with torch.optim does,
/// or stochastically. Rounded to nearest, an update smaller than half the parameter's ulp is lost
/// every time (a bf16 weight near 1.0 has an ulp of 2^-7, so an Adam step of lr = 1e-3 never moves
/// it); rounded stochastically up with probability (dropped fraction of an ulp), the stored value
/// is x on average, so small updates accumulate (Gupta et al. 2015, "Deep Learning with Limited
/// Numerical Precision", §3).
struct ParameterRounding {
  bool stochastic = false;  ///< false: nearest-even
  uint64_t seed = 0;        ///< the random bits of element i: stochastic_bits(seed, i)
};

/// What changes from one optimizer step to the next, as every update kernel takes it beside its
/// hyper-parameters. One struct, so that a new per-step argument is a field here rather than a
/// parameter in each kernel, backend and optimizer signature.
struct UpdateStep {
  int64_t step = 1;  ///< 1 for the first step (bias corrections; SGD and Lion have none)
  float grad_multiplier = 1.0f;  ///< g = grad_multiplier · grad (1/scale times a clip coefficient)
  ParameterRounding rounding{};  ///< how a 16-bit param is rounded (an f32 param is exact)
};

/// Hyper-parameters of one SGD step (torch.optim.SGD, dampening 0).
struct SgdHyperparameters {
  float learning_rate = 1e-3f;  ///< step size (torch.optim.SGD's default)
  float momentum = 0.0f;        ///< in [0, 1); 0: no momentum buffer
  float weight_decay = 0.0f;    ///< an L2 penalty added to the gradient (not decoupled)
  bool nesterov = false;        ///< Nesterov momentum
};

/// One AdamW step: param ← param·(1 - lr·wd) - lr·m̂/(√v̂ + eps), m̂ = m/(1-β1^step),
/// v̂ = v/(1-β2^step), after m ← β1·m + (1-β1)·g and v ← β2·v + (1-β2)·g². param, m (first
/// moment) and v (second moment) are (n) and updated; grad (n); \p step is 1 for the first step
/// (bias correction). \throws vramlab::InternalError when n < 0 or step < 1.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step);

/// One SGD step: g ← grad + wd·param; buf ← momentum·buf + g; param -= lr·(nesterov ? g +
/// momentum·buf : buf). With momentum = 0 the buffer is not touched (it may be nullptr).
/// param, grad, momentum_buffer (n); the buffer starts at zero.
/// \throws vramlab::InternalError when n < 0, or momentum != 0 without a buffer.
void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                const SgdHyperparameters& hp);

/// adamw_update on mixed storage (kernels/cpu/storage.h), with g = at.grad_multiplier · grad (the
/// loss scaler's 1/scale folded in, times a clipping coefficient). Every value is widened, the
/// update computed in f32 as the f32 kernel does, and each stored value (param, m, v) rounded once;
/// \p working, when not nullptr, is overwritten with round_W(the f32 updated param) (the
/// bf16/f16 working copy of an f32 master). All (n).
/// \tparam P param: float or bf16_t. \tparam Gr grad: float, bf16_t or f16_t.
/// \tparam S m and v: float or bf16_t. \tparam W working: bf16_t or f16_t.
/// \p at.rounding applies to a 16-bit param (P = bf16_t); a float param is always exact.
/// \throws vramlab::InternalError when n < 0 or at.step < 1.
template <typename P, typename Gr, typename S, typename W>
void adamw_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                  const AdamWHyperparameters& hp, const UpdateStep& at);
/// sgd_update on mixed storage, with g = at.grad_multiplier · grad; types and \p working as
/// adamw_update's (momentum_buffer in S).
/// \tparam P param. \tparam Gr grad. \tparam S momentum buffer. \tparam W working copy.
/// \throws vramlab::InternalError when n < 0, or momentum != 0 without a buffer.
template <typename P, typename Gr, typename S, typename W>
void sgd_update(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
                const SgdHyperparameters& hp, const UpdateStep& at);
/// Hyper-parameters of one Lion step (Chen et al. 2023, "Symbolic Discovery of Optimization
/// Algorithms", Algorithm 2; the defaults of the paper's reference implementation). Its learning
/// rate is usually 3–10x smaller than AdamW's and its weight decay 3–10x larger.
struct LionHyperparameters {
  float learning_rate = 1e-4f;  ///< step size
  float beta1 = 0.9f;           ///< interpolation of the update direction
  float beta2 = 0.99f;          ///< decay of the momentum
  float weight_decay = 0.0f;    ///< decoupled: param *= 1 - lr·weight_decay
};

/// One Lion step with g = at.grad_multiplier · grad: c = β1·m + (1-β1)·g; param ← param·(1 - lr·wd)
/// - lr·sign(c) (sign(0) = 0, sign(NaN) = NaN); then m ← β2·m + (1-β2)·g. One state, the
/// momentum m. param P, grad Gr, m S, working W, all (n); types, \p working and \p rounding as
/// adamw_update's. \throws vramlab::InternalError when n < 0.
template <typename P, typename Gr, typename S, typename W>
void lion_update(P* param, const Gr* grad, S* m, W* working, int64_t n,
                 const LionHyperparameters& hp, const UpdateStep& at);

/// One Adam-mini step over \p count blocks of \p block_size consecutive elements (Zhang et al.
/// 2024, "Adam-mini: Use Fewer Learning Rates To Gain More", Algorithm 1), with g =
/// at.grad_multiplier · grad: m ← β1·m + (1-β1)·g per element; per block b, v[b] ← β2·v[b] +
/// (1-β2)·mean(g² over block b), the mean summed in double (each g² exact, a fixed order) and
/// rounded once to f32; then param ← param·(1 - lr·wd) - lr·m̂/(√v̂[b] + eps) with AdamW's bias
/// corrections, in adamw_update's f32 arithmetic. With block_size 1 (one v per element) this is
/// adamw_update, bit for bit. param P, grad Gr, m S, working W: (block_size × count); v S:
/// (count). Types, \p working and \p rounding as adamw_update's.
/// \throws vramlab::InternalError when block_size < 1, count < 0, block_size · count overflows,
/// or step < 1.
template <typename P, typename Gr, typename S, typename W>
void adam_mini_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t block_size,
                      int64_t count, const AdamWHyperparameters& hp, const UpdateStep& at);

/// Hyper-parameters of one Adafactor step, torch.optim.Adafactor's names and defaults (PyTorch
/// 2.5+): no first moment, a relative step size.
struct AdafactorHyperparameters {
  float learning_rate = 1e-2f;  ///< γ: ρ_t = min(γ, 1/√t)
  float beta2_decay = -0.8f;    ///< τ: β2_t = 1 - t^τ
  float epsilon1 = -1.0f;       ///< ε1 floor of √V̂; < 0 means None: the f32 machine epsilon
  float epsilon2 = 1e-3f;       ///< ε2 floor of RMS(param) in α_t
  float clip_threshold = 1.0f;  ///< d: Û = U / max(1, RMS(U)/d)
  float weight_decay = 0.0f;    ///< decoupled: param *= 1 - γ·weight_decay
};

/// One Adafactor step on ONE parameter tensor (torch.optim.Adafactor's algorithm), with g =
/// at.grad_multiplier · grad. Factored (\p factored true, a matrix of rows × cols): row_var (rows)
/// and col_var (cols) are lerped (torch.lerp, weight 1 - β2_t) towards the row and column means
/// of g², and V̂ = row_var ⊗ col_var / max(mean(row_var), ε1). Unfactored (a vector, rows = 1):
/// \p row_var is the full (cols) variance, lerped towards g², and \p col_var is unused (may be
/// nullptr). Then U = g / √max(V̂, ε1²), Û = U / max(1, RMS(U)/d), α = max(ε2, RMS(param before
/// the step))·ρ_t, param ← param·(1 - γ·wd) - α·Û. Where it differs from PyTorch: the means of
/// g², mean(row_var) and the RMS values are summed in double (PyTorch: in the parameter's
/// dtype), and ε1 = None is the f32 machine epsilon whatever P (PyTorch: the parameter dtype's,
/// 2^-7 for a bf16 parameter), since the arithmetic here is f32. param P, grad Gr, working W:
/// (rows × cols); row_var, col_var S. \throws vramlab::InternalError when rows < 1 or cols < 1
/// (an empty tensor is not a parameter), rows · cols overflows, step < 1, or rows != 1 when
/// unfactored.
template <typename P, typename Gr, typename S, typename W>
void adafactor_update(P* param, const Gr* grad, S* row_var, S* col_var, W* working, int64_t rows,
                      int64_t cols, bool factored, const AdafactorHyperparameters& hp,
                      const UpdateStep& at);

/// Reference of adamw_update. \tparam Real float or double.
template <typename Real>
void adamw_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t n,
                            const AdamWHyperparameters& hp, int64_t step);
/// Reference of sgd_update. \tparam Real float or double.
template <typename Real>
void sgd_update_reference(Real* param, const Real* grad, Real* momentum_buffer, int64_t n,
                          Real learning_rate, Real momentum, Real weight_decay, bool nesterov);
/// Reference of lion_update (plain loop, g = grad). \tparam Real float or double.
template <typename Real>
void lion_update_reference(Real* param, const Real* grad, Real* m, int64_t n,
                           const LionHyperparameters& hp);
/// Reference of adam_mini_update (plain loops, g = grad, the block mean summed in Real; no
/// special case for block_size 1).
/// \tparam Real float or double.
template <typename Real>
void adam_mini_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t block_size,
                                int64_t count, const AdamWHyperparameters& hp, int64_t step);
/// Reference of adafactor_update (plain loops, g = grad, every sum in Real, the lerp as
/// start + w·(end - start)). \tparam Real float or double.
template <typename Real>
void adafactor_update_reference(Real* param, const Real* grad, Real* row_var, Real* col_var,
                                int64_t rows, int64_t cols, bool factored,
                                const AdafactorHyperparameters& hp, int64_t step);

}  // namespace vramlab::kernels::cpu
