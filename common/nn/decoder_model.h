/// \file
/// \brief DecoderModel: a decoder-only transformer (GPT-2 or Llama family) built from a
/// ModelConfig, with an explicit forward (mean cross-entropy) and backward (no tape).
///
/// Outside the blocks it saves encoded (B, T, C), the final norm lnf (B, T, C) with its
/// statistics, probs (B, T, V) and losses (B, T). The logits (B, T, V) are a temporary of the
/// loss: the backward writes their gradient in place over the saved probabilities. With the loss
/// in chunks (set_loss_chunks) only the losses are saved.
///
/// Tensor parallelism (Megatron, Shoeybi et al. 2019): with a tensor-parallel group of t ranks,
/// each rank holds ModelConfig::parameters(rank, t), runs H/t heads and F/t MLP units per block,
/// and all-reduces (Traffic::activations) one (B, T, C) tensor after each block's attention and
/// MLP in the forward and one before each block's two norms in the backward: 4 all-reduces of
/// (B, T, C) per block and step, 2(t−1)/t·B·T·C elements sent each, plus 2 per block for every
/// forward re-run by recompute. The embeddings, norms, LM head and loss are replicated: every
/// rank computes them whole on identical inputs, so their gradients need no reduction and the
/// loss is the same on every rank.
#pragma once

#include <optional>

#include <cstdint>
#include <vector>
#include "common/amp/precision_policy.h"

#include "common/model/model_config.h"
#include "common/nn/dropout.h"
#include "common/nn/embedding.h"
#include "common/nn/linear.h"
#include "common/nn/normalization.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"
#include "common/nn/transformer_layer.h"

namespace vramlab::dist {
class Communicator;
}  // namespace vramlab::dist

namespace vramlab::nn {

/// What one data-parallel rank holds of the model's store (ZeRO; see parameter_store.h).
struct ModelSharding {
  int64_t world_size = 1;                        ///< data-parallel ranks N
  int64_t rank = 0;                              ///< this rank
  StoreSharding sharding = StoreSharding::none;  ///< none: the whole store, unpadded
  /// ZeRO-3 with the parameters offloaded: the runtime (the host's) that holds this rank's shard
  /// of the parameters, initialised there; null: the model's own runtime.
  Runtime* parameters_on = nullptr;
  /// With parameters_on: the drive whose files hold the shard instead (ParameterStore's
  /// parameters on NVMe); null: parameters_on's memory holds it.
  const NvmeDrive* parameters_on_nvme = nullptr;
};

/// The model: parameters, modules, forward and backward.
class DecoderModel {
 public:
  /// Allocates the parameters (in ModelConfig::parameters() order) and initialises them
  /// GPT-2 style: weights N(0, 0.02) (residual projections 0.02/√(2L)), biases 0, norm weights 1.
  /// \param runtime must outlive the model. \param config validated here. \param seed of the
  /// initial weights (same seed, same weights on every device). \throws vramlab::UsageError for an
  /// invalid config; memory::OutOfMemoryError when full. \param precision the storage types
  /// (common/amp/precision_policy.h): parameters, gradients and activations; fp32 by default.
  /// \param sharding what this data-parallel rank holds of the store (ZeRO-1/2/3 lay it out in
  /// padded units, dist::ShardLayout); the whole store by default.
  /// \param tensor_parallel the tensor-parallel group (must outlive the model; every rank of it
  /// constructs its model with the same config and seed): this rank holds its part of the
  /// parameters, initialised to its slice of the whole model's weights for \p seed, so that a
  /// run over t ranks computes the same model as one rank (under ZeRO, \p sharding shards this
  /// part). Null (the default): t = 1.
  /// \throws vramlab::UsageError also for heads, kv_heads or ffn_hidden not divisible by t, and
  /// for a group that moves data on the meta device (call set_move_data(false) there).
  DecoderModel(Runtime& runtime, const ModelConfig& config, uint64_t seed,
               const amp::PrecisionPolicy& precision = {}, const ModelSharding& sharding = {},
               dist::Communicator* tensor_parallel = nullptr);

  /// Forward pass; saves what backward needs in \p saved, then, after each block, frees what the
  /// block's policy (saved.policy(layer)) does not keep. Announces the phases forward,
  /// forward_embedding, forward_layer (per block, 0 to L-1), forward_head and loss to observers().
  /// \param saved the step's store (empty). \param tokens (B, T) ids in [0, V), in the runtime's
  /// memory (an i32 view: device memory on a cuda device).
  /// \param targets (B, T) ids in [0, V), in the runtime's memory. \param B batch ≥ 1. \param T
  /// sequence in [1, max_seq]. \return the mean loss over B·T tokens (0 on meta, where nothing is
  /// computed). \throws vramlab::UsageError for B or T out of range; memory::OutOfMemoryError when
  /// full.
  double forward(SavedActivations& saved, const TensorView& tokens, const TensorView& targets,
                 int64_t B, int64_t T);
  /// Backward pass of the mean loss: accumulates into the gradients (allocating them zeroed if
  /// they were released) and empties \p saved layer by layer. A checkpointed span's forward is
  /// re-run (saving everything) just before the backward of its last block; a selective layer's
  /// probabilities are recomputed inside its backward. Announces the phases backward,
  /// backward_head, recompute_layer (per re-run block), backward_layer (per block, L-1 down to 0)
  /// and backward_embedding to observers().
  /// \param saved the store forward() filled. \param tokens as given to forward().
  /// \param targets as given to forward(). \param B as given to forward(). \param T as given to
  /// forward().
  /// \param loss_gradient ∂objective/∂(each token's loss): 1/(B·T) for this micro-batch's mean
  /// (the default); under accumulation 1/(tokens of the whole optimizer step), times the loss
  /// scale under loss scaling — the scale enters here, at the top of the backward, as
  /// `(loss * scale).backward()` does in PyTorch.
  /// \throws memory::OutOfMemoryError when full.
  void backward(SavedActivations& saved, const TensorView& tokens, const TensorView& targets,
                int64_t B, int64_t T, std::optional<double> loss_gradient = std::nullopt);

  /// Turns dropout on (p > 0) or off (p = 0) for the following steps.
  /// \throws vramlab::UsageError for p outside [0, 1), or p > 0 under tensor parallelism over
  /// more than one rank (the masks are drawn over all H heads and would not match a one-rank run).
  void set_dropout(const DropoutSettings& settings);
  /// \return the settings set_dropout gave (p = 0 by default).
  [[nodiscard]] const DropoutSettings& dropout() const { return dropout_; }
  /// The dropout stream's position: the first counter the next forward's masks draw (what
  /// torch.get_rng_state saves for them). A trainer that undoes a failed step puts it back.
  [[nodiscard]] uint64_t dropout_rng_offset() const { return rng_offset_; }
  /// \param offset a position dropout_rng_offset() returned.
  void set_dropout_rng_offset(uint64_t offset) { rng_offset_ = offset; }
  /// Chooses the attention kernel of the following steps' forwards (naive by default; flash:
  /// kernels/cpu/flash_attention.h). The loss and gradients agree within rounding; what is saved
  /// differs (SavedActivations::set_attention).
  void set_attention(AttentionKind attention);
  /// \return the kind set_attention gave.
  [[nodiscard]] AttentionKind attention() const { return attention_; }
  /// Computes the loss of the following steps over \p chunks slices of the B·T rows (1, the
  /// default: all at once). With K > 1 the loss saves no (B, T, V) probabilities: the forward
  /// makes each slice's logits and loss and frees them, and the backward makes the slice's logits
  /// again (one more LM-head matmul) for its gradient (Note [Chunked cross-entropy]).
  /// \throws vramlab::UsageError for K < 1.
  void set_loss_chunks(int64_t chunks);
  /// \return the K set_loss_chunks gave.
  [[nodiscard]] int64_t loss_chunks() const { return loss_chunks_; }
  /// torch.set_grad_enabled: with \p enabled false (torch.no_grad()) the following forwards save
  /// nothing for a backward: each block's tensors are freed once the next block has read its
  /// output, the loss's probabilities once the loss is computed, so the store ends the forward
  /// with the per-token losses alone. backward() then refuses. On by default.
  void set_grad_enabled(bool enabled) { grad_enabled_ = enabled; }
  /// \return what set_grad_enabled gave.
  [[nodiscard]] bool grad_enabled() const { return grad_enabled_; }
  /// Stages a leak for lesson 08: each forward's (B, T, V) logits are moved into \p sink instead
  /// of being freed after the loss, as `outputs.append(logits)` without `.detach().cpu()` keeps
  /// every step's. Null (the default) frees them. The loss in chunks makes no whole logits: a
  /// trainer refuses the two together.
  void set_kept_outputs(std::vector<Tensor>* sink) { kept_outputs_ = sink; }

  /// \return the constructor's tensor-parallel group (null without one).
  [[nodiscard]] dist::Communicator* tensor_parallel() const { return tensor_parallel_; }
  /// \return t, the tensor-parallel degree (1 without a group).
  [[nodiscard]] int64_t tensor_parallel_size() const;
  /// \return the constructor's storage types.
  [[nodiscard]] const amp::PrecisionPolicy& precision() const { return precision_; }
  /// As validated by the constructor.
  [[nodiscard]] const ModelConfig& config() const { return config_; }
  /// Values and gradients, one flat block each (what an optimizer updates).
  [[nodiscard]] ParameterStore& parameters() { return params_; }
  /// The constructor's: its allocator holds every tensor of the model.
  [[nodiscard]] Runtime& runtime() { return runtime_; }
  /// \return who is told about the phases of forward() and backward() (and, through
  /// train::Trainer, of the rest of the step).
  [[nodiscard]] StepObservers& observers() { return observers_; }

 private:
  void initialise(uint64_t seed);
  // The block's input: the embedding output for layer 0, else the previous block's output.
  static TensorView layer_input(const SavedActivations& saved, int64_t layer);
  // After a block's forward: frees what its policy does not keep.
  static void drop_by_policy(SavedActivations& saved, int64_t layer);
  // The masks of block `layer`'s forward starting at `offset`.
  [[nodiscard]] LayerDropout block_dropout(uint64_t offset, int64_t B, int64_t T) const;
  // Draws fresh counters for one block's forward and records where they start.
  LayerDropout draw_block_dropout(SavedActivations& saved, int64_t layer, int64_t B, int64_t T);
  // Frees what a forward without grad still holds at its end: all but the per-token losses.
  void release_for_no_grad(SavedActivations& saved) const;
  // The LM head's logits (rows, V) of rows [row, row + rows) of the final norm's output
  // (Note [Chunked cross-entropy]).
  Tensor chunk_logits(const TensorView& lnf, int64_t row, int64_t rows);
  // Re-runs the forward of the checkpointed span [first, last], saving everything, before the
  // backward of its last layer.
  void recompute_span(SavedActivations& saved, int64_t first, int64_t last, int64_t B, int64_t T);
  // Inline so that a phase without observers costs one empty() test.
  void announce_before(StepPhase phase, SavedActivations& saved, int64_t layer = -1) {
    if (!observers_.empty()) observers_.before(PhaseEvent{phase, layer, &saved, this});
  }
  void announce_after(StepPhase phase, SavedActivations& saved, int64_t layer = -1) {
    if (!observers_.empty()) observers_.after(PhaseEvent{phase, layer, &saved, this});
  }

  Runtime& runtime_;
  ModelConfig config_;
  dist::Communicator* tensor_parallel_;
  amp::PrecisionPolicy precision_;
  ParameterStore params_;
  Embedding embedding_;
  std::vector<TransformerLayer> blocks_;
  Norm final_norm_;
  Linear lm_head_;
  StepObservers observers_;
  DropoutSettings dropout_;
  AttentionKind attention_ = AttentionKind::naive;
  int64_t loss_chunks_ = 1;
  bool grad_enabled_ = true;
  std::vector<Tensor>* kept_outputs_ = nullptr;  // set_kept_outputs
  uint64_t rng_offset_ = 0;  // the next unused counter of the dropout stream
};

}  // namespace vramlab::nn
