/// \file
/// \brief Where each optimizer keeps its state over a model's parameter tensors: what the runtime
/// optimizers of this folder allocate from. The estimator counts the same states on its own, from
/// the papers' rules (common/estimate/optimizer_state_counts.h), so the tests that compare a run's
/// measured state bytes with `vramlab estimate` compare two derivations, not one.
///
/// Three optimizers need the tensors' shapes, not just Ψ:
/// - **8-bit AdamW** quantizes each tensor on its own (bitsandbytes: blocks never span tensors),
///   so a tensor of n elements has ⌈n/B⌉ absmax values per moment. Tensors with fewer than
///   `min_8bit_size` elements keep two fp32 states (bitsandbytes' min_8bit_size = 4096), and so do
///   the embedding tables when asked (the paper's stable-embedding advice, Dettmers et al. 2022
///   §3.3; bitsandbytes' StableEmbedding sets optim_bits = 32 for its weight).
/// - **Adam-mini** keeps one v per block of the paper's partition (Zhang et al. 2024, §2.3): Q and
///   K by head, V, the attention output and the MLP by output neuron (a row), the embeddings and
///   the LM head by token (a row), norms and biases one per tensor. Every block is a run of
///   consecutive elements of the row-major tensor.
/// - **Adafactor** factors the second moment of a matrix (rows + cols values) and keeps it whole
///   for a vector (torch.optim.Adafactor: factored when the tensor has two or more dimensions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model/model_config.h"
#include "common/plan/techniques.h"

namespace vramlab::optim {

/// `count` Adam-mini blocks of `block_size` consecutive elements, starting `offset` elements into
/// their tensor.
struct BlockRun {
  int64_t offset = 0;      ///< first element, relative to the tensor.
  int64_t block_size = 0;  ///< elements per block (≥ 1).
  int64_t count = 0;       ///< blocks (≥ 1).
};

/// One parameter tensor and where each optimizer keeps its state.
struct TensorStateLayout {
  std::string name;                  ///< e.g. "blocks.0.attn.qkv.weight".
  std::vector<int64_t> shape;        ///< e.g. {3C, C}.
  int64_t offset = 0;                ///< first element in the flat parameter store (layout order).
  int64_t numel = 0;                 ///< elements.
  bool eight_bit_quantized = false;  ///< 8-bit AdamW: 1-byte states; else two fp32 states.
  int64_t absmax_blocks = 0;         ///< 8-bit AdamW: ⌈numel / B⌉ when quantized, else 0.
  std::vector<BlockRun> adam_mini_runs;  ///< Adam-mini's v blocks, covering the tensor in order.
  bool adafactor_factored = false;       ///< Adafactor: a matrix (rows + cols) or a vector (numel).
  int64_t rows = 1;                      ///< shape[0] of a matrix, 1 for a vector.
  int64_t cols = 0;                      ///< shape[1] of a matrix, numel for a vector.
};

/// The layout of every parameter tensor of \p model, in ModelConfig::parameters() order (the
/// flat store's order). \param model a valid model. \param eight_bit 8-bit AdamW's settings.
/// \return one entry per tensor. \throws vramlab::UsageError for an invalid model or
/// block_size < 1 or min_8bit_size < 0.
std::vector<TensorStateLayout> optimizer_state_layout(const ModelConfig& model,
                                                      const plan::EightBitOptions& eight_bit = {});

/// What the optimizers allocate over a layout: the sizes of their state buffers.
struct StateTotals {
  int64_t adam_mini_v = 0;          ///< Adam-mini v entries (blocks).
  int64_t adafactor = 0;            ///< Adafactor second-moment entries (rows + cols, or numel).
  int64_t eight_bit_quantized = 0;  ///< elements with 1-byte states (per moment).
  int64_t eight_bit_absmax = 0;     ///< absmax values per moment.
  int64_t eight_bit_fp32 = 0;       ///< elements with fp32 states (per moment).
};

/// \param layout from optimizer_state_layout. \return its totals (64-bit, overflow-checked).
/// \throws vramlab::UsageError on overflow.
StateTotals state_totals(const std::vector<TensorStateLayout>& layout);

}  // namespace vramlab::optim
