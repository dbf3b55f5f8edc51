/// \file
/// \brief The names of the activations the runtime saves for backward, in one place for the
/// modules that save them (common/nn) and the estimator that predicts them
/// (runtime_saved_activations_per_layer), so the two layouts cannot drift apart.
///
/// GPT-2's spellings follow llm.c's ActivationTensors (train_gpt2.c). They appear in memory
/// snapshots, the lesson outputs and the tests. Shapes: B batch, T sequence, C hidden, H heads,
/// kvC = kv_heads × C / H, F MLP width, V vocabulary.
#pragma once

#include <string>
#include <string_view>

namespace vramlab::saved {

inline constexpr char encoded[] = "encoded";  ///< (B, T, C) token (+ position) embedding.

inline constexpr char ln1[] = "ln1";      ///< (B, T, C) GPT-2 block's first LayerNorm output.
inline constexpr char ln2[] = "ln2";      ///< (B, T, C) GPT-2 block's second LayerNorm output.
inline constexpr char norm1[] = "norm1";  ///< (B, T, C) Llama block's first RMSNorm output.
inline constexpr char norm2[] = "norm2";  ///< (B, T, C) Llama block's second RMSNorm output.
inline constexpr char lnf[] = "lnf";      ///< (B, T, C) final norm output (both families).

inline constexpr char qkv[] = "qkv";        ///< (3, B, T, C) GPT-2's fused projections q, k, v.
inline constexpr char q[] = "q";            ///< (B, T, C) Llama's query, after RoPE.
inline constexpr char k[] = "k";            ///< (B, T, kvC) Llama's key, after RoPE.
inline constexpr char v[] = "v";            ///< (B, T, kvC) Llama's value.
inline constexpr char preatt[] = "preatt";  ///< (B, H, T, T) scaled scores (scratch, not saved).
inline constexpr char att[] = "att";        ///< (B, H, T, T) attention probabilities (naive).
inline constexpr char lse[] = "lse";    ///< (B, H, T) f32 log-sum-exp of each score row (flash).
inline constexpr char atty[] = "atty";  ///< (B, T, C) attention output before proj/o.
inline constexpr char residual2[] = "residual2";  ///< (B, T, C) stream after the attention.

inline constexpr char fch[] = "fch";              ///< (B, T, F) GELU MLP's fc output.
inline constexpr char fch_gelu[] = "fch_gelu";    ///< (B, T, F) GELU of fch.
inline constexpr char gate[] = "gate";            ///< (B, T, F) SwiGLU's gate projection.
inline constexpr char up[] = "up";                ///< (B, T, F) SwiGLU's up projection.
inline constexpr char swiglu[] = "swiglu";        ///< (B, T, F) SiLU(gate) · up.
inline constexpr char residual3[] = "residual3";  ///< (B, T, C) stream after the MLP: block output.

inline constexpr char logits[] = "logits";  ///< (B, T, V) LM head output (a temporary of the loss).
inline constexpr char probs[] = "probs";    ///< (B, T, V) softmax of the logits.
inline constexpr char losses[] = "losses";  ///< (B, T) per-token cross-entropy.

/// \param norm a norm's saved output, e.g. ln1. \return the name of its saved mean, (B, T),
/// which only a LayerNorm keeps.
inline std::string mean_of(std::string_view norm) {
  return std::string(norm) + "_mean";
}

/// \param norm a norm's saved output, e.g. ln1. \return the name of its saved reciprocal standard
/// deviation, (B, T).
inline std::string rstd_of(std::string_view norm) {
  return std::string(norm) + "_rstd";
}

}  // namespace vramlab::saved
