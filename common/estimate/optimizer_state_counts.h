/// \file
/// \brief The optimizer-state elements that need the tensors' shapes, counted from the papers'
/// and bitsandbytes' rules tensor by tensor. The runtime optimizers lay their states out on their
/// own (common/optim/state_layout.h); the tests compare the two.
///
/// - **8-bit AdamW** (Dettmers et al. 2022; bitsandbytes): each tensor is quantized on its own, so
///   a tensor of n elements has ⌈n/B⌉ absmax values per moment; a tensor with fewer than
///   `min_8bit_size` elements keeps fp32 states (bitsandbytes' `p.numel() < min_8bit_size`), and so
///   do the embedding tables under stable embedding (§3.3; StableEmbedding's optim_bits = 32).
/// - **Adam-mini** (Zhang et al. 2024, §2.3) keeps one v per block: Q and K one per head, V, the
///   attention output and the MLP one per output neuron (a row of the weight), the embeddings and
///   the LM head one per token (a row), and one per norm weight or bias.
/// - **Adafactor** (Shazeer and Stern 2018; torch.optim.Adafactor) keeps rows + cols values for a
///   matrix's second moment and numel for a vector's.
#pragma once

#include <cstdint>

#include "common/model/model_config.h"
#include "common/plan/techniques.h"

namespace vramlab::estimate {

/// Element counts over every parameter tensor, what the estimator multiplies by bytes.
struct OptimizerStateCounts {
  int64_t adam_mini_v = 0;          ///< Adam-mini v entries (blocks).
  int64_t adafactor = 0;            ///< Adafactor second-moment entries (rows + cols, or numel).
  int64_t eight_bit_quantized = 0;  ///< elements with 1-byte states (per moment).
  int64_t eight_bit_absmax = 0;     ///< absmax values per moment.
  int64_t eight_bit_fp32 = 0;       ///< elements with fp32 states (per moment).
};

/// \param model a valid model. \param eight_bit 8-bit AdamW's settings.
/// \return the counts over ModelConfig::parameters() (64-bit, overflow-checked).
/// \throws vramlab::UsageError for an invalid model, block_size < 1, min_8bit_size < 0 or an
/// overflow.
OptimizerStateCounts optimizer_state_counts(const ModelConfig& model,
                                            const plan::EightBitOptions& eight_bit = {});

}  // namespace vramlab::estimate
