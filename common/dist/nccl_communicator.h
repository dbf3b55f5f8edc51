/// \file
/// \brief NcclCommunicator: the Communicator over NCCL, for GPU ranks (one GPU per rank, ranks
/// started by `mpirun`). Only built with VRAMLAB_HAVE_NCCL (the CUDA toolkit's NCCL was found).
///
/// The ranks agree on an ncclUniqueId through a bootstrap Communicator (rank 0 makes it and
/// broadcasts its 128 bytes, as `torch.distributed` does through its store), then each rank joins
/// with ncclCommInitRank on its own device. Collectives map to one NCCL call each
/// (ncclAllReduce, ncclReduceScatter, ncclAllGather, ncclBroadcast, ncclSend/ncclRecv) on the
/// communicator's stream; bf16 and f16 are summed natively. In-place forms are NCCL's own
/// (reduce_scatter's output is chunk r of its input, all_gather's input chunk r of its output).
///
/// **Calls are synchronous**: each waits for its stream before returning, so that buffers are
/// ready, the wall time counted is the transfer's and the strategies run the same code as on MPI.
/// A training step that wanted overlap would enqueue on a side stream instead; the ZeRO lesson
/// measures memory, not overlap. group() fuses several calls (ncclGroupStart/ncclGroupEnd) and
/// waits once, at its end: the way to exchange with two peers at once (a ring's send and recv).
///
/// Pointers must be device memory (cudaMalloc) of the communicator's device; views on `meta` are
/// only counted (set_move_data(false)).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "common/dist/communicator.h"

namespace vramlab::dist {

/// One GPU rank of an NCCL communicator (made from a bootstrap group, or by split()).
class NcclCommunicator final : public Communicator {
 public:
  /// Joins the NCCL communicator of \p bootstrap's ranks (same rank numbers); every rank of
  /// \p bootstrap must call it.
  /// \param bootstrap carries the ncclUniqueId (one 128-byte broadcast from rank 0); must move
  /// data. \param device the CUDA device of this rank; -1 picks the node-local rank
  /// (OMPI_COMM_WORLD_LOCAL_RANK, else the bootstrap rank) modulo the device count.
  /// \param stream the stream calls are enqueued on (not owned; must outlive the communicator);
  /// nullptr makes and owns one.
  /// \throws vramlab::UsageError for a bad device or a bootstrap that does not move data;
  /// PeerFailure when NCCL cannot initialise (its message says why).
  NcclCommunicator(Communicator& bootstrap, int64_t device = -1, cudaStream_t stream = nullptr);
  ~NcclCommunicator() override;
  [[nodiscard]] std::unique_ptr<Communicator> split(int64_t color, int64_t key) override;
  [[nodiscard]] std::string_view backend() const override { return "nccl"; }

  /// Runs \p calls (this communicator's collectives and sends/receives) as one NCCL group: they
  /// are enqueued between ncclGroupStart and ncclGroupEnd and the stream is waited for once, at
  /// the end. Each call is still checked and counted. Groups do not nest.
  /// \throws vramlab::UsageError when nested; whatever the calls throw (the group is closed).
  void group(const std::function<void()>& calls);

  /// \return the CUDA device of this rank.
  [[nodiscard]] int64_t device() const { return device_; }
  /// \return the stream calls are enqueued on.
  [[nodiscard]] cudaStream_t stream() const { return stream_; }

 protected:
  void do_all_reduce(const TensorView& buffer) override;
  void do_reduce_scatter(const TensorView& input, const TensorView& output) override;
  void do_all_gather(const TensorView& input, const TensorView& output) override;
  void do_broadcast(const TensorView& buffer, int64_t root) override;
  void do_send(const TensorView& buffer, int64_t peer) override;
  void do_recv(const TensorView& buffer, int64_t peer) override;
  void do_barrier() override;

 private:
  struct Impl;  // the ncclComm_t and the owned stream, kept out of this header (no nccl.h)
  NcclCommunicator(int64_t rank, int64_t world_size, int64_t device, cudaStream_t stream,
                   std::unique_ptr<Impl> impl);
  // Waits for the stream unless inside group().
  void complete(const char* call);

  int64_t device_;
  cudaStream_t stream_;
  bool in_group_ = false;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramlab::dist
