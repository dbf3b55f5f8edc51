/// \file
/// \brief Exercise 09.3: Adam-mini's second moment (Zhang et al. 2024, "Adam-mini: Use Fewer
/// Learning Rates To Gain More", arXiv 2406.16793, §2.3 and Algorithm 1): a full m, but one v for
/// each block of a partition of the parameters, so v shrinks from Ψ values to about a thousandth
/// of Ψ.
///
/// The one API shared by the stub (exercises/09-optimizer-memory/adam_mini_partition.cpp) and the
/// reference (solutions/09-optimizer-memory/adam_mini_partition.cpp). The runtime's layout is
/// optim::optimizer_state_layout (common/optim/state_layout.h) and its kernel
/// kernels::cpu::adam_mini_update; the tests compare with both.
///
/// **The partition** of one tensor of ModelConfig::parameters() (row-major, so a row is a run of
/// consecutive elements):
/// - the query and key projections: one block per attention head (the rows of one head);
/// - every other matrix (the value projection, the attention output, the MLP matrices): one block
///   per output neuron, that is per row;
/// - the embedding tables and the LM head: one block per token, that is per row;
/// - vectors (norm weights, biases): one block for the whole tensor.
///
/// GPT-2's fused `attn.qkv.weight` (3C, C) holds Q, K and V one after the other. The kv_heads of a
/// model with grouped-query attention give K and V fewer rows than Q.
///
/// **One step of v**, per block b of the gradient g: v[b] = β2·v[b] + (1 − β2)·mean(g² over the
/// block), in f32.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/model/model_config.h"

namespace vramlab::lesson09 {

/// `count` blocks of `block_size` consecutive elements, the first one starting `offset` elements
/// into its tensor.
struct VBlockRun {
  int64_t offset = 0;      ///< first element, relative to the tensor
  int64_t block_size = 0;  ///< elements per block (≥ 1)
  int64_t count = 0;       ///< blocks (≥ 1)
};

/// Exercise 09.3: Adam-mini's blocks of one tensor, as runs of equal blocks that cover it in
/// order. How the blocks are grouped into runs is free (GPT-2's Q and K heads may be one run or
/// two): the tests compare the blocks.
/// \param model a valid model. \param tensor one of model.parameters().
/// \return the runs.
/// \throws vramlab::UsageError for an invalid model.
std::vector<VBlockRun> adam_mini_runs(const ModelConfig& model, const ParameterSpec& tensor);

/// Exercise 09.3: the number of v values Adam-mini keeps for the whole model: the number of
/// blocks over every tensor, the LM head included once however it is stored.
/// \param model a valid model. \return the count (int64_t: 70B models included).
/// \throws vramlab::UsageError for an invalid model.
int64_t adam_mini_v_count(const ModelConfig& model);

/// Exercise 09.3: one step of v for one tensor (see the file comment).
/// \param v (number of blocks of \p runs) f32, updated in place.
/// \param grad (elements covered by \p runs) f32, the tensor's gradient.
/// \param runs the tensor's runs, in order. \param beta2 β2 in [0, 1).
/// \throws vramlab::UsageError naming the sizes when v or grad does not match \p runs.
void adam_mini_v_step(std::span<float> v, std::span<const float> grad,
                      std::span<const VBlockRun> runs, float beta2);

}  // namespace vramlab::lesson09
