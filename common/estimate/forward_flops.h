/// \file
/// \brief Forward FLOPs of the runtime's blocks and head, as its kernels compute them: the cost
/// side of gradient checkpointing (a recomputed block costs its forward again).
///
/// A matmul (M × K)·(K × N) counts 2MKN. The runtime's causal attention computes only the scores
/// of keys t2 ≤ t, so QKᵀ and AV each count B·C·T(T+1) (H heads × D = C), about half of the
/// 2BT²C that papers count for full attention (Korthikanti et al. 2022, §4, count the full
/// square). Elementwise work (norms, GELU/SwiGLU, softmax, residual adds) is left out: under 1% of
/// a block's FLOPs at C ≥ 256.
#pragma once

#include "common/model/model_config.h"

namespace vramlab::estimate {

/// FLOPs of one block's forward at batch \p B and sequence \p T: projections, attention, MLP.
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1.
/// \return the count (a double: 70B models at long context pass 2^63 only in products of counts).
double block_forward_flops(const ModelConfig& model, int64_t B, int64_t T);

/// FLOPs of recomputing one block's attention probabilities (QKᵀ; the softmax is elementwise),
/// what a selective recompute re-runs: B·C·T(T+1).
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1. \return the count.
double attention_scores_flops(const ModelConfig& model, int64_t B, int64_t T);

/// FLOPs of the whole forward: the blocks and the LM head (2·B·T·C·V); the embedding is a lookup.
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1. \return the count.
double model_forward_flops(const ModelConfig& model, int64_t B, int64_t T);

}  // namespace vramlab::estimate
