/// \file
/// \brief Embedding: token lookup (+ learned positions on GPT-2), forward and explicit backward.
/// The forward's output is saved as "encoded" (B, T, C) outside the blocks.
#pragma once

#include <cstdint>
#include <string>

#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::nn {

/// The token (and position) embedding.
class Embedding {
 public:
  /// \p token_table is "wte" (GPT-2) or "embed" (Llama); \p position_table "wpe", or "" for
  /// none (Llama: positions come from RoPE).
  Embedding(const ParameterStore& params, const std::string& token_table,
            const std::string& position_table);
  /// \p tokens (B, T) ids; T ≤ the position table's rows. Returns the saved encoded (B, T, C).
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& tokens,
                        int64_t B, int64_t T) const;
  /// Accumulates \p dout (B, T, C) into the tables' gradients at \p tokens (B, T).
  void backward(const Runtime& runtime, const TensorView& dout, const TensorView& tokens, int64_t B,
                int64_t T) const;

 private:
  const ParameterStore& params_;
  const ParameterView* wte_;
  const ParameterView* wpe_ = nullptr;
  int64_t V_, C_;
};

}  // namespace vramlab::nn
