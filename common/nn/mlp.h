/// \file
/// \brief The feed-forward sub-layers: Mlp (GPT-2: fc → GELU → proj, saves fch and fch_gelu
/// (B, T, F)) and SwigluMlp (Llama: down(silu(gate) · up), saves gate, up and swiglu (B, T, F)).
/// Like Attention, the output (B, T, C) is saved under the caller's name (the TransformerLayer's
/// residual3). Under tensor parallelism over t ranks each rank holds F/t units (fc, gate and up
/// column-parallel, proj and down row-parallel), so the (B, T, F) tensors become (B, T, F/t); the
/// output is all-reduced to the whole (B, T, C) (Megatron, Shoeybi et al. 2019 §3).
#pragma once

#include <cstdint>
#include <string>

#include "common/nn/linear.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::dist {
class Communicator;
}  // namespace vramlab::dist

namespace vramlab::nn {

/// GPT-2's MLP: proj(GELU(fc(x))).
class Mlp {
 public:
  /// Binds PREFIX.fc and PREFIX.proj (\p prefix e.g. "blocks.0.mlp"); allocates nothing.
  /// \p tensor_parallel sums proj's partial outputs (must outlive the layer); null: t = 1.
  Mlp(const ParameterStore& params, const std::string& prefix, int64_t layer,
      dist::Communicator* tensor_parallel = nullptr);
  /// \p inp (B, T, C). Returns the output (B, T, C), saved under \p output_name.
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp, int64_t B,
                        int64_t T, const std::string& output_name) const;
  /// Accumulates into \p dinp (B, T, C) from \p dout (B, T, C); \p inp (B, T, C) is forward's.
  void backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const;

 private:
  int64_t layer_;
  Linear fc_;
  Linear proj_;
};

/// Llama's SwiGLU MLP: down(silu(gate(x)) · up(x)).
class SwigluMlp {
 public:
  /// Binds PREFIX.gate, PREFIX.up and PREFIX.down; allocates nothing.
  /// \p tensor_parallel sums down's partial outputs (must outlive the layer); null: t = 1.
  SwigluMlp(const ParameterStore& params, const std::string& prefix, int64_t layer,
            dist::Communicator* tensor_parallel = nullptr);
  /// \p inp (B, T, C). Returns the output (B, T, C), saved under \p output_name.
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp, int64_t B,
                        int64_t T, const std::string& output_name) const;
  /// Accumulates into \p dinp (B, T, C) from \p dout (B, T, C); \p inp (B, T, C) is forward's.
  void backward(Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const;

 private:
  int64_t layer_;
  Linear gate_;
  Linear up_;
  Linear down_;
};

}  // namespace vramlab::nn
