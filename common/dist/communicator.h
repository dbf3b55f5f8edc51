/// \file
/// \brief Communicator: the collectives data and tensor parallelism are built on (all-reduce,
/// reduce-scatter, all-gather, broadcast, send/recv, barrier) over typed tensor views, counting
/// the bytes every call sends and receives.
///
/// Implementations: MpiCommunicator (CPU ranks under `mpirun`, OpenMPI), NcclCommunicator (GPU
/// ranks) and SimulatedCommunicator (N ranks as threads of one process, for `meta` and `sim`).
/// Strategy code (common/dist/zero_strategy.h) only sees this interface, so the 64-rank run the
/// ZeRO lesson sizes on `meta` runs the same code as the 4-rank run under `mpirun`.
///
/// **What "bytes sent" means.** Every call is counted as the bandwidth-optimal ring algorithm
/// moves it (NCCL's and the ZeRO paper's accounting, §7), whatever the library does inside:
/// the buffer of n elements is cut into N chunks, chunk c being elements
/// [⌊c·n/N⌋, ⌊(c+1)·n/N⌋) (ring_chunk), and
///   - reduce_scatter: rank r sends every chunk but chunk r (the one it ends up owning) and
///     receives as much: n − |chunk r| elements each way;
///   - all_gather: rank r sends every chunk but chunk r+1 mod N: n − |chunk (r+1) mod N|;
///   - all_reduce: a reduce-scatter followed by an all-gather, both of the above;
///   - broadcast: a chain from the root, root → root+1 → …: every rank but the last of the chain
///     sends n, every rank but the root receives n;
///   - send/recv: the view's bytes; barrier: nothing.
/// For n divisible by N these are the textbook (N−1)/N·n and 2(N−1)/N·n, so DDP's all-reduce of
/// Ψ gradients is 2Ψ(N−1)/N and ZeRO-3's two all-gathers and one reduce-scatter are 3Ψ(N−1)/N.
/// A world of one rank sends nothing.
///
/// **Traffic.** Each call names what it moves (Traffic): the ZeRO paper's volumes are those of
/// gradients and parameters; the few scalars a step reduces (the loss for the report, the
/// gradient norm and the loss scaler's inf check) are `metrics`, counted apart so that they do not
/// blur the comparison.
///
/// Reductions are sums. 16-bit tensors (bf16, f16) are summed in fp32 and rounded once to
/// nearest even per element by the simulated communicator; MPI adds them pairwise with a
/// user-defined operation and NCCL natively, so 16-bit sums may differ from one implementation to
/// another in the last bit (the page says which comparisons are bitwise).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/memory/tensor_view.h"

namespace vramlab::dist {

using memory::TensorView;

/// The operations a Communicator offers, in the order stats are reported.
enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast, send, recv, barrier };
/// Number of Collective values.
inline constexpr size_t kCollectiveCount = 7;
/// \return e.g. "reduce_scatter".
std::string_view collective_name(Collective collective);

/// What a call moves, so that per-step volumes can be compared with the ZeRO paper's.
enum class Traffic {
  gradients,    ///< gradient reductions (all-reduce in DDP, reduce-scatter in ZeRO-1/2/3)
  parameters,   ///< parameter all-gathers (ZeRO-1/2 after the step, ZeRO-3 before each use)
  activations,  ///< tensor parallelism's all-reduces of activations and their gradients
  metrics,      ///< scalars: the loss, the gradient norm, the loss scaler's inf check
  other,        ///< everything else (tests, exercises, benchmarks)
};
/// Number of Traffic values.
inline constexpr size_t kTrafficCount = 5;
/// \return e.g. "gradients".
std::string_view traffic_name(Traffic traffic);

/// Calls, bytes and wall time of one kind of call.
struct CallCounts {
  int64_t calls = 0;           ///< calls made
  int64_t bytes_sent = 0;      ///< as the ring algorithm sends them (see the file comment)
  int64_t bytes_received = 0;  ///< as the ring algorithm receives them
  double seconds = 0.0;        ///< wall time inside the calls (waiting for peers included)
};

/// What a communicator has done since it was made (or reset_stats()).
struct CommunicationStats {
  /// [collective][traffic].
  std::array<std::array<CallCounts, kTrafficCount>, kCollectiveCount> calls{};
  /// \return the sum over collectives of one traffic class.
  [[nodiscard]] CallCounts of(Traffic traffic) const;
  /// \return the sum over traffic classes of one collective.
  [[nodiscard]] CallCounts of(Collective collective) const;
  /// \return everything.
  [[nodiscard]] CallCounts total() const;
  /// Adds \p other's counts (a TP group's to a DP group's). \return *this.
  CommunicationStats& operator+=(const CommunicationStats& other);
  /// \return the counts of *this not in \p earlier (a step's: after − before).
  [[nodiscard]] CommunicationStats since(const CommunicationStats& earlier) const;
};

/// [first, first + count): a chunk of a buffer.
struct Chunk {
  int64_t first = 0;  ///< first element
  int64_t count = 0;  ///< elements
};

/// Chunk \p c of \p n elements cut into \p world_size ring chunks: [⌊c·n/N⌋, ⌊(c+1)·n/N⌋).
/// \param n elements (≥ 0). \param world_size N (≥ 1). \param c in [0, N).
/// \return the chunk (64-bit arithmetic: n up to 2⁶³/N).
Chunk ring_chunk(int64_t n, int64_t world_size, int64_t c);

/// The ring-algorithm bytes one rank sends in one call (see the file comment).
/// \param collective the call (send/recv: the buffer's bytes; barrier: 0).
/// \param elements n: the reduced buffer (all_reduce), the input of reduce_scatter (N × output),
/// the output of all_gather (N × input), the broadcast buffer.
/// \param element_bytes bytes per element. \param rank r. \param world_size N.
/// \param root the broadcast's root (ignored otherwise).
/// \return bytes sent by rank r (received bytes: see ring_bytes_received).
int64_t ring_bytes_sent(Collective collective, int64_t elements, int64_t element_bytes,
                        int64_t rank, int64_t world_size, int64_t root = 0);
/// As ring_bytes_sent, for the bytes rank r receives.
int64_t ring_bytes_received(Collective collective, int64_t elements, int64_t element_bytes,
                            int64_t rank, int64_t world_size, int64_t root = 0);

/// A group of ranks exchanging tensors. Not thread-safe: one thread per rank drives it.
///
/// Every collective must be called by every rank of the group in the same order with the same
/// element count and dtype; a rank that does not (a mismatched collective) or a rank that is
/// lost makes the others fail with a PeerFailure naming it where the implementation can tell
/// (the simulated communicator always can; under `mpirun`, OpenMPI ends the job when a rank dies
/// and names it, and MpiCommunicator's watchdog names a stopped rank or a mismatched call).
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// \return this rank, in [0, world_size()).
  [[nodiscard]] int64_t rank() const { return rank_; }
  /// \return N.
  [[nodiscard]] int64_t world_size() const { return world_size_; }
  /// \return e.g. "mpi", "nccl", "simulated".
  [[nodiscard]] virtual std::string_view backend() const = 0;

  /// Sums \p buffer over the ranks, in place; every rank ends with the sum.
  /// \param buffer (n) f32, bf16 or f16, the same n and dtype on every rank.
  /// \param traffic what it moves. \throws vramlab::UsageError for another dtype;
  /// PeerFailure when a peer is lost or called something else.
  void all_reduce(const TensorView& buffer, Traffic traffic);
  /// Sums \p input over the ranks and leaves chunk r of the sum in rank r's \p output.
  /// \param input (N·m) f32, bf16 or f16. \param output (m), same dtype; must not overlap input.
  /// \param traffic what it moves. \throws vramlab::UsageError when input is not N × output or
  /// the dtypes differ; PeerFailure as all_reduce.
  void reduce_scatter(const TensorView& input, const TensorView& output, Traffic traffic);
  /// Concatenates every rank's \p input, in rank order, into every rank's \p output.
  /// \param input (m) any dtype. \param output (N·m), same dtype; must not overlap input.
  /// \param traffic what it moves. \throws vramlab::UsageError when output is not N × input;
  /// PeerFailure as all_reduce.
  void all_gather(const TensorView& input, const TensorView& output, Traffic traffic);
  /// Copies the root's \p buffer into every rank's.
  /// \param buffer (n) any dtype. \param root in [0, N). \param traffic what it moves.
  /// \throws vramlab::UsageError for a root out of range; PeerFailure as all_reduce.
  void broadcast(const TensorView& buffer, int64_t root, Traffic traffic);
  /// Sends \p buffer to \p peer (returns once the peer has it or it is buffered).
  /// \param buffer any dtype. \param peer in [0, N), not this rank. \param traffic what it moves.
  /// \throws vramlab::UsageError for a bad peer; PeerFailure when the peer is lost.
  void send(const TensorView& buffer, int64_t peer, Traffic traffic);
  /// Receives into \p buffer what \p peer sends (same element count and dtype).
  /// \param buffer any dtype. \param peer in [0, N), not this rank. \param traffic what it moves.
  /// \throws vramlab::UsageError for a bad peer; PeerFailure when the peer is lost or sent
  /// another size.
  void recv(const TensorView& buffer, int64_t peer, Traffic traffic);
  /// Returns when every rank has called it. \throws PeerFailure as all_reduce.
  void barrier();

  /// Splits the ranks into groups (MPI_Comm_split): ranks calling with the same \p color form a
  /// group, ordered by \p key (ties by rank). Every rank of this communicator must call it. The
  /// new communicator counts its own stats. Tensor parallelism uses it for its TP and DP groups.
  /// \param color ≥ 0. \param key orders the group. \return this rank's group.
  /// \throws vramlab::UsageError for a negative color; PeerFailure as all_reduce.
  [[nodiscard]] virtual std::unique_ptr<Communicator> split(int64_t color, int64_t key) = 0;

  /// Turns data movement off (a `meta` device: views have no storage): the calls are then only
  /// checked and counted, as if they had run. \param move false to count only.
  void set_move_data(bool move) { move_data_ = move; }
  /// \return false after set_move_data(false).
  [[nodiscard]] bool moves_data() const { return move_data_; }

  /// \return the counts since construction or the last reset_stats().
  [[nodiscard]] const CommunicationStats& stats() const { return stats_; }
  /// Zeroes the counts.
  void reset_stats() { stats_ = {}; }

 protected:
  /// \param rank r in [0, N). \param world_size N ≥ 1.
  /// \throws vramlab::UsageError otherwise.
  Communicator(int64_t rank, int64_t world_size);

  /// The implementations: arguments already checked, bytes counted by the caller; called for a
  /// world of one rank too (reduce_scatter and all_gather then copy input to output), never for
  /// an empty buffer (every rank of a collective has the same count, so all skip it alike).
  virtual void do_all_reduce(const TensorView& buffer) = 0;
  /// See reduce_scatter.
  virtual void do_reduce_scatter(const TensorView& input, const TensorView& output) = 0;
  /// See all_gather.
  virtual void do_all_gather(const TensorView& input, const TensorView& output) = 0;
  /// See broadcast.
  virtual void do_broadcast(const TensorView& buffer, int64_t root) = 0;
  /// See send.
  virtual void do_send(const TensorView& buffer, int64_t peer) = 0;
  /// See recv.
  virtual void do_recv(const TensorView& buffer, int64_t peer) = 0;
  /// See barrier.
  virtual void do_barrier() = 0;

 private:
  void count(Collective collective, Traffic traffic, int64_t elements, int64_t element_bytes,
             int64_t root, double seconds);

  int64_t rank_;
  int64_t world_size_;
  CommunicationStats stats_;
  bool move_data_ = true;
};

/// This rank in \p group, or 0 without a group (a layer whose tensor-parallel group is null runs
/// whole).
inline int64_t rank_in(const Communicator* group) {
  return group != nullptr ? group->rank() : 0;
}
/// The ranks of \p group, or 1 without a group.
inline int64_t size_of(const Communicator* group) {
  return group != nullptr ? group->world_size() : 1;
}

/// A peer was lost or did not make the same call: the message names the rank and the collective.
struct PeerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace vramlab::dist
