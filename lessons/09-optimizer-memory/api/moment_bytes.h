/// \file
/// \brief Exercise 09.4: the bytes of an optimizer's moments when they depend on the tensors'
/// shapes, not just on Ψ: 8-bit AdamW (bitsandbytes' AdamW8bit) and Adafactor
/// (torch.optim.Adafactor). Exact, in 64 bits, for any model up to 70B parameters and beyond.
///
/// The one API shared by the stub (exercises/09-optimizer-memory/moment_bytes.cpp) and the
/// reference (solutions/09-optimizer-memory/moment_bytes.cpp). The runtime counts the same bytes
/// in estimate::estimate_memory (common/estimate/estimator.h, the optimizer-moment part of the
/// optimizer states, master weights excluded); the tests compare with it.
///
/// **8-bit AdamW** keeps two moments, m and v. bitsandbytes quantizes each parameter tensor on its
/// own (a block never spans two tensors) in blocks of B elements, the last one possibly shorter: a
/// tensor of n elements stores per moment n one-byte codes and one f32 absmax per block. A tensor
/// of fewer than `min_8bit_size` elements (bitsandbytes' default 4096) keeps both moments in f32.
///
/// **Adafactor** keeps no m. A matrix (rows, cols) keeps a row and a column factor of its second
/// moment, rows + cols values; a vector of n elements keeps its n values whole. One value takes
/// `state_element_bytes` (4, or 2 when the states are bf16).
#pragma once

#include <cstdint>
#include <span>

#include "common/model/model_config.h"

namespace vramlab::lesson09 {

/// The moment bytes of 8-bit AdamW, by what holds them (both moments counted).
struct EightBitMomentBytes {
  int64_t code_bytes = 0;    ///< one byte per element per moment, over the quantized tensors
  int64_t absmax_bytes = 0;  ///< one f32 per block per moment, over the quantized tensors
  int64_t fp32_bytes = 0;    ///< two f32 moments per element of the tensors kept in f32
  int64_t total = 0;         ///< the sum of the three
};

/// Exercise 09.4: 8-bit AdamW's moment bytes over \p tensors (see the file comment).
/// \param tensors the parameter tensors (ModelConfig::parameters(), or any list of 1-D and 2-D
///        shapes). \param block_size B ≥ 1 (256 in bitsandbytes since its PR #1365, 2048 in the
///        paper). \param min_8bit_size tensors with fewer elements keep f32 moments (≥ 0).
/// \return the bytes.
/// \throws vramlab::UsageError naming the value for B < 1, min_8bit_size < 0, a dimension < 0,
///         or a count that does not fit in an int64_t.
EightBitMomentBytes adamw_8bit_moment_bytes(std::span<const ParameterSpec> tensors,
                                            int64_t block_size, int64_t min_8bit_size);

/// Exercise 09.4: Adafactor's second-moment bytes over \p tensors (see the file comment).
/// \param tensors the parameter tensors, 1-D or 2-D.
/// \param state_element_bytes bytes of one state value (≥ 1).
/// \return the bytes.
/// \throws vramlab::UsageError naming the value for a tensor of another rank, a dimension < 0,
///         state_element_bytes < 1, or a count that does not fit in an int64_t.
int64_t adafactor_moment_bytes(std::span<const ParameterSpec> tensors, int64_t state_element_bytes);

}  // namespace vramlab::lesson09
