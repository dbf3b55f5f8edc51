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
///
/// Under Megatron tensor parallelism over t ranks (Shoeybi et al. 2019, §3), parameters(r, t)
/// lists rank r's share of the same tensors, under the same names: the column-parallel linears
/// (attention q/k/v, GPT-2's fused qkv, MLP fc/gate/up) keep 1/t of their output rows (whole
/// heads: H/t query heads, kv_heads/t key/value heads, F/t MLP units) and of their biases; the
/// row-parallel linears (attention proj/o, MLP proj/down) keep 1/t of their input columns, and
/// their biases, the norms, the embeddings and the LM head are whole on every rank (Megatron adds
/// a row-parallel bias once, after the all-reduce of the partial outputs).
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

/// How tensor parallelism cuts a parameter over its t ranks (Megatron, Shoeybi et al. 2019).
/// Weights are (out, in), so a column-parallel linear (its output split) is cut by rows and a
/// row-parallel linear (its input split) by columns.
enum class TensorParallelSplit {
  replicated,  ///< whole on every rank: norms, embeddings, LM head, row-parallel biases.
  rows,        ///< column-parallel weights and their biases: this rank's output rows.
  columns,     ///< row-parallel weights: this rank's input columns.
};

/// One parameter tensor of a model: its name, shape, owning layer and initialisation, and, under
/// tensor parallelism, which part of the whole (t = 1) tensor it is.
struct ParameterSpec {
  std::string name;                  ///< e.g. "blocks.3.attn.qkv.weight".
  std::vector<int64_t> shape;        ///< e.g. {3C, C}; a bias or norm weight is {C}.
  int64_t layer = -1;                ///< transformer block index, or -1 outside the blocks.
  InitKind init = InitKind::normal;  ///< how the runtime fills it before training.
  TensorParallelSplit split = TensorParallelSplit::replicated;  ///< how t ranks share it.
  /// The split dimension is made of this many equal bands, each cut over the ranks on its own:
  /// 3 for GPT-2's fused qkv (rank r holds its heads of q, of k and of v), 1 otherwise.
  int64_t split_bands = 1;
  int64_t tp_rank = 0;  ///< the tensor-parallel rank this part belongs to.
  int64_t tp_size = 1;  ///< t, the tensor-parallel degree the shape is for.
  /// \return the number of elements (product of the shape).
  [[nodiscard]] int64_t numel() const;
  /// \return the shape of the whole tensor (the shape at t = 1).
  [[nodiscard]] std::vector<int64_t> full_shape() const;
  /// Where an element of this rank's part sits in the whole tensor (both row-major).
  /// \param local element index in [0, numel()). \return its index in the whole tensor.
  /// \throws vramlab::InternalError for an index out of range.
  [[nodiscard]] int64_t full_index(int64_t local) const;
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

  /// Checks that Megatron tensor parallelism can split this model over \p tp_size ranks: whole
  /// heads, whole key/value heads and whole MLP units per rank.
  /// \param tp_size t. \throws vramlab::UsageError naming the value: t < 1, or t not dividing
  /// heads, kv_heads or ffn_hidden (and whatever validate() throws).
  void validate_tensor_parallel(int64_t tp_size) const;

  /// Every parameter tensor, in the order the runtime creates them (see the file comment).
  /// \return the list. \throws vramlab::UsageError if validate() fails.
  [[nodiscard]] std::vector<ParameterSpec> parameters() const;

  /// Tensor-parallel rank \p tp_rank's part of every parameter tensor, same names and order as
  /// parameters() (which is parameters(0, 1)); see the file comment for what is split.
  /// \param tp_rank r in [0, t). \param tp_size t.
  /// \return the list. \throws vramlab::UsageError naming the value if validate_tensor_parallel(t)
  /// fails or r is outside [0, t).
  [[nodiscard]] std::vector<ParameterSpec> parameters(int64_t tp_rank, int64_t tp_size) const;

  /// Exact number of parameters (sum of numel over parameters(); a tied head counted once).
  /// \return the count. \throws vramlab::UsageError if validate() fails.
  [[nodiscard]] int64_t parameter_count() const;

  /// Exact number of parameters one of \p tp_size tensor-parallel ranks holds (sum of numel over
  /// parameters(0, t): the replicated tensors whole, so more than parameter_count() / t).
  /// \param tp_size t. \return the count. \throws vramlab::UsageError as parameters(0, t).
  [[nodiscard]] int64_t rank_parameter_count(int64_t tp_size) const;
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

/// \return the module name of transformer layer \p layer, "blocks.L": the prefix of its parameter
/// names, of the tensors it saves and of the allocations snapshots attribute to it.
std::string layer_module_name(int64_t layer);

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
