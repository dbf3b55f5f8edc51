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
  /// \param params the store. \param prefix e.g. "blocks.0.ln1": a PREFIX.bias makes it a
  /// LayerNorm, its absence an RMSNorm. \param saved_name e.g. "ln1" (the saved tensors' names).
  /// \param layer block index or -1.
  Norm(const ParameterStore& params, const std::string& prefix, std::string saved_name,
       int64_t layer);

  /// Normalises \p inp, saving the output and its statistics.
  /// \param runtime dispatch. \param saved the step's store. \param inp (B, T, C).
  /// \param B batch. \param T sequence. \return the saved output (B, T, C).
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& inp, int64_t B,
                        int64_t T) const;
  /// dinp += ∂loss/∂inp, dweight (and dbias) accumulated.
  /// \param runtime dispatch. \param saved the step's store. \param dinp (B, T, C) accumulated.
  /// \param dout (B, T, C). \param inp (B, T, C) the forward input. \param B batch. \param T
  /// sequence.
  void backward(const Runtime& runtime, const SavedActivations& saved, const TensorView& dinp,
                const TensorView& dout, const TensorView& inp, int64_t B, int64_t T) const;

  /// \return true for LayerNorm, false for RMSNorm.
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
