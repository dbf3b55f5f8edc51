/// \file
/// \brief Optimizer update kernels with fp32 states: AdamW (Loshchilov & Hutter, PyTorch's
/// torch.optim.AdamW semantics) and SGD with momentum (torch.optim.SGD, dampening 0). They are
/// elementwise: the optim layer calls them once per parameter tensor.
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

/// One AdamW step: param ← param·(1 - lr·wd) - lr·m̂/(√v̂ + eps), m̂ = m/(1-β1^step),
/// v̂ = v/(1-β2^step), after m ← β1·m + (1-β1)·g and v ← β2·v + (1-β2)·g². param, m (first
/// moment) and v (second moment) are (n) and updated; grad (n); \p step is 1 for the first step
/// (bias correction). \throws vramlab::UsageError when n < 0 or step < 1.
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step);

/// One SGD step: g ← grad + wd·param; buf ← momentum·buf + g; param -= lr·(nesterov ? g +
/// momentum·buf : buf). With momentum = 0 the buffer is not touched (it may be nullptr).
/// param, grad, momentum_buffer (n); the buffer starts at zero. \p momentum in [0, 1);
/// \p weight_decay is an L2 penalty added to the gradient (not AdamW's decoupled decay).
/// \throws vramlab::UsageError when n < 0, or momentum != 0 without a buffer.
void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov);

/// adamw_update on mixed storage (kernels/cpu/storage.h), with g = grad_multiplier · grad (the
/// loss scaler's 1/scale folded in, times a clipping coefficient). Every value is widened, the
/// update computed in f32 as the f32 kernel does, and each stored value (param, m, v) rounded once;
/// \p working, when not nullptr, is overwritten with round_W(the f32 updated param) (the
/// bf16/f16 working copy of an f32 master). All (n).
/// \tparam P param: float or bf16_t. \tparam Gr grad: float, bf16_t or f16_t.
/// \tparam S m and v: float or bf16_t. \tparam W working: bf16_t or f16_t.
/// \throws vramlab::UsageError when n < 0 or step < 1.
template <typename P, typename Gr, typename S, typename W>
void adamw_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step, float grad_multiplier);
/// sgd_update on mixed storage, with g = grad_multiplier · grad; types and \p working as
/// adamw_update's (momentum_buffer in S).
/// \tparam P param. \tparam Gr grad. \tparam S momentum buffer. \tparam W working copy.
/// \throws vramlab::UsageError when n < 0, or momentum != 0 without a buffer.
template <typename P, typename Gr, typename S, typename W>
void sgd_update(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov,
                float grad_multiplier);
/// Reference of adamw_update. \tparam Real float or double.
template <typename Real>
void adamw_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t n,
                            const AdamWHyperparameters& hp, int64_t step);
/// Reference of sgd_update. \tparam Real float or double.
template <typename Real>
void sgd_update_reference(Real* param, const Real* grad, Real* momentum_buffer, int64_t n,
                          Real learning_rate, Real momentum, Real weight_decay, bool nesterov);

}  // namespace vramlab::kernels::cpu
