/// \file
/// \brief ZeRO-Infinity's memory model and its efficiency model for offloaded data, as the paper
/// states them (Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme
/// Scale Deep Learning", SC21, arXiv 2104.07857, §3 and §4), so the offload lesson can say how
/// much each offloaded quantity needs and how fast its link must be.
///
/// The paper's transformer is nl layers of hidden size hd (Ψ = 12·nl·hd² parameters: four hd×hd
/// attention matrices and two hd×4hd MLP matrices per layer; embeddings, norms and biases left
/// out), trained with mixed precision and Adam. Its Fig. 2a tabulates these quantities for models
/// of 0.1T to 100T parameters; tests/estimate/test_zero_infinity.cpp reproduces the table.
///
/// Efficiency (§4): a step computes 2·4·bsz·seq·Ψ FLOPs (forward, backward twice, recompute once)
/// and must move some data over a link of bandwidth bw while a device of peak throughput peak_tp
/// computes; with arithmetic intensity ait = FLOPs / bytes moved, the paper models the fraction of
/// peak reached as ait·bw / (ait·bw + peak_tp): the compute time over compute plus the transfer
/// time, nothing overlapped.
#pragma once

#include <cstdint>

namespace vramlab::estimate::zero_infinity {

/// The paper's model shape.
struct Shape {
  int64_t layers = 0;  ///< nl
  int64_t hidden = 0;  ///< hd
  int64_t heads = 0;   ///< attention heads (only the activation working memory uses them)
};

/// Ψ = 12·nl·hd² (eq. 1). \throws vramlab::UsageError for sizes ≤ 0 or an int64 overflow.
int64_t parameters(const Shape& shape);

/// Model states: 240·nl·hd² bytes = 20 bytes per parameter (fp16 parameter and gradient, fp32
/// parameter, momentum, variance and gradient). \throws vramlab::UsageError as parameters().
int64_t model_state_bytes(const Shape& shape);

/// Activation checkpoints, one per ci blocks: 2·bsz·seq·hd·nl / ci bytes (eq. 3; fp16).
/// \param shape the model. \param batch bsz (≥ 1). \param seq sequence length (≥ 1).
/// \param ci blocks between two checkpoints (≥ 1). \throws vramlab::UsageError for sizes ≤ 0 or
/// an overflow.
int64_t activation_checkpoint_bytes(const Shape& shape, int64_t batch, int64_t seq, int64_t ci);

/// Model-state working memory: the fp16 parameter and gradient of the largest linear (hd × 4hd),
/// 4·hd·4hd = 16·hd² bytes: what must fit on the device for one operator to run.
/// \throws vramlab::UsageError as parameters().
int64_t model_state_working_bytes(const Shape& shape);

/// Activation working memory: bsz·seq·ci·(16·hd + 2·heads·seq) bytes, the activations of the ci
/// blocks recomputed between two checkpoints. \throws vramlab::UsageError as above.
int64_t activation_working_bytes(const Shape& shape, int64_t batch, int64_t seq, int64_t ci);

/// Fig. 2a's "Act." column, the activations kept without checkpointing. The paper prints it
/// without a formula; every row equals 2·nl·activation_working_bytes(ci = 1), which this returns.
/// \throws vramlab::UsageError as above.
int64_t full_activation_bytes(const Shape& shape, int64_t batch, int64_t seq);

/// ait of the fp16 parameters and gradients: the parameters are loaded for the forward, the
/// backward and the recompute and the gradients stored once, 4·Ψ fp16 values = 8·Ψ bytes per
/// 8·bsz·seq·Ψ FLOPs: seq·bsz FLOPs per byte.
double parameter_gradient_intensity(int64_t batch, int64_t seq);

/// ait of the optimizer states (fp32 parameter, momentum, variance and gradient, 16·Ψ bytes, read
/// and written once a step): 8·bsz·seq·Ψ / 32·Ψ = seq·bsz / 4 FLOPs per byte.
double optimizer_state_intensity(int64_t batch, int64_t seq);

/// ait of ZeRO-Offload's traffic in this model (Ren et al., "ZeRO-Offload", ATC 2021, §4.1: the
/// least a step can move once the optimizer runs on the CPU is the 16-bit gradients down and the
/// 16-bit parameters up, 4·Ψ bytes): 8·bsz·seq·Ψ FLOPs with the forward recomputed, as the paper
/// counts, else 6·bsz·seq·Ψ, over 4·Ψ bytes: 2·seq·bsz or 1.5·seq·bsz FLOPs per byte.
/// \param batch bsz (≥ 1). \param seq (≥ 1). \param recompute whether the backward recomputes
/// the forward. \throws vramlab::UsageError for sizes ≤ 0 or an overflow.
double offloaded_optimizer_intensity(int64_t batch, int64_t seq, bool recompute);

/// ait of the activation checkpoints (written in the forward and read in the backward,
/// 2·activation_checkpoint_bytes): 8·bsz·seq·12·nl·hd² / (4·bsz·seq·hd·nl / ci) = 24·hd·ci
/// FLOPs per byte.
double activation_checkpoint_intensity(int64_t hidden, int64_t ci);

/// The fraction of peak a device keeps when every step moves data of intensity \p ait over a link
/// of \p bytes_per_s: ait·bw / (ait·bw + peak). In [0, 1).
/// \throws vramlab::UsageError for a negative or non-finite argument or ait·bw + peak = 0.
double efficiency(double ait, double bytes_per_s, double peak_flops);

/// The inverse: the link bandwidth at which data of intensity \p ait keeps \p fraction of peak,
/// fraction·peak / (ait·(1 − fraction)). \param ait FLOPs per byte moved (> 0).
/// \param peak_flops the device's peak FLOP/s (> 0). \param fraction in [0, 1).
/// \throws vramlab::UsageError for a fraction outside [0, 1) or a non-positive ait or peak.
double bandwidth_for_efficiency(double ait, double peak_flops, double fraction);

}  // namespace vramlab::estimate::zero_infinity
