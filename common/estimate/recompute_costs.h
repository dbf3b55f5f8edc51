/// \file
/// \brief The runtime's chain of blocks as the recompute planner sees it: per block the bytes its
/// saved-activation store holds under each policy and the FLOPs a recompute re-runs.
///
/// The bytes come from the runtime layout (runtime_activations.h) in requested bytes, the unit of
/// nn::SavedActivations::peak_bytes(), so recompute::activation_peak_bytes() of these costs is
/// the peak the runtime measures for the same schedule, byte for byte.
#pragma once

#include <cstdint>

#include "common/dtype/dtype.h"
#include "common/model/model_config.h"
#include "common/recompute/activation_compression.h"
#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::estimate {

/// The planner's view of \p model at micro-batch \p B and sequence \p T:
/// F = runtime_activation_bytes_per_layer, S = F minus the (B, H, T, T) probabilities, O = the
/// (B, T, C) output, E = the embedding output, H = the rest saved outside the blocks; costs in
/// FLOPs (block_forward_flops, attention_scores_flops). Under flash attention no probabilities
/// are saved, so selective recompute has nothing to drop or redo: S = F at no cost.
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1. \param dtype the activations' type.
/// \param attention naive or flash. \param loss_chunks K of `--loss-chunks` (H without probs
/// above 1).
/// \return the chain. \throws vramlab::UsageError for bad sizes or an overflow.
recompute::ChainCosts runtime_chain_costs(const ModelConfig& model, int64_t B, int64_t T,
                                          DType dtype = DType::f32,
                                          AttentionKind attention = AttentionKind::naive,
                                          int64_t loss_chunks = 1);

/// Bytes the runtime's store holds when the forward ends: what each block keeps under \p
/// schedule (everything; all but the probabilities; a span's last output), compressed as \p
/// compression says (every kept block tensor but the norms' (B, T) statistics), plus the
/// uncompressed tensors outside the blocks.
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1. \param schedule one per layer.
/// \param compression how kept block tensors are stored. \param dtype the activations' type
/// (statistics and losses stay f32). \param attention naive or flash. \param loss_chunks K of
/// `--loss-chunks` (no probs above 1). \return bytes.
int64_t runtime_bytes_after_forward(const ModelConfig& model, int64_t B, int64_t T,
                                    const recompute::RecomputeSchedule& schedule,
                                    recompute::ActivationCompression compression,
                                    DType dtype = DType::f32,
                                    AttentionKind attention = AttentionKind::naive,
                                    int64_t loss_chunks = 1);

/// Where the saved activations are when the forward ends under activation offload
/// (`--offload-activations on`): every kept block tensor but the norms' (B, T) statistics in
/// pinned host memory, the rest on the device.
struct OffloadedActivationBytes {
  int64_t device = 0;          ///< what the store still holds on the device (requested bytes)
  int64_t host_requested = 0;  ///< the offloaded tensors' own bytes
  /// The pinned blocks that hold them: PyTorch's CachingHostAllocator rounds each request up to
  /// a power of two (c10::llvm::PowerOf2Ceil in CachingHostAllocator.h), one block per tensor.
  int64_t host_pinned = 0;
  /// The most the store holds on the device during the step (SavedActivations::peak_bytes under
  /// the runtime's order of saves, packs, prefetches and releases): a layer's forward on top of
  /// what stays, the head, or a layer's backward with the next one's tensors on their way back
  /// (and a recomputed span's forward with its input).
  int64_t device_peak = 0;
};

/// The bytes of OffloadedActivationBytes, under \p schedule (what runtime_bytes_after_forward
/// keeps). \param model a valid model. \param B ≥ 1. \param T ≥ 1. \param schedule one per
/// layer. \param dtype the activations' type. \param attention naive or flash.
/// \param loss_chunks K of `--loss-chunks` (no probs above 1).
/// \throws vramlab::UsageError for bad sizes or an overflow.
OffloadedActivationBytes runtime_offloaded_activation_bytes(
    const ModelConfig& model, int64_t B, int64_t T, const recompute::RecomputeSchedule& schedule,
    DType dtype = DType::f32, AttentionKind attention = AttentionKind::naive,
    int64_t loss_chunks = 1);

/// The share of the forward's FLOPs a schedule re-runs in backward: recompute_cost over
/// model_forward_flops (blocks and LM head).
/// \param model a valid model. \param B ≥ 1. \param T ≥ 1. \param schedule one per layer.
/// \param attention naive or flash. \return a fraction in [0, 1).
double recomputed_forward_fraction(const ModelConfig& model, int64_t B, int64_t T,
                                   const recompute::RecomputeSchedule& schedule,
                                   AttentionKind attention = AttentionKind::naive);

}  // namespace vramlab::estimate
