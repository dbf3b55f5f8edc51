/// \file
/// \brief Exercise 01.1: the model-state bytes of Ψ parameters for a precision and an optimizer,
/// split into weights, gradients, optimizer states and fp32 master weights.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/bytes_per_param.cpp) and the
/// reference (solutions/01-memory-breakdown/bytes_per_param.cpp). The accounting is ZeRO's
/// (Rajbhandari et al. 2020, §3.1) for the dense optimizers and bitsandbytes' block-wise
/// quantisation for 8-bit AdamW. Working out which parts each precision and optimizer keeps, and
/// in how many bytes, is the exercise: the lesson's README and `vramlab hint 01.1` guide you.
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

/// Exercise 01.1: the model-state bytes of \p parameter_count parameters, exact (no rounding to
/// KiB or GB), for sizes up to hundreds of billions of parameters.
/// \param parameter_count Ψ (> 0).
/// \param precision the training precision.
/// \param optimizer the optimizer.
/// \param adam_mini_v_blocks Adam-mini's number of v entries (0 ≤ blocks ≤ Ψ; ignored by the
///        other optimizers).
/// \return the bytes of each part.
/// \throws vramlab::UsageError naming the value for Ψ ≤ 0 or Adam-mini blocks outside [0, Ψ], and
/// for Adafactor, whose state depends on the tensors' shapes (lesson 09), not on Ψ alone.
ModelStateBreakdown model_state_breakdown(int64_t parameter_count, estimate::Precision precision,
                                          estimate::Optimizer optimizer,
                                          int64_t adam_mini_v_blocks = 0);

}  // namespace vramlab::lesson01
