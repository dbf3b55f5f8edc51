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
  /// \param params the store. \param token_table "wte" or "embed". \param position_table "wpe"
  /// or "" for none.
  Embedding(const ParameterStore& params, const std::string& token_table,
            const std::string& position_table);
  /// \param runtime dispatch. \param saved the step's store. \param tokens (B, T) ids.
  /// \param B batch. \param T sequence (≤ the position table's rows). \return encoded (B, T, C).
  const Tensor& forward(Runtime& runtime, SavedActivations& saved, const TensorView& tokens,
                        int64_t B, int64_t T) const;
  /// \param runtime dispatch. \param dout (B, T, C). \param tokens (B, T). \param B batch.
  /// \param T sequence.
  void backward(const Runtime& runtime, const TensorView& dout, const TensorView& tokens, int64_t B,
                int64_t T) const;

 private:
  const ParameterStore& params_;
  const ParameterView* wte_;
  const ParameterView* wpe_ = nullptr;
  int64_t V_, C_;
};

}  // namespace vramlab::nn
