/// \file
/// \brief Exercise 04.4: the model-state bytes one rank holds (parameters, gradients, optimizer
/// states) with ZeRO over N data-parallel ranks and Megatron tensor parallelism over t ranks
/// together, exact to the byte with FSDP's padding, up to 70B parameters and beyond.
///
/// The one API shared by the stub (exercises/04-zero/model_state_per_rank.cpp) and the reference
/// (solutions/04-zero/model_state_per_rank.cpp). The runtime's count is
/// estimate::estimate_memory with zero_stage, data_parallel and tensor_parallel
/// (common/estimate/estimator.h); the tests compare with it and with dist::ShardLayout.
///
/// **Bytes per element** (AdamW; the optimizer states include the fp32 master copy, as ZeRO's K):
/// fp32 4 + 4 + 8; pure bf16 2 + 2 + 4 (moments in bf16); mixed fp16/bf16 2 + 2 + 12.
///
/// **Tensor parallelism first.** A tensor split by Megatron (column- or row-parallel weights,
/// column-parallel biases) has numel/t elements on each TP rank; a replicated one (norms,
/// row-parallel biases, embeddings, the LM head) has all of them.
///
/// **Then ZeRO over N ranks**, per FSDP unit of n_u elements (what one TP rank holds of it):
/// the unit is padded to p_u = ⌈n_u/N⌉·N and each rank owns s_u = p_u/N (dist::ShardLayout). The
/// runtime keeps its store padded whenever it shards (stage ≥ 1), so with Ψ_t = Σ n_u:
/// | stage | parameters      | gradients       | optimizer states |
/// |-------|-----------------|-----------------|------------------|
/// | 0 DDP | Ψ_t·P           | Ψ_t·G           | Ψ_t·O            |
/// | 1     | Σ p_u·P         | Σ p_u·G         | Σ s_u·O          |
/// | 2     | Σ p_u·P         | Σ s_u·G         | Σ s_u·O          |
/// | 3     | Σ s_u·P         | Σ s_u·G         | Σ s_u·O          |
#pragma once

#include <cstdint>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dist/parallel_options.h"

namespace vramlab::lesson04 {

/// One parameter tensor of the whole (unsplit) model.
struct StateTensor {
  int64_t numel = 0;  ///< elements of the whole tensor (≥ 0)
  /// Its FSDP unit, counted from 0 in store order (embedding, blocks, head); units need not be
  /// contiguous in the list, and must be < the number of tensors.
  int64_t unit = 0;
  bool split_by_tensor_parallel = false;  ///< Megatron splits it over the t ranks
};

/// How the model is trained and spread.
struct ParallelModelStates {
  std::vector<StateTensor> tensors;                       ///< every parameter tensor, once
  amp::Precision precision = amp::Precision::mixed_bf16;  ///< training precision (AdamW)
  dist::ZeroStage stage = dist::ZeroStage::ddp;  ///< ZeRO stage over the data-parallel ranks
  int64_t data_parallel = 1;                     ///< N
  int64_t tensor_parallel = 1;                   ///< t
};

/// The model-state bytes of one rank.
struct RankModelStateBytes {
  int64_t parameters = 0;        ///< working-precision parameters
  int64_t gradients = 0;         ///< gradients
  int64_t optimizer_states = 0;  ///< AdamW's m and v, and the fp32 master copy when mixed
};

/// Exercise 04.4: the bytes one rank holds (see the file comment). Every rank holds the same.
/// \param states the tensors, the precision, the stage, N and t.
/// \return the three byte counts.
/// \throws vramlab::UsageError naming the value for N < 1, t < 1, a tensor of < 0 elements, a
///         unit outside [0, number of tensors), a split tensor whose numel t does not divide, or
///         bytes that do not fit in an int64_t.
RankModelStateBytes model_state_bytes_per_rank(const ParallelModelStates& states);

}  // namespace vramlab::lesson04
