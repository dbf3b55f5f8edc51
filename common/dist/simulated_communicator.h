/// \file
/// \brief N ranks in one process: each rank is a thread with its own Runtime (its own device and
/// allocator), and SimulatedCommunicator moves data between the threads' memory (on `sim`/`cpu`)
/// or only counts it (on `meta`, where there is no storage). The ZeRO lesson sizes a 64-rank,
/// 7.5B run on a laptop this way with the strategy code `mpirun` runs.
///
/// Reductions sum in rank order 0, 1, …, N−1 (in fp32 for 16-bit tensors, rounded once to
/// nearest even), so an all-reduce and a reduce-scatter of the same data give the same bits and
/// every strategy's gradients are bitwise those of DDP.
///
/// Faults: a rank that throws marks the world failed; every rank waiting in a call, and every
/// later call, throws PeerFailure naming the failed rank and what it was doing. A collective
/// whose ranks disagree (another operation, element count, dtype or root) fails on every rank
/// with a PeerFailure naming the ranks and both calls. Nothing waits forever: when every rank that
/// has not returned waits in a call no other rank can complete (a ring of blocking sends, a recv
/// from a rank that has returned), every one of them throws a PeerFailure that starts with
/// "deadlock:" and says what each rank waits for. (Only run_simulated_ranks knows when a rank
/// has returned; threads that drive a SimulatedWorld themselves get the deadlocks among waiting
/// ranks found, not a wait on a rank whose thread has ended.)
///
/// A SimulatedWorld made with move_data false synchronises and checks every call without touching
/// memory; a communicator set to set_move_data(false) skips the world altogether and only counts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/dist/communicator.h"

namespace vramlab::dist {

class SimulatedWorld;

/// One rank's communicator in a SimulatedWorld (made by SimulatedWorld::communicator).
class SimulatedCommunicator final : public Communicator {
 public:
  /// \param world shared by the ranks; must outlive the communicator. \param rank in [0, N).
  /// \throws vramlab::UsageError for a rank outside [0, N).
  SimulatedCommunicator(SimulatedWorld& world, int64_t rank);
  /// A communicator that keeps its world alive (the group worlds split() makes).
  /// \param world shared by the group's ranks. \param rank in [0, N).
  /// \throws vramlab::UsageError for a rank outside [0, N) or a null world.
  SimulatedCommunicator(std::shared_ptr<SimulatedWorld> world, int64_t rank);
  [[nodiscard]] std::unique_ptr<Communicator> split(int64_t color, int64_t key) override;
  [[nodiscard]] std::string_view backend() const override { return "simulated"; }

 protected:
  void do_all_reduce(const TensorView& buffer) override;
  void do_reduce_scatter(const TensorView& input, const TensorView& output) override;
  void do_all_gather(const TensorView& input, const TensorView& output) override;
  void do_broadcast(const TensorView& buffer, int64_t root) override;
  void do_send(const TensorView& buffer, int64_t peer) override;
  void do_recv(const TensorView& buffer, int64_t peer) override;
  void do_barrier() override;

 private:
  std::shared_ptr<SimulatedWorld> owned_world_;  // set for split() groups, null for the root world
  SimulatedWorld& world_;
};

/// The state N simulated ranks share: the rendezvous of every collective and the mailboxes of
/// send/recv.
class SimulatedWorld {
 public:
  /// \param world_size N ≥ 1. \param move_data false on `meta` (views have no storage: calls
  /// synchronise and are counted, nothing is copied).
  /// \throws vramlab::UsageError for N < 1.
  SimulatedWorld(int64_t world_size, bool move_data);
  ~SimulatedWorld();
  SimulatedWorld(const SimulatedWorld&) = delete;
  SimulatedWorld& operator=(const SimulatedWorld&) = delete;

  /// \return N.
  [[nodiscard]] int64_t world_size() const;
  /// \return whether calls copy data.
  [[nodiscard]] bool moves_data() const;
  /// Marks the world failed because \p rank failed with \p reason (first call wins): every rank
  /// waiting in a call, and every later call, throws PeerFailure "rank R failed: reason".
  /// \param rank in [0, N). \param reason what the rank threw. \throws vramlab::UsageError for a
  /// rank outside [0, N).
  void fail(int64_t rank, const std::string& reason);

  /// The shared state (rendezvous slots, mailboxes, failure); defined in the .cpp.
  struct State;
  /// \return the shared state, for SimulatedCommunicator.
  [[nodiscard]] State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

/// Runs \p body once per rank, each on its own thread with its own SimulatedCommunicator, and
/// waits for all of them. A rank that throws fails the world (the others' calls throw
/// PeerFailure naming it); afterwards the first rank's original exception is rethrown (the
/// lowest rank among those that did not fail only because of a peer).
/// \param world_size N ≥ 1. \param move_data as SimulatedWorld's.
/// \param body called with the rank's communicator (rank() and world_size() tell which).
/// \throws whatever the first failing rank threw; vramlab::UsageError for N < 1.
void run_simulated_ranks(int64_t world_size, bool move_data,
                         const std::function<void(Communicator&)>& body);

}  // namespace vramlab::dist
