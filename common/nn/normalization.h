/// \file
/// \brief Norm: LayerNorm (GPT-2: weight and bias, saves out, mean, rstd) or RMSNorm (Llama:
/// weight, saves out, rstd), chosen by the parameters present; forward saves through
/// SavedActivations under "NAME", "NAME_mean", "NAME_rstd".
#pragma once

#include <cstdint>
#include <string>

#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::nn {

/// A LayerNorm or RMSNorm over the last dimension C.
class Norm {
 public:
  /// \p prefix e.g. "blocks.0.ln1": a PREFIX.bias makes it a LayerNorm, its absence an RMSNorm.
  /// \p saved_name e.g. "ln1" names the saved tensors; \p layer is -1 outside the blocks.
  Norm(const ParameterStore& params, const std::string& prefix, std::string saved_name,
       int64_t layer);

  /// Normalises \p inp (B, T, C), saving the output (B, T, C) and its statistics (B, T); returns
  /// the saved output.
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp, int64_t B,
                        int64_t T) const;
  /// dinp += ∂loss/∂inp, dweight (and dbias) accumulated. \p dinp, \p dout and \p inp (forward's
  /// input) are (B, T, C).
  void backward(const Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const;

  /// Decided by the parameters at construction (a bias means LayerNorm).
  [[nodiscard]] bool is_layernorm() const { return bias_ != nullptr; }

 private:
  const ParameterStore& params_;
  const ParameterView* weight_;
  const ParameterView* bias_ = nullptr;
  std::string name_;
  std::string mean_name_;
  std::string rstd_name_;
  int64_t layer_;
  int64_t C_;
};

}  // namespace vramlab::nn
