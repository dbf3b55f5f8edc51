/// \file
/// \brief MpiCommunicator: the Communicator over OpenMPI, for CPU ranks started by `mpirun`
/// (one machine or many). Collectives map to one non-blocking MPI call each (MPI_Iallreduce,
/// MPI_Ireduce_scatter_block, MPI_Iallgather, MPI_Ibcast, MPI_Isend/MPI_Irecv, MPI_Ibarrier); bf16
/// and f16 sums use a user-defined MPI operation (MPI has no 16-bit float types). In-place calls
/// (reduce_scatter's output is chunk r of its input, all_gather's input is chunk r of its output,
/// as NCCL allows) use MPI_IN_PLACE; an in-place reduce-scatter leaves the input's other chunks
/// undefined. MPI 3.1 counts are int: all-reduce, broadcast and send/recv of more than 2³¹ − 1
/// elements go in pieces, while a reduce-scatter or all-gather of more than that per rank is a
/// vramlab::UsageError. MPI errors come back as codes (MPI_ERRORS_RETURN) and are thrown: a bad
/// argument as vramlab::UsageError, anything else (a truncated message, a lost peer) as
/// PeerFailure, with MPI_Error_string's text.
///
/// A rank that dies ends the job: OpenMPI's runtime kills the others and names the lost rank
/// ("mpirun noticed that process rank 2 ... exited on signal 9"), so no rank hangs.
///
/// A rank that stops answering, or calls another collective or size, is caught by a watchdog
/// (Note [Collective watchdog] in mpi_communicator.cpp): before each call the ranks exchange a
/// small header, and every wait is polled against VRAMLAB_COLLECTIVE_TIMEOUT seconds (default 300).
/// The others then throw a PeerFailure naming the rank and the call, e.g. "mpi all_reduce of
/// 65536 f32 on rank 0 of 3, call #52: rank 1 did not arrive within 5 s ... stopped or hung", or
/// "mpi mismatched collective ... this rank called all_reduce of 65536 f32, rank 1 called
/// all_gather of 65536 f32". After a PeerFailure MPI cannot be finalised: the process's exit
/// calls MPI_Abort, which ends every rank of the job. A bad VRAMLAB_COLLECTIVE_TIMEOUT is a
/// vramlab::UsageError from world().
#pragma once

#include <cstdint>
#include <memory>

#include "common/dist/communicator.h"

namespace vramlab::dist {

/// \return true when this process was started by `mpirun` (OpenMPI's OMPI_COMM_WORLD_SIZE is
/// set), so a binary can tell a rank from a plain run.
bool launched_by_mpirun();

/// MPI_COMM_WORLD (or a split of it).
class MpiCommunicator final : public Communicator {
 public:
  /// MPI_COMM_WORLD. Initialises MPI on first use (MPI_THREAD_FUNNELED) and finalises it at
  /// process exit. \throws vramlab::UsageError when MPI cannot be initialised.
  static std::unique_ptr<MpiCommunicator> world();
  ~MpiCommunicator() override;
  /// MPI_Comm_split; the group only counts when this communicator does (set_move_data).
  [[nodiscard]] std::unique_ptr<Communicator> split(int64_t color, int64_t key) override;
  [[nodiscard]] std::string_view backend() const override { return "mpi"; }

 protected:
  void do_all_reduce(const TensorView& buffer) override;
  void do_reduce_scatter(const TensorView& input, const TensorView& output) override;
  void do_all_gather(const TensorView& input, const TensorView& output) override;
  void do_broadcast(const TensorView& buffer, int64_t root) override;
  void do_send(const TensorView& buffer, int64_t peer) override;
  void do_recv(const TensorView& buffer, int64_t peer) override;
  void do_barrier() override;

 private:
  struct Impl;  // the MPI_Comm, kept out of this header so users need no mpi.h
  MpiCommunicator(int64_t rank, int64_t world_size, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramlab::dist
