/// \file
/// \brief The activations this workbook's training runtime saves for backward, tensor by tensor:
/// the "runtime layout" column of `vramlab estimate`, beside Korthikanti et al.'s count.
///
/// This is a contract with the runtime's modules (common/nn): a Block saves exactly the tensors
/// listed by runtime_saved_activations_per_layer(), with these shapes, so that the measured
/// activation bytes of one layer equal runtime_activation_bytes_per_layer(). The layout keeps what
/// each backward needs and nothing more, which is also what PyTorch's eager autograd keeps for the
/// same block: llm.c's tensor names, without its pre-softmax scores `preatt` (softmax's backward
/// needs only its output, so the scores are scratch) and without the logits (see below).
/// GPT-2 (B = micro-batch, T = sequence, C = hidden, H = heads, F = MLP width = 4C):
///
///     ln1 (B,T,C)  ln1_mean (B,T)  ln1_rstd (B,T)  qkv (B,T,3C)
///     att (B,H,T,T)  atty (B,T,C)  residual2 (B,T,C)                     [attn proj out + x]
///     ln2 (B,T,C)  ln2_mean (B,T)  ln2_rstd (B,T)  fch (B,T,F)  fch_gelu (B,T,F)
///     residual3 (B,T,C)                                                  [fc proj out + residual2]
///
/// i.e. (8C + 2F)·BT + 4·BT + H·B·T² elements, 16C·BT + 4BT + HBT² for GPT-2.
/// With flash attention (AttentionKind::flash, kernels/cpu/flash_attention.h) att is replaced by
/// lse (B,H,T), always f32: the per-row log-sum-exp the backward recomputes each score tile from,
/// 4·H·B·T bytes instead of H·B·T² elements.
/// The Llama layout (RMSNorm keeps only rstd; RoPE is applied to q and k before they are saved;
/// kvC = kv_heads × C / heads):
///
///     norm1 (B,T,C)  norm1_rstd (B,T)  q (B,T,C)  k (B,T,kvC)  v (B,T,kvC)
///     att (B,H,T,T)  atty (B,T,C)  residual2 (B,T,C)
///     norm2 (B,T,C)  norm2_rstd (B,T)  gate (B,T,F)  up (B,T,F)  swiglu (B,T,F)  residual3 (B,T,C)
///
/// Outside the blocks the runtime saves: the embedding output encoded (B,T,C), the final norm
/// output lnf (B,T,C) with its statistics (mean and rstd (B,T) for LayerNorm, rstd for RMSNorm),
/// probs (B,T,V) and losses (B,T). The logits (B,T,V) are a temporary of the loss: the loss's
/// backward needs only the probabilities and writes the logits' gradient over them. With the loss
/// in K > 1 chunks (`--loss-chunks`) probs is not saved either: the backward makes each chunk's
/// logits again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/model/model_config.h"

namespace vramlab::estimate {

/// One tensor the runtime keeps for backward.
struct SavedActivationSpec {
  std::string name;            ///< e.g. "preatt".
  std::vector<int64_t> shape;  ///< e.g. {B, H, T, T}.
  /// Kept in f32 whatever the precision: the norms' mean and rstd and the per-token losses
  /// (common/amp/precision_policy.h).
  bool always_f32 = false;
  /// \return the number of elements. \throws vramlab::UsageError on overflow.
  [[nodiscard]] int64_t numel() const;
};

/// The tensors one transformer Block saves for backward (see the file comment).
/// \param model a valid model (gpt2 or llama family).
/// \param micro_batch B (> 0). \param seq T (> 0). \param attention naive (att) or flash (lse).
/// \return the list, in the order above.
/// \throws vramlab::UsageError for an invalid model, B or T ≤ 0.
std::vector<SavedActivationSpec> runtime_saved_activations_per_layer(
    const ModelConfig& model, int64_t micro_batch, int64_t seq,
    AttentionKind attention = AttentionKind::naive);

/// The tensors saved outside the blocks: embedding output, final norm, probs, losses.
/// \param model a valid model. \param micro_batch B (> 0). \param seq T (> 0).
/// \param loss_chunks K of `--loss-chunks`: above 1 the loss saves no probs (Note [Chunked
/// cross-entropy] in decoder_model.cpp).
/// \return the list. \throws vramlab::UsageError for an invalid model, B or T ≤ 0.
std::vector<SavedActivationSpec> runtime_saved_activations_outside_layers(const ModelConfig& model,
                                                                          int64_t micro_batch,
                                                                          int64_t seq,
                                                                          int64_t loss_chunks = 1);

/// Bytes one Block of the runtime saves for backward: the sum over
/// runtime_saved_activations_per_layer() of numel × dtype size.
/// \param model a valid model. \param b micro-batch B. \param s sequence T.
/// \param dtype the activation element type (f32, or bf16/f16 in the 16-bit precisions; entries
/// marked always_f32 count 4 bytes regardless). \param attention naive or flash.
/// \return bytes per layer. \throws vramlab::UsageError for bad sizes or an overflow.
int64_t runtime_activation_bytes_per_layer(const ModelConfig& model, int64_t b, int64_t s,
                                           DType dtype,
                                           AttentionKind attention = AttentionKind::naive);

/// Bytes saved outside the blocks (runtime_saved_activations_outside_layers() × dtype size).
/// \param model a valid model. \param b micro-batch B. \param s sequence T.
/// \param dtype the activation element type. \param loss_chunks K of `--loss-chunks`.
/// \return bytes. \throws vramlab::UsageError for bad sizes or an overflow.
int64_t runtime_activation_bytes_outside_layers(const ModelConfig& model, int64_t b, int64_t s,
                                                DType dtype, int64_t loss_chunks = 1);

/// Everything the runtime saves for one micro-batch: L × per layer + outside the layers.
/// \param model a valid model. \param b micro-batch B. \param s sequence T.
/// \param dtype the activation element type. \param attention naive or flash.
/// \param loss_chunks K of `--loss-chunks` (no probs above 1).
/// \return bytes. \throws vramlab::UsageError for bad sizes or an overflow.
int64_t runtime_activation_bytes_total(const ModelConfig& model, int64_t b, int64_t s, DType dtype,
                                       AttentionKind attention = AttentionKind::naive,
                                       int64_t loss_chunks = 1);

}  // namespace vramlab::estimate
