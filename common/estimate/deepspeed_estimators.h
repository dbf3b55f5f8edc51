/// \file
/// \brief DeepSpeed's model-state memory estimators, re-implemented from their formulas so the
/// workbook can show them beside ZeRO's.
///
/// Source: deepspeedai/DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py
/// `estimate_zero2_model_states_mem_needs` and stage3.py `estimate_zero3_model_states_mem_needs`
/// (read at commit edaa722). The ZeRO-2 function follows the code **after PR #5099** (commit
/// f4cb866c2, 2024-06-04): without offload the GPU needs 2P + int(18P/N); before that PR, and in
/// docs/code-docs/source/memory.rst still, it was 4P + int(16P/N). Both return
/// (int(cpu), int(gpu)) in bytes; DeepSpeed prints them as x/2**30 labelled "GB" (i.e. GiB).
#pragma once

#include <cstdint>

#include "common/model/model_config.h"

namespace vramlab::estimate {

/// CPU and GPU bytes as DeepSpeed's estimators return them.
struct DeepSpeedEstimate {
  int64_t cpu_bytes = 0;  ///< int(cpu_mem): host memory per node.
  int64_t gpu_bytes = 0;  ///< int(gpu_mem): memory per GPU.
};

/// `estimate_zero2_model_states_mem_needs` (post-PR-5099). With N = nodes × gpus_per_node and
/// P = total_params: offload: gpu = 2P, cpu = P·max(4N, 16)·factor; no offload:
/// gpu = 2P + int(18P/N), cpu = P·4·gpus_per_node·factor.
/// \param total_params P (> 0). \param gpus_per_node GPUs per node (> 0).
/// \param num_nodes nodes (> 0). \param cpu_offload offload the optimizer to the CPU.
/// \param additional_buffer_factor DeepSpeed's 1.5 by default (≥ 0).
/// \return the estimate. \throws vramlab::UsageError for sizes ≤ 0, a negative factor, or a
/// result beyond int64.
DeepSpeedEstimate deepspeed_zero2_model_states_mem_needs(int64_t total_params,
                                                         int64_t gpus_per_node = 1,
                                                         int64_t num_nodes = 1,
                                                         bool cpu_offload = true,
                                                         double additional_buffer_factor = 1.5);

/// `estimate_zero3_model_states_mem_needs`. With llm = 4·largest_layer_params, gf = 1/num_nodes,
/// N = nodes × gpus_per_node, P = total_params, f = additional_buffer_factor:
/// offload params and optimizer: gpu = llm, cpu = P·18·gf·f (zero_init) or
/// P·max(4·gpn, 18·gf)·f; offload optimizer only: gpu = llm + int(2P/N), cpu = P·16·gf·f or
/// P·max(4·gpn, 16·gf)·f; no offload: gpu = llm + int(18P/N), cpu = largest·4·gpn·f (zero_init)
/// or P·4·gpn·f. `cpu_offload_params` only matters when `cpu_offload` is set, as in DeepSpeed.
/// \param total_params P (> 0). \param largest_layer_params parameters of the largest layer (> 0).
/// \param gpus_per_node GPUs per node (> 0). \param num_nodes nodes (> 0).
/// \param cpu_offload offload the optimizer. \param cpu_offload_params offload the parameters.
/// \param zero_init parameters created partitioned (zero.Init).
/// \param additional_buffer_factor DeepSpeed's 1.5 by default (≥ 0).
/// \return the estimate. \throws vramlab::UsageError as for the ZeRO-2 function.
DeepSpeedEstimate deepspeed_zero3_model_states_mem_needs(
    int64_t total_params, int64_t largest_layer_params, int64_t gpus_per_node = 1,
    int64_t num_nodes = 1, bool cpu_offload = true, bool cpu_offload_params = true,
    bool zero_init = true, double additional_buffer_factor = 1.5);

/// DeepSpeed's `largest_layer_params` for \p model: the largest number of parameters one module
/// holds itself, `max(sum(p.numel() for p in m.parameters(recurse=False)) for m in
/// model.modules())` in `estimate_zero3_model_states_mem_needs_all_live`. A module here is a
/// parameter's name without its `.weight` or `.bias` ("blocks.3.mlp.fc"), or the whole name
/// ("wte"); a tied head would report the embedding's size, which is counted already. For most
/// language models it is the embedding (V·C), not a transformer block.
/// \param model a valid model. \return the count. \throws vramlab::UsageError if validate() fails.
int64_t deepspeed_largest_layer_params(const ModelConfig& model);

}  // namespace vramlab::estimate
