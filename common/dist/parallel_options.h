/// \file
/// \brief How a training run is spread over ranks: the data-parallel group and its ZeRO stage,
/// and the tensor-parallel group (Megatron). Both groups are Communicators the caller made (from
/// MPI_COMM_WORLD under `mpirun`, from a SimulatedWorld in one process), so the trainer and the
/// model never ask which kind they are.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/dist/communicator.h"

namespace vramlab::dist {

/// ZeRO's stages (Rajbhandari et al. 2020), stage 0 being plain data parallelism (DDP).
enum class ZeroStage : int64_t {
  ddp = 0,               ///< replicated model states, gradients all-reduced
  optimizer_states = 1,  ///< P_os: optimizer states (master weights included) sharded
  gradients = 2,         ///< P_os+g: gradients reduce-scattered as the backward goes, sharded
  parameters = 3,        ///< P_os+g+p: parameters sharded too, gathered per unit around use
};

/// \param stage 0 to 3. \return the stage. \throws vramlab::UsageError naming the value.
ZeroStage zero_stage_from_int(int64_t stage);
/// \return "ddp", "zero1", "zero2" or "zero3".
std::string_view zero_stage_name(ZeroStage stage);

/// The parallel layout of one rank.
struct ParallelOptions {
  /// The data-parallel group (each rank trains on its own sequences); null means one rank.
  Communicator* data_parallel = nullptr;
  /// The tensor-parallel group (Megatron column/row-parallel linears); null means no TP.
  Communicator* tensor_parallel = nullptr;
  ZeroStage zero = ZeroStage::ddp;  ///< how the data-parallel ranks share the model states
  /// ZeRO-3: gather the next unit's parameters together with the current one's (the forward's
  /// next block, the backward's previous), as FSDP's forward/backward prefetch does; here the
  /// gather is synchronous, so prefetch shows its memory cost (two units gathered at once), not
  /// its overlap.
  bool prefetch = false;

  /// \return the data-parallel rank count (1 without a group).
  [[nodiscard]] int64_t data_parallel_size() const {
    return data_parallel ? data_parallel->world_size() : 1;
  }
  /// \return the tensor-parallel rank count (1 without a group).
  [[nodiscard]] int64_t tensor_parallel_size() const {
    return tensor_parallel ? tensor_parallel->world_size() : 1;
  }
};

}  // namespace vramlab::dist
