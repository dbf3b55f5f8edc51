/// \file
/// \brief Bytes of the model states (parameters, gradients, optimizer states) per parameter, by
/// training precision and optimizer, before any partitioning.
///
/// ZeRO's accounting (Rajbhandari et al. 2020, §3.1): mixed precision keeps 2Ψ fp16 parameters,
/// 2Ψ fp16 gradients and KΨ optimizer states, where K includes the fp32 master copy (Adam: K = 12
/// = master 4 + momentum 4 + variance 4; 16Ψ in all). This file generalises K to every optimizer:
///
/// | precision  | parameter | gradient         | master | one optimizer-state element |
/// |------------|-----------|------------------|--------|-----------------------------|
/// | fp32       | 4         | 4                | 0      | 4                           |
/// | bf16 (pure)| 2         | 2                | 0      | 2 (states kept in bf16)     |
/// | mixed-fp16 | 2         | 2 (4 if fp32)    | 4      | 4                           |
/// | mixed-bf16 | 2         | 2 (4 if fp32)    | 4      | 4                           |
///
/// | optimizer    | optimizer-state bytes for Ψ parameters (element size e from the table) |
/// |--------------|--------------------------------------------------------------------------|
/// | sgd          | 0                                                                        |
/// | sgd-momentum | eΨ (momentum)                                                            |
/// | adamw        | 2eΨ (m, v)                                                               |
/// | adamw-8bit   | 2Ψ + 8⌈Ψ/B⌉ without shapes: one byte per state plus one fp32 absmax per block |
/// |              | of B per state (bitsandbytes, B = 256 since its PR #1365, 2048 in the paper); |
/// |              | with shapes, per tensor: 2n + 8⌈n/B⌉, or 8n for a tensor kept in fp32      |
/// | lion         | eΨ (momentum only; Chen et al. 2023)                                      |
/// | adam-mini    | eΨ (m) + e × number of v blocks (Zhang et al. 2024; 0 without shapes)     |
/// | adafactor    | e × (rows + cols per matrix + numel per vector) (needs shapes)            |
///
/// The per-tensor counts come from common/estimate/optimizer_state_counts.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/model/model_config.h"
#include "common/plan/techniques.h"

namespace vramlab::estimate {

/// The precisions and optimizers, from the plan's vocabulary (common/plan/techniques.h).
using plan::is_mixed;
using plan::Optimizer;
using plan::optimizer_name;
using plan::parse_optimizer;
using plan::parse_precision;
using plan::Precision;
using plan::precision_name;

/// Bytes of one activation element: 4 for fp32, 2 otherwise (the paper's 16-bit activations).
/// \param precision a precision. \return 4 or 2.
int64_t activation_element_bytes(Precision precision);

/// How the model states of Ψ parameters are stored.
struct ModelStateOptions {
  Precision precision = Precision::mixed_bf16;  ///< training precision.
  Optimizer optimizer = Optimizer::adamw;       ///< optimizer.
  int64_t quantization_block_size = 256;        ///< B of adamw-8bit (bitsandbytes default 256).
  bool fp32_gradients =
      false;  ///< mixed precision with fp32 gradients (Hugging Face's 18 B/param).
  int64_t adam_mini_v_blocks = 0;  ///< number of Adam-mini v entries (0 when shapes are unknown).
  /// Adafactor's second-moment entries (optimizer_state_counts); 0 when shapes are unknown, which
  /// Adafactor refuses.
  int64_t adafactor_state_elements = 0;
  /// 8-bit AdamW with shapes (optimizer_state_counts): the absmax values per moment, or -1
  /// without shapes (then ⌈Ψ/B⌉, one tensor).
  int64_t eight_bit_absmax_blocks = -1;
  int64_t eight_bit_fp32_elements = 0;  ///< 8-bit AdamW: elements whose states stay fp32.
};

/// Model-state bytes of Ψ parameters on one device, before partitioning (ZeRO stage 0, no TP).
struct ModelStateBytes {
  int64_t parameters = 0;  ///< working-precision parameters.
  int64_t gradients = 0;   ///< gradients.
  int64_t master_weights =
      0;  ///< fp32 master copy (mixed precision), part of the optimizer states.
  int64_t optimizer_moments = 0;  ///< the optimizer's own states (momentum, variance, absmax).
  /// \return master_weights + optimizer_moments: ZeRO's KΨ.
  [[nodiscard]] int64_t optimizer_states() const { return master_weights + optimizer_moments; }
  /// \return parameters + gradients + optimizer_states().
  [[nodiscard]] int64_t total() const { return parameters + gradients + optimizer_states(); }
};

/// Model-state bytes of \p parameter_count parameters under \p options (see the file comment).
/// \param parameter_count Ψ (> 0).
/// \param options precision, optimizer and its settings.
/// \return the bytes per component.
/// \throws vramlab::UsageError for Ψ ≤ 0, a block size ≤ 0, negative Adam-mini blocks, fp32
/// gradients without mixed precision, or an overflow.
ModelStateBytes model_state_bytes(int64_t parameter_count, const ModelStateOptions& options);

/// Number of Adam-mini v entries for a model, following the paper's partition (Zhang et al.
/// 2024, §2.3): embedding and output rows by token, Q and K by head, V, attention output and MLP
/// weights by output neuron (one per row), and one per tensor for norms and biases.
/// \param model a valid model. \return the number of v entries.
/// \throws vramlab::UsageError if the model is invalid.
int64_t adam_mini_v_blocks(const ModelConfig& model);

}  // namespace vramlab::estimate
