/// \file
/// \brief Exercise 01.2: the bytes one GPT-2 transformer layer of the runtime saves for backward,
/// derived from its shapes.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/layer_activations.cpp) and the
/// reference (solutions/01-memory-breakdown/layer_activations.cpp). "Saved for backward" means
/// what the runtime's GPT-2 block (llm.c's tensors, common/nn/transformer_layer.h) keeps from its
/// forward pass until its backward pass, every tensor in \p dtype except the LayerNorms' per-token
/// statistics, which stay f32 in every precision (lesson 03): what each backward needs and nothing
/// more, which is also what PyTorch's eager autograd keeps for the same block. Finding those
/// tensors and their shapes (read the block, the attention and the MLP) is the exercise; `vramlab
/// hint 01.2` guides you.
#pragma once

#include <cstdint>

#include "common/dtype/dtype.h"

namespace vramlab::lesson01 {

/// The shapes of one GPT-2 block and its micro-batch.
struct LayerShape {
  int64_t batch = 0;       ///< B, sequences in the micro-batch.
  int64_t seq = 0;         ///< T, tokens per sequence.
  int64_t hidden = 0;      ///< C, the model width.
  int64_t heads = 0;       ///< H, attention heads (dividing C).
  int64_t ffn_hidden = 0;  ///< F, the MLP's inner width (4C in GPT-2).
};

/// Exercise 01.2: the bytes one layer saves for backward, exact, for shapes up to long-context
/// models (T = 8192 and beyond).
/// \param shape B, T, C, H, F (all > 0, H dividing C).
/// \param dtype the element type of the saved tensors (f32, or bf16/f16 under the 16-bit
/// precisions); the norm statistics are f32 whatever it is.
/// \return the bytes.
/// \throws vramlab::UsageError naming the value for a size ≤ 0, H not dividing C, or a byte count
///         that overflows int64.
int64_t layer_activation_bytes(const LayerShape& shape, DType dtype);

}  // namespace vramlab::lesson01
