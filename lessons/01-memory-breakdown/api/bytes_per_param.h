/// \file
/// \brief Exercise 01.1: the model-state bytes of Ψ parameters for a precision and an optimizer,
/// split into weights, gradients, optimizer states and fp32 master weights.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/bytes_per_param.cpp) and the
/// reference (solutions/01-memory-breakdown/bytes_per_param.cpp). Conventions (ZeRO's
/// accounting, Rajbhandari et al. 2020 §3.1; bitsandbytes for 8-bit AdamW):
/// - fp32: 4-byte weights and gradients, 4-byte optimizer-state elements, no master copy.
/// - bf16 (pure): 2-byte weights and gradients, optimizer states kept in bf16 (2 bytes), no master.
/// - mixed-fp16 / mixed-bf16: 2-byte weights and gradients, an fp32 master copy (4 bytes) and
///   fp32 optimizer states (4 bytes per element). Mixed AdamW is the paper's 2 + 2 + 12 = 16 B.
/// - Optimizer states per parameter: sgd none; sgd-momentum and lion one (momentum); adamw two
///   (m, v); adam-mini one m per parameter plus one v per block (\p adam_mini_v_blocks of them);
///   adamw-8bit two 1-byte states plus, per state, one fp32 absmax per block of kAdam8bitBlockSize
///   parameters (⌈Ψ/256⌉ blocks), whatever the precision.
/// The master copy is reported on its own, not inside optimizer_state_bytes.
#pragma once

#include <cstdint>

#include "common/estimate/model_state_memory.h"

namespace vramlab::lesson01 {

/// bitsandbytes' block size for 8-bit optimizer states (256 since its PR #1365; 2048 in the paper).
inline constexpr int64_t kAdam8bitBlockSize = 256;

/// Model-state bytes of Ψ parameters on one device (no partitioning).
struct ModelStateBreakdown {
  int64_t weights_bytes = 0;          ///< the working-precision weights.
  int64_t gradients_bytes = 0;        ///< the gradients.
  int64_t optimizer_state_bytes = 0;  ///< momentum, variance, absmax scales (not the master copy).
  int64_t master_weights_bytes = 0;   ///< the fp32 master copy of mixed precision (0 otherwise).
  /// \return the sum of the four parts.
  [[nodiscard]] int64_t total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_state_bytes + master_weights_bytes;
  }
};

/// Exercise 01.1: the model-state bytes of \p parameter_count parameters.
/// \param parameter_count Ψ (> 0).
/// \param precision the training precision.
/// \param optimizer the optimizer.
/// \param adam_mini_v_blocks Adam-mini's number of v entries (0 ≤ blocks ≤ Ψ; ignored by the
///        other optimizers).
/// \return the bytes of each part.
/// \throws vramlab::UsageError naming the value for Ψ ≤ 0 or Adam-mini blocks outside [0, Ψ].
ModelStateBreakdown model_state_breakdown(int64_t parameter_count, estimate::Precision precision,
                                          estimate::Optimizer optimizer,
                                          int64_t adam_mini_v_blocks = 0);

}  // namespace vramlab::lesson01
