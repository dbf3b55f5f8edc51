/// \file
/// \brief MpiCommunicator: the Communicator over OpenMPI, for CPU ranks started by `mpirun`
/// (one machine or many). Collectives map to one MPI call each (MPI_Allreduce,
/// MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Send/MPI_Recv, MPI_Barrier); bf16
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
