/// \file
/// \brief How a training run is spread over ranks: the data-parallel group and its ZeRO stage,
/// and the tensor-parallel group (Megatron). Both groups are Communicators the caller made (from
/// MPI_COMM_WORLD under `mpirun`, from a SimulatedWorld in one process), so the trainer and the
/// model never ask which kind they are.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/dist/communicator.h"
#include "common/plan/techniques.h"

namespace vramlab::dist {

/// ZeRO's stages and their names, from the plan's vocabulary (common/plan/techniques.h).
using plan::zero_stage_from_int;
using plan::zero_stage_name;
using plan::ZeroStage;

/// The communicators of one rank's groups.
struct ParallelGroups {
  /// The data-parallel group (each rank trains on its own sequences); null means one rank.
  Communicator* data_parallel = nullptr;
  /// The tensor-parallel group (Megatron column/row-parallel linears); null means no TP.
  Communicator* tensor_parallel = nullptr;

  /// \return the data-parallel rank count (1 without a group).
  [[nodiscard]] int64_t data_parallel_size() const {
    return data_parallel ? data_parallel->world_size() : 1;
  }
  /// \return the tensor-parallel rank count (1 without a group).
  [[nodiscard]] int64_t tensor_parallel_size() const {
    return tensor_parallel ? tensor_parallel->world_size() : 1;
  }
};

/// The parallel layout of one rank, as data parallelism runs it: the groups and the plan's ZeRO
/// stage and prefetch.
struct ParallelOptions : ParallelGroups {
  ZeroStage zero = ZeroStage::ddp;  ///< how the data-parallel ranks share the model states
  /// ZeRO-3: gather the next unit's parameters together with the current one's (the forward's
  /// next block, the backward's previous), as FSDP's forward/backward prefetch does; here the
  /// gather is synchronous, so prefetch shows its memory cost (two units gathered at once), not
  /// its overlap.
  bool prefetch = false;
};

}  // namespace vramlab::dist
