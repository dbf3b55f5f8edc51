/// \file
/// \brief Starting the ranks of a run and making each rank's groups: one process, the processes
/// `mpirun` started, or N ranks simulated as threads of this process. `vramlab train` and lesson
/// 04 start their ranks here, so a rank's code never asks which kind it is.
///
/// The groups follow Megatron's layout: in a world of W = N·t ranks, t consecutive ranks form a
/// tensor-parallel group (tensor parallelism talks every layer, so it stays inside a node, where
/// the links are fastest) and ranks t apart a data-parallel one. With t = 1 the world is the
/// data-parallel group.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/dist/parallel_options.h"

namespace vramlab::dist {

/// Which ranks to start.
struct LaunchSpec {
  /// N > 0: N ranks as threads of this process (also inside an `mpirun` process); 0: the ranks
  /// `mpirun` started, or one process without a world.
  int64_t simulate_ranks = 0;
  int64_t tensor_parallel = 1;  ///< t: it must divide the world's size.
  /// The collectives only count bytes (a `meta` device has no data to move).
  bool count_only = false;
};

/// One rank of a launched run, as its code sees it.
struct LaunchedRank {
  Communicator* world = nullptr;  ///< null for one process without ranks
  ParallelGroups groups;          ///< both null for one process
  int64_t rank = 0;               ///< in the world
  int64_t world_size = 1;         ///< W
  /// \return whether this rank prints and reports for the run (rank 0).
  [[nodiscard]] bool speaks() const { return rank == 0; }
};

/// \param spec the ranks. \return W: spec.simulate_ranks, `mpirun`'s process count, or 1.
/// \throws vramlab::UsageError when simulate_ranks < 0, t < 1 or t does not divide W.
int64_t launched_world_size(const LaunchSpec& spec);

/// Starts the ranks of \p spec and calls \p fn once for each rank this process runs (every
/// thread of a simulated world; this process's rank under `mpirun`; once without a world), each
/// with its groups made. Returns when they have all returned.
/// \throws vramlab::UsageError when t < 1 or t does not divide W, or naming the missing library
/// under `mpirun` in a build without MPI; whatever a rank threw (a simulated rank's failure fails
/// the others' calls first, see run_simulated_ranks).
void launch_ranks(const LaunchSpec& spec, const std::function<void(const LaunchedRank&)>& fn);

/// Every rank's \p values, in rank order, on every rank: an all-gather over the world that moves
/// the data even when the run only counts (rank 0's report of a `meta` run). Every rank must pass
/// the same count. Without a world, \p values itself.
/// \param rank the caller's rank. \param values this rank's values.
/// \return W · values.size() values.
std::vector<int64_t> all_gather_values(const LaunchedRank& rank, std::vector<int64_t> values);

/// Every rank's \p text on rank 0, in rank order (send/recv, traffic class other), moving the
/// data even when the run only counts; the other ranks get nothing. Without a world, {text}.
/// \param rank the caller's rank. \param text this rank's text (e.g. its results as JSON).
/// \return on rank 0 W texts; elsewhere none.
std::vector<std::string> gather_to_rank0(const LaunchedRank& rank, std::string text);

/// \return this process's rank in the world `mpirun` started, or 0 outside `mpirun`: whether
/// this process reports for a run before its ranks are launched.
int64_t launched_rank();

/// \return true when this build has MPI and its launcher (mpirun) can be executed.
bool mpirun_usable();

/// Replaces this process with `mpirun -np N` running this binary with \p argv, with what
/// OpenMPI needs to start as root and to put more ranks than cores on the machine, and one
/// OpenMP thread per rank (the ranks share the cores).
/// Returns only when the exec failed (errno says why).
/// \param argc this process's argument count. \param argv its arguments. \param ranks N.
/// \param colour whether the ranks may print colour (their stdout is mpirun's pseudo-terminal,
/// whatever this one is).
void exec_under_mpirun(int argc, char** argv, int64_t ranks, bool colour);

}  // namespace vramlab::dist
