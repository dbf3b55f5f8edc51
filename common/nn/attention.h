/// \file
/// \brief Attention: causal multi-head (GPT-2, fused qkv) or grouped-query attention with RoPE
/// (Llama, separate q/k/v), forward and explicit backward.
///
/// Saved per layer (see common/estimate/runtime_activations.h):
///   GPT-2: qkv (3, B, T, C) — the q, k and v planes, each (B, T, H, D) — att (B, H, T, T)
///          (the probabilities; the scores before the softmax are scratch), atty (B, T, C),
///          then the output projection.
///   Llama: q (B, T, C) and k (B, T, kvC) after RoPE, v (B, T, kvC), att, atty.
/// Under flash attention (SavedActivations::attention()), att is replaced by lse (B, H, T) f32,
/// and the backward's (B, H, T, T) score gradient by a (B, H, T) f32 temporary, delta.
/// The output projection is written into a tensor saved under the caller's name (the
/// TransformerLayer's residual2), so the TransformerLayer can add its residual in place.
///
/// Under tensor parallelism over t ranks (Megatron, Shoeybi et al. 2019 §3) the layer runs this
/// rank's H/t query heads and kv_heads/t key/value heads: every saved tensor above has C/t (kvC/t)
/// in place of C (kvC) and H/t in place of H, except the projected output, which the row-parallel
/// projection all-reduces to the whole (B, T, C).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model/model_config.h"
#include "common/nn/linear.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::dist {
class Communicator;
}  // namespace vramlab::dist

namespace vramlab::nn {

/// The attention sub-layer of one block.
class Attention {
 public:
  /// Binds the layer's weights in \p params; no memory is allocated.
  /// \param params holds this rank's part (ModelConfig::parameters(rank, t)).
  /// \param config the whole model's shapes. \param layer the block index.
  /// \param tensor_parallel the t ranks sharing the heads (must outlive the layer); null: t = 1.
  Attention(const ParameterStore& params, const ModelConfig& config, int64_t layer,
            dist::Communicator* tensor_parallel = nullptr);

  /// \p inp (B, T, C) is the normed input. Returns the projected output (B, T, C), saved under
  /// \p output_name.
  /// \p dropout applies to the probabilities (att is saved before it).
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp, int64_t B,
                        int64_t T, const std::string& output_name,
                        const AttentionDropout& dropout = {}) const;
  /// Accumulates into \p dinp (B, T, C) from \p dout (B, T, C), the projected output's gradient;
  /// \p inp (B, T, C) is forward's input.
  /// \p dropout is the forward's.
  void backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                const TensorView& dout, const TensorView& inp, int64_t B, int64_t T,
                const AttentionDropout& dropout = {}) const;

 private:
  int64_t layer_;
  int64_t C_;        // the model width: the input's and the projected output's
  int64_t H_, Hkv_;  // this rank's query and key/value heads
  int64_t D_;        // head width
  int64_t QC_;       // H_ · D_, the width of this rank's q and attention output
  bool rope_;
  double rope_theta_;
  std::vector<Linear> qkv_;  // (3): q, k, v projections (bands of the fused weight on GPT-2)
  Linear proj_;
};

}  // namespace vramlab::nn
