/// \file
/// \brief Dropout in the runtime: the model's settings and where each block's masks start in the
/// counter-based stream.
///
/// A mask element is a pure function of (seed, offset + index) (KernelBackend::dropout_forward),
/// so a mask is not stored: the backward regenerates it from the offset its forward used. The
/// model advances one offset through the whole run, like the offset of PyTorch's Philox
/// generator: every step draws new masks. A checkpointed block that replays its recorded offset
/// when its forward is re-run gets bitwise the forward's masks (torch.utils.checkpoint's
/// preserve_rng_state=True); one that draws fresh counters gets other masks, and its gradients
/// no longer belong to the loss that was computed.
#pragma once

#include <cstdint>

namespace vramlab::nn {

/// How the model drops activations while training (GPT-2's attn_pdrop and resid_pdrop, one p).
struct DropoutSettings {
  /// Drop probability in [0, 1) of the attention probabilities and of the attention and MLP
  /// outputs before they join the residual stream; 0 (the default) runs no dropout at all.
  float p = 0.0f;
  uint64_t seed = 0;  ///< the masks' stream
  /// A re-run (checkpointed) forward replays the counters its first forward used.
  bool preserve_rng_state = true;
};

/// Where the three dropout sites of one block start in the stream.
struct LayerDropout {
  float p = 0.0f;                        ///< 0: none
  uint64_t seed = 0;                     ///< the masks' stream
  uint64_t attention_offset = 0;         ///< the (B, H, T, T) probabilities
  uint64_t attention_output_offset = 0;  ///< the attention's (B, T, C) output
  uint64_t mlp_output_offset = 0;        ///< the MLP's (B, T, C) output

  /// The sites of a block whose counters start at \p offset, for batch B, sequence T, H heads and
  /// hidden C.
  static LayerDropout at(const DropoutSettings& settings, uint64_t offset, int64_t B, int64_t T,
                         int64_t H, int64_t C) {
    const auto scores = static_cast<uint64_t>(B * H * T * T);
    const auto outputs = static_cast<uint64_t>(B * T * C);
    return {settings.p, settings.seed, offset, offset + scores, offset + scores + outputs};
  }
  /// \return how many counters one block draws: B·H·T² + 2·B·T·C.
  static uint64_t draws(int64_t B, int64_t T, int64_t H, int64_t C) {
    return static_cast<uint64_t>(B * H * T * T) + 2 * static_cast<uint64_t>(B * T * C);
  }
};

}  // namespace vramlab::nn
