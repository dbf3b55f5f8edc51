/// \file
/// \brief ModelConfig: the shapes of a decoder-only transformer (GPT-2 or Llama family), the
/// named configurations the workbook uses, and the exact list of parameter tensors the runtime
/// lays out for them.
///
/// The parameter list is the contract between the estimator and the runtime's modules: the
/// modules create exactly these tensors, in this order, with these names and shapes, so that
/// measured parameter bytes equal `parameter_count() × bytes per element` exactly.
///
/// GPT-2 layout (tied embeddings, learned positions, LayerNorm with bias, GELU MLP with 4C):
///   wte (V, C), wpe (maxT, C); per layer l: blocks.l.ln1.{weight,bias} (C),
///   blocks.l.attn.qkv.weight (3C, C) + bias (3C), blocks.l.attn.proj.weight (C, C) + bias (C),
///   blocks.l.ln2.{weight,bias} (C), blocks.l.mlp.fc.weight (4C, C) + bias (4C),
///   blocks.l.mlp.proj.weight (C, 4C) + bias (C); lnf.{weight,bias} (C); the LM head is wte.
/// Llama layout (untied, RoPE so no position table, RMSNorm, SwiGLU MLP with F, no biases):
///   embed (V, C); per layer: blocks.l.norm1.weight (C), blocks.l.attn.q.weight (C, C),
///   .k.weight (kvC, C), .v.weight (kvC, C), .o.weight (C, C), blocks.l.norm2.weight (C),
///   blocks.l.mlp.gate.weight (F, C), .up.weight (F, C), .down.weight (C, F); normf.weight (C);
///   lm_head.weight (V, C). kvC = kv_heads × C / heads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/model_kinds.h"

namespace vramlab {

/// How a parameter tensor is initialised (GPT-2's scheme, as in llm.c's train_gpt2.py). normal
/// comes first, so a value-initialised InitKind is normal.
enum class InitKind {
  normal,           ///< N(0, 0.02²): embeddings and the other weight matrices.
  residual_normal,  ///< N(0, (0.02/√(2L))²): projections that write into the residual stream
                    ///< (attn.proj/o, mlp.proj/down), scaled so the stream's variance does not
                    ///< grow with depth (GPT-2 paper, section 2.3).
  zeros,            ///< biases.
  ones,             ///< norm weights.
};

/// One parameter tensor of a model: its name, shape, owning layer and initialisation.
struct ParameterSpec {
  std::string name;                  ///< e.g. "blocks.3.attn.qkv.weight".
  std::vector<int64_t> shape;        ///< e.g. {3C, C}; a bias or norm weight is {C}.
  int64_t layer = -1;                ///< transformer block index, or -1 outside the blocks.
  InitKind init = InitKind::normal;  ///< how the runtime fills it before training.
  /// \return the number of elements (product of the shape).
  [[nodiscard]] int64_t numel() const;
};

/// The shapes of a decoder-only transformer.
struct ModelConfig {
  std::string name;                        ///< e.g. "gpt2-124m", or "custom".
  ModelFamily family = ModelFamily::gpt2;  ///< parameter names and attention layout.
  int64_t layers = 0;                      ///< L, number of transformer blocks.
  int64_t hidden = 0;                      ///< C (h in Korthikanti et al.), the model width.
  int64_t heads = 0;                       ///< H (a in Korthikanti et al.), attention heads.
  int64_t kv_heads = 0;          ///< key/value heads (= heads without grouped-query attention).
  int64_t ffn_hidden = 0;        ///< F, MLP inner width (4C for GPT-2).
  int64_t vocab = 0;             ///< V, vocabulary size.
  int64_t max_seq = 0;           ///< maximum sequence length (rows of wpe for GPT-2).
  bool tied_embeddings = false;  ///< LM head shares the token embedding.
  bool learned_position_embeddings = false;  ///< a (maxT, C) position table (GPT-2).
  NormKind norm = NormKind::layernorm;       ///< LayerNorm (weight + bias) or RMSNorm (weight).
  MlpKind mlp = MlpKind::gelu;               ///< GELU (fc, proj) or SwiGLU (gate, up, down).
  bool bias = false;                         ///< linear layers carry biases.
  /// RoPE base θ (Su et al., RoFormer): 10000 for Llama 2, 500000 for Llama 3 (their released
  /// config.json). Only the llama family uses it; 0 for GPT-2, which has learned positions.
  double rope_theta = 0.0;

  /// \return hidden / heads, the width of one attention head.
  [[nodiscard]] int64_t head_dim() const { return hidden / heads; }
  /// \return kv_heads × head_dim, the width of the K and V projections.
  [[nodiscard]] int64_t kv_hidden() const { return kv_heads * head_dim(); }

  /// Checks the shapes.
  /// \throws vramlab::UsageError naming the bad value: a size ≤ 0, more than 100000 layers,
  /// heads not dividing hidden,
  /// kv_heads not dividing heads, a family/norm/mlp outside its enum, a llama config without a
  /// positive rope_theta, or a parameter count that overflows int64.
  void validate() const;

  /// Every parameter tensor, in the order the runtime creates them (see the file comment).
  /// \return the list. \throws vramlab::UsageError if validate() fails.
  [[nodiscard]] std::vector<ParameterSpec> parameters() const;

  /// Exact number of parameters (sum of numel over parameters(); a tied head counted once).
  /// \return the count. \throws vramlab::UsageError if validate() fails.
  [[nodiscard]] int64_t parameter_count() const;

  /// Parameters of the largest single transformer block (what ZeRO-3 gathers at once).
  /// \return the count. \throws vramlab::UsageError if validate() fails.
  [[nodiscard]] int64_t largest_layer_parameter_count() const;
};

/// A GPT-2 family configuration (tied, learned positions, LayerNorm, GELU, biases, F = 4C).
/// \param name the config's name. \param layers L. \param hidden C. \param heads H.
/// \param vocab V. \param max_seq rows of the position table.
/// \return the configuration (not validated).
ModelConfig gpt2_config(std::string name, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t vocab, int64_t max_seq);

/// A Llama family configuration (untied, RoPE, RMSNorm, SwiGLU, no biases).
/// \param name the config's name. \param layers L. \param hidden C. \param heads H.
/// \param kv_heads key/value heads. \param ffn_hidden F. \param vocab V.
/// \param max_seq maximum context. \param rope_theta RoPE base (Llama 2's 10000 by default).
/// \return the configuration (not validated).
ModelConfig llama_config(std::string name, int64_t layers, int64_t hidden, int64_t heads,
                         int64_t kv_heads, int64_t ffn_hidden, int64_t vocab, int64_t max_seq,
                         double rope_theta = 10000.0);

/// Names of the built-in configurations, in a stable order: gpt2-mini, gpt2-tiny, gpt2-124m,
/// gpt2-355m, gpt2-774m, gpt2-1.5b, llama-tiny, llama2-7b, llama2-13b, llama2-70b, llama3-8b,
/// llama3-70b.
/// \return the names.
std::vector<std::string_view> model_config_names();

/// A built-in configuration by name.
/// \param name one of model_config_names().
/// \return the configuration.
/// \throws vramlab::UsageError "unknown model 'NAME' (expected one of: ...)".
ModelConfig model_config_by_name(std::string_view name);

}  // namespace vramlab
