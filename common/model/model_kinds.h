/// \file
/// \brief The architectural choices of a decoder-only transformer as enums: the family (which
/// parameter names and attention layout), the normalisation and the MLP, with their printed names
/// and parsers. The attention kernel, a training choice, is the plan's (common/plan/techniques.h).
///
/// The names are the spellings the workbook's JSON and text outputs have always used, so
/// printing an enum gives the same bytes as the string fields it replaced.
#pragma once

#include <string_view>

#include "common/plan/techniques.h"

namespace vramlab {

/// The layout family: GPT-2 (fused qkv, learned positions, tied head) or Llama (separate q/k/v,
/// RoPE, untied head).
enum class ModelFamily {
  gpt2,   ///< GPT-2 (Radford et al., 2019), llm.c's layout.
  llama,  ///< Llama 2 / Llama 3 (Touvron et al., 2023; Meta, 2024).
};

/// The normalisation in front of each sub-layer and at the end.
enum class NormKind {
  layernorm,  ///< LayerNorm: weight and bias, saves mean and rstd.
  rmsnorm,    ///< RMSNorm: weight only, saves rstd.
};

/// The feed-forward sub-layer.
enum class MlpKind {
  gelu,    ///< fc (F, C), GELU, proj (C, F).
  swiglu,  ///< gate and up (F, C), SiLU(gate) · up, down (C, F).
};

/// The attention kernel (naive or flash), from the plan's vocabulary (common/plan/techniques.h):
/// a runtime choice that changes what is saved, not the weights or the maths.
using plan::attention_kind_name;
using plan::AttentionKind;
using plan::parse_attention_kind;

/// \param family a family. \return "gpt2" or "llama".
std::string_view model_family_name(ModelFamily family);
/// \param norm a normalisation. \return "layernorm" or "rmsnorm".
std::string_view norm_kind_name(NormKind norm);
/// \param mlp an MLP kind. \return "gelu" or "swiglu".
std::string_view mlp_kind_name(MlpKind mlp);

/// \param text "gpt2" or "llama". \return the family.
/// \throws vramlab::UsageError "unknown family 'TEXT' (expected gpt2 or llama)".
ModelFamily parse_model_family(std::string_view text);
/// \param text "layernorm" or "rmsnorm". \return the normalisation.
/// \throws vramlab::UsageError "unknown norm 'TEXT' (expected layernorm or rmsnorm)".
NormKind parse_norm_kind(std::string_view text);
/// \param text "gelu" or "swiglu". \return the MLP kind.
/// \throws vramlab::UsageError "unknown mlp 'TEXT' (expected gelu or swiglu)".
MlpKind parse_mlp_kind(std::string_view text);

}  // namespace vramlab
