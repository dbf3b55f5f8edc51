/// \file
/// \brief A chosen plan as the frameworks spell it: DeepSpeed's JSON configuration and the lines
/// of PyTorch (FSDP, autocast, checkpointing, SDPA) that apply the same techniques, with what a
/// framework cannot express said in place. The facts behind each line, with their sources, are
/// on lesson 08's page and in docs/design/planner.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/planner/step_cost.h"

namespace vramlab::planner {

/// \return DeepSpeed's configuration for \p candidate (train_batch_size, the micro-batch and the
/// accumulation, bf16/fp16, zero_optimization with its offload blocks, activation_checkpointing,
/// the optimizer when DeepSpeed has it, gradient_clipping).
nlohmann::json deepspeed_config(const Candidate& candidate);

/// \return the PyTorch lines that train \p candidate, one technique per line, each a statement
/// or a comment saying what PyTorch lacks.
std::vector<std::string> pytorch_lines(const Candidate& candidate);

}  // namespace vramlab::planner
