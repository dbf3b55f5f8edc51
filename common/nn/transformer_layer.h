/// \file
/// \brief TransformerLayer: one pre-norm transformer block, x → x + attn(norm1(x)) → +
/// mlp(norm2(·)), with explicit backward. Saves, in order (GPT-2 names; Llama uses norm1/norm2 and
/// its attention and MLP tensors): ln1, ln1_mean, ln1_rstd, qkv, att, atty, residual2, ln2,
/// ln2_mean, ln2_rstd, fch, fch_gelu, residual3 — runtime_saved_activations_per_layer()'s list.
///
/// Under Megatron tensor parallelism (Shoeybi et al. 2019, Figure 3) the attention and the MLP
/// each begin with column-parallel linears and end with a row-parallel one: the forward
/// all-reduces each branch's output (g, inside the row-parallel linear) and the backward
/// all-reduces the gradient of each branch's input, the normed activation, before it flows into
/// the norm (f). Norms and residual adds see whole tensors, identical on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "common/model/model_config.h"
#include "common/nn/attention.h"
#include "common/nn/dropout.h"
#include "common/nn/mlp.h"
#include "common/nn/normalization.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::dist {
class Communicator;
}  // namespace vramlab::dist

namespace vramlab::nn {

/// One transformer block.
class TransformerLayer {
 public:
  /// Binds the layer's weights in \p params; no memory is allocated.
  /// \param params holds this rank's part (ModelConfig::parameters(rank, t)).
  /// \param config the whole model's shapes. \param layer the block index.
  /// \param tensor_parallel the t ranks sharing the layer (must outlive it); null: t = 1.
  TransformerLayer(const ParameterStore& params, const ModelConfig& config, int64_t layer,
                   dist::Communicator* tensor_parallel = nullptr);
  /// \p x (B, T, C) is the block input; \p dropout where its masks start (p = 0: none).
  /// Returns the saved output residual3 (B, T, C).
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& x, int64_t B,
                        int64_t T, const LayerDropout& dropout = {}) const;
  /// Backward through the block, in place on the residual-stream gradient, then releases the
  /// layer's saved tensors.
  /// \p x (B, T, C) is forward's input; \p dresidual (B, T, C) holds ∂loss/∂output on entry and
  /// ∂loss/∂x on return.
  /// \p dropout must be the one the forward that saved the tensors used.
  void backward(Runtime& runtime, SavedActivations& saved, const TensorView& x,
                const TensorView& dresidual, int64_t B, int64_t T,
                const LayerDropout& dropout = {}) const;

 private:
  // The norms' module names, as in the parameter names: "ln1"/"ln2" (GPT-2), "norm1"/"norm2".
  const char* norm1_name() const;
  const char* norm2_name() const;

  int64_t layer_;
  std::string module_name_;  // "blocks.N": the parameters' prefix, and the allocations' module
  int64_t C_;
  dist::Communicator* tensor_parallel_;  // sums the branch inputs' gradients (f), or null
  Norm norm1_;
  Attention attention_;
  Norm norm2_;
  std::variant<Mlp, SwigluMlp> mlp_;
};

}  // namespace vramlab::nn
