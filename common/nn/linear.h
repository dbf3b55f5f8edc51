/// \file
/// \brief Linear: out = inp · Wᵀ + b (PyTorch's nn.Linear layout, W is (OC, C)), forward and
/// explicit backward over a ParameterStore. A Linear may cover a band of rows of a larger weight
/// (GPT-2's fused (3C, C) qkv is three Linears over its q, k and v rows).
///
/// Under Megatron tensor parallelism a column-parallel linear is an ordinary Linear over this
/// rank's rows; a row-parallel one (Linear::row_parallel) holds this rank's input columns, so its
/// forward output is a partial sum that it all-reduces over the tensor-parallel group (Megatron's
/// g operator, Shoeybi et al. 2019 Figure 3); its backward needs no communication (its output
/// gradient is the same on every rank, its input gradient is this rank's columns).
#pragma once

#include <cstdint>
#include <string>

#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"

namespace vramlab::dist {
class Communicator;
}  // namespace vramlab::dist

namespace vramlab::nn {

/// A linear layer whose weight (and optional bias) live in a ParameterStore.
class Linear {
 public:
  /// \param params must outlive the layer. \param weight_name e.g. "blocks.0.attn.qkv.weight" or
  /// "wte" (a tied LM head).
  /// \param bias_name e.g. "blocks.0.attn.qkv.bias"; no bias when the store has no such tensor.
  /// \param row_begin first output row of the weight this layer uses.
  /// \param rows output features (-1: every row from row_begin).
  /// \throws std::logic_error when the weight is missing or the band is out of range.
  Linear(const ParameterStore& params, const std::string& weight_name, const std::string& bias_name,
         int64_t row_begin = 0, int64_t rows = -1);
  /// A Linear over PREFIX.weight and (when present) PREFIX.bias, e.g. "blocks.0.mlp.fc".
  static Linear from_prefix(const ParameterStore& params, const std::string& prefix) {
    return Linear(params, prefix + ".weight", prefix + ".bias");
  }
  /// A row-parallel Linear over PREFIX.weight (this rank's input columns) and PREFIX.bias (whole).
  /// \param params must outlive the layer. \param prefix e.g. "blocks.0.attn.proj".
  /// \param tensor_parallel the group whose partial outputs forward() sums (must outlive the
  /// layer); null: an ordinary Linear.
  static Linear row_parallel(const ParameterStore& params, const std::string& prefix,
                             dist::Communicator* tensor_parallel) {
    Linear linear = from_prefix(params, prefix);
    linear.tensor_parallel_ = tensor_parallel;
    return linear;
  }

  /// out = inp · Wᵀ + b, written. \p out (N, OC), \p inp (N, C). A row-parallel layer sums the
  /// ranks' inp · Wᵀ with one all-reduce of \p out (Traffic::activations) and adds b once: rank 0's
  /// partial sum carries it, which is Megatron's bias after the all-reduce up to the order of the
  /// f32 additions, without a broadcast-add kernel.
  void forward(const Runtime& runtime, const TensorView& out, const TensorView& inp,
               int64_t N) const;
  /// dinp += dout · W, dW += doutᵀ · inp, db += Σ dout. \p dinp (N, C) or none (the first layer
  /// needs no input gradient), \p dout (N, OC), \p inp (N, C) forward's input.
  void backward(const Runtime& runtime, const TensorView& dinp, const TensorView& dout,
                const TensorView& inp, int64_t N) const;

  /// C, the weight's columns.
  [[nodiscard]] int64_t in_features() const { return in_features_; }
  /// OC, the rows of the band (not of the whole weight).
  [[nodiscard]] int64_t out_features() const { return out_features_; }

 private:
  [[nodiscard]] TensorView band(const TensorView& tensor) const;
  [[nodiscard]] TensorView bias_band(const TensorView& tensor) const;

  const ParameterStore& params_;
  const ParameterView* weight_;
  const ParameterView* bias_ = nullptr;
  int64_t row_begin_;
  int64_t in_features_;
  int64_t out_features_;
  dist::Communicator* tensor_parallel_ = nullptr;  // row-parallel: sums the partial outputs
};

}  // namespace vramlab::nn
