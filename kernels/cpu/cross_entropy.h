/// \file
/// \brief Fused softmax + cross-entropy over a (possibly padded) vocabulary, forward and backward.
///
/// Logits rows have Vp columns of which the first V are real tokens (llm.c pads the vocabulary to
/// a multiple of 64 or 128 for faster GEMMs); padded columns are ignored by the forward and left
/// untouched by the backward. The forward saves each row's logsumexp so the backward recomputes
/// probabilities as exp(logit - logsumexp) instead of storing an (N, Vp) probability tensor.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// losses[row] = logsumexp(logits[row, :V]) - logits[row, target]. N = B·T rows; V ≥ 1 real
/// classes when N > 0, Vp ≥ V the row stride.
/// - losses    (N) per-token loss, written.
/// - logsumexp (N) saved for the backward, written.
/// - probs     (N, Vp) softmax probabilities (padded columns set to 0), or nullptr to skip.
/// - logits    (N, Vp)
/// - targets   (N) token ids in [0, V).
/// \throws vramlab::UsageError on a bad size or a target outside [0, V).
void cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp);
/// dlogits[row, i] += dlosses[row] · (softmax_i - [i == target]) for i < V; columns V..Vp-1 of
/// dlogits (N, Vp) untouched. dlosses (N) is each row's loss gradient (1/N for a mean loss);
/// logits (N, Vp), logsumexp (N) from the forward, targets (N).
/// \throws vramlab::UsageError on a bad size or a target outside [0, V).
void cross_entropy_backward(float* dlogits, const float* dlosses, const float* logits,
                            const float* logsumexp, const int32_t* targets, int64_t N, int64_t V,
                            int64_t Vp);
/// dlogits[row, i] = scale · (probs[row, i] - [i == target]) for i < V, WRITTEN: the logits'
/// gradient of scale · Σ losses from the forward's probabilities, so dlogits may be the logits
/// themselves (the nn layer overwrites them in place). dlogits, probs (N, Vp), columns V..Vp-1 of
/// dlogits untouched; targets (N); \p scale e.g. 1/N for a mean loss.
/// \throws vramlab::UsageError on a bad size or a target outside [0, V).
void cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets, int64_t N,
                           int64_t V, int64_t Vp, float scale);

/// cross_entropy_forward with logits and probs in storage A (kernels/cpu/storage.h); losses and
/// logsumexp f32, everything computed in f32, probs rounded once.
/// \tparam A float, bf16_t or f16_t. \throws as cross_entropy_forward.
template <typename A>
void cross_entropy_forward(float* losses, float* logsumexp, A* probs, const A* logits,
                           const int32_t* targets, int64_t N, int64_t V, int64_t Vp);
/// cross_entropy_dlogits on storage A: dlogits = round_A(scale · (probs − onehot)).
/// \tparam A float, bf16_t or f16_t. \throws as cross_entropy_dlogits.
template <typename A>
void cross_entropy_dlogits(A* dlogits, const A* probs, const int32_t* targets, int64_t N, int64_t V,
                           int64_t Vp, float scale);
/// Reference of cross_entropy_forward (std::exp, std::log). \tparam Real float or double.
template <typename Real>
void cross_entropy_forward_reference(Real* losses, Real* logsumexp, Real* probs, const Real* logits,
                                     const int32_t* targets, int64_t N, int64_t V, int64_t Vp);
/// Reference of cross_entropy_backward. \tparam Real float or double.
template <typename Real>
void cross_entropy_backward_reference(Real* dlogits, const Real* dlosses, const Real* logits,
                                      const Real* logsumexp, const int32_t* targets, int64_t N,
                                      int64_t V, int64_t Vp);

}  // namespace vramlab::kernels::cpu
