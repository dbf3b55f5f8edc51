// SimulatedCommunicator: N ranks as threads of one process (see simulated_communicator.h).
//
// Note [Simulated rendezvous]
// Every collective starts with a rendezvous: each rank publishes its call (operation, element
// count, dtype, root) and its buffer addresses in its slot, and the last rank to arrive compares
// the calls and opens the next generation. Calls that move data then run in two phases split by a
// second rendezvous: in phase 1 every rank only reads its peers' inputs (into its own output, or
// into a scratch buffer when writing the output would clobber an input a peer still reads: the
// in-place reduce-scatter); in phase 2 it writes its output from scratch. A rank's buffers are
// therefore never written while a peer may read them, and no rank leaves a call while a peer still
// reads its memory. Reductions are computed chunk by chunk, each element summed over ranks
// 0, 1, …, N−1 (in fp32 for 16-bit dtypes, rounded once), so every call gives the same bits for
// the same element.
//
// Note [Simulated failures and deadlocks]
// One Hub (one mutex, one condition variable per thread) is shared by a world and the group worlds
// split() makes from it, so a failure anywhere wakes every waiting thread. A thread only ever
// waits in wait_locked, which records what it waits for (a predicate and the call). When no thread
// is running (all have returned or wait) and no waiting thread's predicate holds, nothing can
// change any more: the world fails with "deadlock: ..." listing every waiting rank. Every state
// change happens under the mutex, so this test is exact, never a timeout.
#include "common/dist/simulated_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"

namespace vramlab::dist {

namespace {

// What a rank called; the Collective values plus split, which only the simulated world sees.
enum class Op { all_reduce, reduce_scatter, all_gather, broadcast, send, recv, barrier, split };

std::string_view op_name(Op op) {
  if (op == Op::split) return "split";
  return collective_name(static_cast<Collective>(op));
}

struct Call {
  Op op = Op::barrier;
  int64_t elements = 0;  // what the byte counts use: all_gather's output, reduce_scatter's input
  DType dtype = DType::f32;
  int64_t root = 0;  // broadcast
  int64_t peer = 0;  // send/recv, a rank of the call's world
};

bool same_call(const Call& a, const Call& b) {
  if (a.op != b.op) return false;
  if (a.op == Op::barrier || a.op == Op::split) return true;
  return a.elements == b.elements && a.dtype == b.dtype &&
         (a.op != Op::broadcast || a.root == b.root);
}

std::string join_ranks(const std::vector<int64_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text;
}

// A thread's record: whether it runs, waits or has returned, and what it waits for.
struct Thread {
  enum class Status { running, waiting, finished };
  std::condition_variable wake;
  Status status = Status::running;
  const std::function<bool()>* ready = nullptr;  // while waiting
  const SimulatedWorld::State* world = nullptr;  // while waiting
  int64_t local_rank = 0;                        // while waiting: the rank in `world`
  Call call;                                     // while waiting
  bool threw_peer_failure = false;               // its last exception came from the world
};

// What a world and its split() groups share: the lock, the threads and the failure record.
struct Hub {
  explicit Hub(int64_t threads) : thread(static_cast<size_t>(threads)), running(threads) {}
  std::mutex mutex;
  std::vector<Thread> thread;  // by rank of the root world
  int64_t running;             // threads neither waiting nor finished
  bool failed = false;
  std::string failure;  // "rank 2 failed: ...", "mismatched collectives: ...", "deadlock: ..."
};

}  // namespace

struct SimulatedWorld::State {
  // One rank's published call and the memory its peers read.
  struct Slot {
    Call call;
    const std::byte* input = nullptr;
    std::byte* output = nullptr;
    std::vector<std::byte> scratch;         // all_reduce: read by the peers in phase 2
    int64_t color = 0, key = 0;             // split
    std::shared_ptr<SimulatedWorld> group;  // split: published by the group's first rank
  };
  // Rendezvous send: the sender posts and waits until the receiver has taken the data.
  struct Mailbox {
    bool posted = false;
    bool taken = false;
    Call call;
    const std::byte* data = nullptr;
  };

  State(int64_t size, bool move) : world_size(size), move_data(move) {
    members.resize(static_cast<size_t>(size));
    for (int64_t r = 0; r < size; ++r) members[static_cast<size_t>(r)] = r;
    slots.resize(static_cast<size_t>(size));
    mailboxes.resize(static_cast<size_t>(size * size));
    hub = std::make_shared<Hub>(size);
  }

  int64_t global(int64_t local) const { return members[static_cast<size_t>(local)]; }
  Slot& slot(int64_t local) { return slots[static_cast<size_t>(local)]; }
  Mailbox& mailbox(int64_t src, int64_t dst) {
    return mailboxes[static_cast<size_t>(src * world_size + dst)];
  }
  int64_t world_size;
  bool move_data;
  bool root = true;  // false for the groups split() makes
  std::shared_ptr<Hub> hub;
  std::vector<int64_t> members;  // rank in the root world of each rank of this one
  int64_t arrived = 0;
  uint64_t generation = 0;
  std::vector<Slot> slots;
  std::vector<Mailbox> mailboxes;  // [src · N + dst]
};

namespace {

using State = SimulatedWorld::State;
using Lock = std::unique_lock<std::mutex>;

// "all_gather of 4096 bf16", "send to 1", with ranks of the root world.
std::string describe(const State& world, const Call& call) {
  std::string text(op_name(call.op));
  switch (call.op) {
    case Op::all_reduce:
    case Op::reduce_scatter:
    case Op::all_gather:
      text += " of " + std::to_string(call.elements) + " " + std::string(dtype_name(call.dtype));
      break;
    case Op::broadcast:
      text += " of " + std::to_string(call.elements) + " " + std::string(dtype_name(call.dtype)) +
              " from rank " + std::to_string(world.global(call.root));
      break;
    case Op::send:
      text += " to " + std::to_string(world.global(call.peer));
      break;
    case Op::recv:
      text += " from " + std::to_string(world.global(call.peer));
      break;
    case Op::barrier:
    case Op::split:
      break;
  }
  if (!world.root && call.op != Op::send && call.op != Op::recv)
    text += " in the group of " + join_ranks(world.members);
  return text;
}

void fail_locked(Hub& hub, std::string failure) {
  if (hub.failed) return;
  hub.failed = true;
  hub.failure = std::move(failure);
  for (Thread& t : hub.thread) t.wake.notify_one();
}

[[noreturn]] void throw_failure_locked(Hub& hub, int64_t global_rank, const std::string& where) {
  hub.thread[static_cast<size_t>(global_rank)].threw_peer_failure = true;
  throw PeerFailure(hub.failure + " (" + where + ")");
}

void throw_if_failed_locked(const State& world, int64_t local_rank, const Call& call) {
  Hub& hub = *world.hub;
  if (!hub.failed) return;
  const int64_t me = world.global(local_rank);
  throw_failure_locked(hub, me,
                       "when rank " + std::to_string(me) + " called " + describe(world, call));
}

// What a waiting thread waits for, for the deadlock message.
std::string waits_for(const Hub& hub, const Thread& t) {
  const State& world = *t.world;
  std::string text =
      "rank " + std::to_string(world.global(t.local_rank)) + " waits in " + describe(world, t.call);
  const auto finished = [&](int64_t local) {
    return hub.thread[static_cast<size_t>(world.global(local))].status == Thread::Status::finished;
  };
  if (t.call.op == Op::send || t.call.op == Op::recv) {
    if (finished(t.call.peer)) text += ", which has finished";
    return text;
  }
  std::vector<int64_t> gone;
  for (int64_t r = 0; r < world.world_size; ++r)
    if (finished(r)) gone.push_back(world.global(r));
  if (!gone.empty())
    text += ", which " + join_ranks(gone) + (gone.size() == 1 ? " has" : " have") +
            " finished without calling";
  return text;
}

// See Note [Simulated failures and deadlocks]. Called with the lock held when `running` drops to 0.
void detect_deadlock_locked(Hub& hub) {
  if (hub.failed) return;
  bool anyone_waits = false;
  for (const Thread& t : hub.thread) {
    if (t.status == Thread::Status::finished) continue;
    if (t.status == Thread::Status::running || (*t.ready)()) return;
    anyone_waits = true;
  }
  if (!anyone_waits) return;
  std::string text = "deadlock: ";
  bool first = true;
  for (const Thread& t : hub.thread) {
    if (t.status != Thread::Status::waiting) continue;
    text += (first ? "" : ", ") + waits_for(hub, t);
    first = false;
  }
  fail_locked(hub, std::move(text));
}

// Blocks until `ready()` holds. Throws PeerFailure when the world fails first.
void wait_locked(Lock& lock, const State& world, int64_t local_rank, const Call& call,
                 const std::function<bool()>& ready) {
  Hub& hub = *world.hub;
  const int64_t me = world.global(local_rank);
  Thread& self = hub.thread[static_cast<size_t>(me)];
  self.status = Thread::Status::waiting;
  self.ready = &ready;
  self.world = &world;
  self.local_rank = local_rank;
  self.call = call;
  if (--hub.running == 0) detect_deadlock_locked(hub);
  while (!hub.failed && !ready()) self.wake.wait(lock);
  self.status = Thread::Status::running;
  self.ready = nullptr;
  ++hub.running;
  if (!ready())
    throw_failure_locked(
        hub, me, "while rank " + std::to_string(me) + " waited in " + describe(world, call));
}

// "mismatched collectives: ranks 0, 1 called all_reduce of 8 f32; rank 2 called barrier", or "".
std::string mismatch_locked(const State& world) {
  const Call& first = world.slots[0].call;
  bool all_same = true;
  for (const State::Slot& s : world.slots) all_same = all_same && same_call(s.call, first);
  if (all_same) return {};
  std::vector<std::pair<Call, std::vector<int64_t>>> groups;
  for (int64_t r = 0; r < world.world_size; ++r) {
    const Call& call = world.slots[static_cast<size_t>(r)].call;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return same_call(g.first, call); });
    if (it == groups.end()) it = groups.insert(groups.end(), {call, {}});
    it->second.push_back(world.global(r));
  }
  std::string text = "mismatched collectives: ";
  for (size_t i = 0; i < groups.size(); ++i)
    text += (i == 0 ? "" : "; ") + join_ranks(groups[i].second) + " called " +
            describe(world, groups[i].first);
  return text;
}

// Waits until every rank of the world has arrived. With `publish`, the rank first publishes its
// call and buffers and the last to arrive checks that every rank made the same call; without, it is
// the barrier between a call's phases (see Note [Simulated rendezvous]).
struct Publish {
  const Call* call = nullptr;
  const void* input = nullptr;
  void* output = nullptr;
  int64_t color = 0, key = 0;
};

void rendezvous(State& world, int64_t local_rank, const Call& call, const Publish& publish) {
  Hub& hub = *world.hub;
  Lock lock(hub.mutex);
  throw_if_failed_locked(world, local_rank, call);
  if (publish.call != nullptr) {
    State::Slot& slot = world.slot(local_rank);
    slot.call = *publish.call;
    slot.input = static_cast<const std::byte*>(publish.input);
    slot.output = static_cast<std::byte*>(publish.output);
    slot.color = publish.color;
    slot.key = publish.key;
  }
  if (++world.arrived == world.world_size) {
    world.arrived = 0;
    if (publish.call != nullptr) {
      std::string mismatch = mismatch_locked(world);
      if (!mismatch.empty()) {
        fail_locked(hub, std::move(mismatch));
        throw_if_failed_locked(world, local_rank, call);
      }
    }
    ++world.generation;
    for (int64_t r = 0; r < world.world_size; ++r)
      hub.thread[static_cast<size_t>(world.global(r))].wake.notify_one();
    return;
  }
  const uint64_t generation = world.generation;
  wait_locked(lock, world, local_rank, call,
              [&world, generation] { return world.generation != generation; });
}

void publish_and_wait(State& world, int64_t rank, const Call& call, const void* input,
                      void* output) {
  rendezvous(world, rank, call, Publish{&call, input, output});
}

void phase_barrier(State& world, int64_t rank, const Call& call) {
  rendezvous(world, rank, call, Publish{});
}

// out[i] = Σ over ranks 0..N−1 of slot[r].input[first + i], in rank order; 16-bit dtypes summed
// in fp32 and rounded once to nearest even.
void reduce_chunk(const State& world, DType dtype, int64_t first, int64_t count, std::byte* out) {
  if (count == 0) return;  // an empty buffer may have no address at all
  const auto n = static_cast<size_t>(count);
  const auto input = [&](int64_t r) { return world.slots[static_cast<size_t>(r)].input; };
  if (dtype == DType::f32) {
    auto* sum = reinterpret_cast<float*>(out);  // (count) f32
    std::memcpy(sum, input(0) + first * 4, n * 4);
    for (int64_t r = 1; r < world.world_size; ++r) {
      const auto* x = reinterpret_cast<const float*>(input(r)) + first;  // (count) f32
      for (size_t i = 0; i < n; ++i) sum[i] += x[i];
    }
    return;
  }
  const bool bf16 = dtype == DType::bf16;
  const auto widen = [bf16](uint16_t bits) {
    return bf16 ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits);
  };
  std::vector<float> sum(n);                                             // (count) f32
  const auto* x0 = reinterpret_cast<const uint16_t*>(input(0)) + first;  // (count) bf16 or f16
  for (size_t i = 0; i < n; ++i) sum[i] = widen(x0[i]);
  for (int64_t r = 1; r < world.world_size; ++r) {
    const auto* x = reinterpret_cast<const uint16_t*>(input(r)) + first;  // (count) bf16 or f16
    for (size_t i = 0; i < n; ++i) sum[i] += widen(x[i]);
  }
  auto* narrow = reinterpret_cast<uint16_t*>(out);  // (count) bf16 or f16
  for (size_t i = 0; i < n; ++i)
    narrow[i] = bf16 ? f32_to_bf16_bits(sum[i]) : f32_to_f16_bits(sum[i]);
}

int64_t element_bytes(DType dtype) {
  return static_cast<int64_t>(dtype_size_bytes(dtype));
}

void copy_bytes(void* to, const void* from, int64_t bytes) {
  if (bytes > 0 && to != from) std::memmove(to, from, static_cast<size_t>(bytes));
}

}  // namespace

SimulatedWorld::SimulatedWorld(int64_t world_size, bool move_data) {
  if (world_size < 1)
    throw UsageError("a simulated world needs >= 1 rank, got " + std::to_string(world_size));
  state_ = std::make_unique<State>(world_size, move_data);
}

SimulatedWorld::~SimulatedWorld() = default;

int64_t SimulatedWorld::world_size() const {
  return state_->world_size;
}

bool SimulatedWorld::moves_data() const {
  return state_->move_data;
}

void SimulatedWorld::fail(int64_t rank, const std::string& reason) {
  if (rank < 0 || rank >= state_->world_size)
    throw UsageError("fail: rank " + std::to_string(rank) + " outside [0, " +
                     std::to_string(state_->world_size) + ")");
  Hub& hub = *state_->hub;
  const Lock lock(hub.mutex);
  fail_locked(hub, "rank " + std::to_string(state_->global(rank)) + " failed: " + reason);
}

SimulatedCommunicator::SimulatedCommunicator(SimulatedWorld& world, int64_t rank)
    : Communicator(rank, world.world_size()), world_(world) {}

namespace {
SimulatedWorld& require_world(const std::shared_ptr<SimulatedWorld>& world) {
  if (!world) throw UsageError("SimulatedCommunicator: null world");
  return *world;
}
}  // namespace

SimulatedCommunicator::SimulatedCommunicator(std::shared_ptr<SimulatedWorld> world, int64_t rank)
    : Communicator(rank, require_world(world).world_size()),
      owned_world_(std::move(world)),
      world_(*owned_world_) {}

void SimulatedCommunicator::do_all_reduce(const TensorView& buffer) {
  State& world = world_.state();
  const Call call{Op::all_reduce, buffer.numel(), buffer.dtype()};
  publish_and_wait(world, rank(), call, buffer.data(), buffer.data());
  if (!world.move_data || world.world_size == 1) return;
  // Phase 1: this rank sums its ring chunk of every rank's buffer into its scratch; phase 2:
  // every rank copies every chunk from its owner's scratch.
  const int64_t bytes = element_bytes(buffer.dtype());
  State::Slot& mine = world.slot(rank());
  const Chunk own = ring_chunk(buffer.numel(), world_size(), rank());
  mine.scratch.resize(static_cast<size_t>(own.count * bytes));  // (own.count) buffer dtype
  reduce_chunk(world, buffer.dtype(), own.first, own.count, mine.scratch.data());
  phase_barrier(world, rank(), call);
  auto* out = static_cast<std::byte*>(buffer.data());
  for (int64_t r = 0; r < world_size(); ++r) {
    const Chunk chunk = ring_chunk(buffer.numel(), world_size(), r);
    copy_bytes(out + chunk.first * bytes, world.slot(r).scratch.data(), chunk.count * bytes);
  }
  // The owners' scratch must outlive the copies: the next call's rendezvous orders its reuse.
}

void SimulatedCommunicator::do_reduce_scatter(const TensorView& input, const TensorView& output) {
  State& world = world_.state();
  const Call call{Op::reduce_scatter, input.numel(), input.dtype()};
  publish_and_wait(world, rank(), call, input.data(), output.data());
  if (!world.move_data) return;
  const int64_t bytes = element_bytes(input.dtype());
  const int64_t m = output.numel();
  if (world.world_size == 1) {
    copy_bytes(output.data(), input.data(), m * bytes);
    return;
  }
  // Into scratch first: in place, this rank's output is its input's chunk r, which the peers read
  // until the phase barrier.
  State::Slot& mine = world.slot(rank());
  mine.scratch.resize(static_cast<size_t>(m * bytes));  // (m) input dtype
  reduce_chunk(world, input.dtype(), rank() * m, m, mine.scratch.data());
  phase_barrier(world, rank(), call);
  copy_bytes(output.data(), mine.scratch.data(), m * bytes);
}

void SimulatedCommunicator::do_all_gather(const TensorView& input, const TensorView& output) {
  State& world = world_.state();
  const Call call{Op::all_gather, output.numel(), output.dtype()};
  publish_and_wait(world, rank(), call, input.data(), output.data());
  if (!world.move_data) return;
  // Straight into the output: in place, a peer's input is its own chunk of its own output, which
  // nobody writes (copy_bytes skips a copy onto itself).
  const int64_t chunk_bytes = input.numel() * element_bytes(input.dtype());
  auto* out = static_cast<std::byte*>(output.data());
  for (int64_t r = 0; r < world_size(); ++r)
    copy_bytes(out + r * chunk_bytes, world.slot(r).input, chunk_bytes);
  if (world.world_size > 1) phase_barrier(world, rank(), call);
}

void SimulatedCommunicator::do_broadcast(const TensorView& buffer, int64_t root) {
  State& world = world_.state();
  const Call call{Op::broadcast, buffer.numel(), buffer.dtype(), root};
  publish_and_wait(world, rank(), call, buffer.data(), buffer.data());
  if (!world.move_data || world.world_size == 1) return;
  if (rank() != root) copy_bytes(buffer.data(), world.slot(root).input, buffer.bytes());
  phase_barrier(world, rank(), call);  // the root keeps its buffer until every peer has copied it
}

void SimulatedCommunicator::do_send(const TensorView& buffer, int64_t peer) {
  State& world = world_.state();
  const Call call{Op::send, buffer.numel(), buffer.dtype(), 0, peer};
  Hub& hub = *world.hub;
  Lock lock(hub.mutex);
  throw_if_failed_locked(world, rank(), call);
  // Free: the previous send on this pair returned only once its data was taken.
  State::Mailbox& box = world.mailbox(rank(), peer);
  box.posted = true;
  box.taken = false;
  box.call = call;
  box.data = static_cast<const std::byte*>(buffer.data());
  hub.thread[static_cast<size_t>(world.global(peer))].wake.notify_one();
  wait_locked(lock, world, rank(), call, [&box] { return box.taken; });
  box.posted = false;
  box.taken = false;
}

void SimulatedCommunicator::do_recv(const TensorView& buffer, int64_t peer) {
  State& world = world_.state();
  const Call call{Op::recv, buffer.numel(), buffer.dtype(), 0, peer};
  Hub& hub = *world.hub;
  Lock lock(hub.mutex);
  throw_if_failed_locked(world, rank(), call);
  State::Mailbox& box = world.mailbox(peer, rank());
  wait_locked(lock, world, rank(), call, [&box] { return box.posted && !box.taken; });
  if (box.call.elements != call.elements || box.call.dtype != call.dtype) {
    fail_locked(hub, "mismatched send/recv: rank " + std::to_string(world.global(peer)) +
                         " sends " + std::to_string(box.call.elements) + " " +
                         std::string(dtype_name(box.call.dtype)) + " to rank " +
                         std::to_string(world.global(rank())) + ", which receives " +
                         std::to_string(call.elements) + " " + std::string(dtype_name(call.dtype)));
    throw_if_failed_locked(world, rank(), call);
  }
  if (world.move_data) {
    // The sender waits until `taken`, so its buffer stays put while this copies without the lock.
    lock.unlock();
    copy_bytes(buffer.data(), box.data, buffer.bytes());
    lock.lock();
  }
  box.taken = true;
  hub.thread[static_cast<size_t>(world.global(peer))].wake.notify_one();
}

void SimulatedCommunicator::do_barrier() {
  const Call call{Op::barrier};
  publish_and_wait(world_.state(), rank(), call, nullptr, nullptr);
}

std::unique_ptr<Communicator> SimulatedCommunicator::split(int64_t color, int64_t key) {
  if (color < 0) throw UsageError("split: color " + std::to_string(color) + " is negative");
  State& world = world_.state();
  const Call call{Op::split};
  rendezvous(world, rank(), call, Publish{&call, nullptr, nullptr, color, key});
  // Every rank computes the same groups from the published colors and keys.
  std::vector<int64_t> group;  // ranks of this world, ordered by (key, rank)
  for (int64_t r = 0; r < world_size(); ++r)
    if (world.slot(r).color == color) group.push_back(r);
  std::stable_sort(group.begin(), group.end(),
                   [&](int64_t a, int64_t b) { return world.slot(a).key < world.slot(b).key; });
  const auto position = std::find(group.begin(), group.end(), rank()) - group.begin();
  if (position == 0) {
    auto made =
        std::make_shared<SimulatedWorld>(static_cast<int64_t>(group.size()), world.move_data);
    State& sub = made->state();
    sub.hub = world.hub;
    sub.root = false;
    for (size_t i = 0; i < group.size(); ++i) sub.members[i] = world.global(group[i]);
    world.slot(rank()).group = std::move(made);
  }
  phase_barrier(world, rank(), call);
  auto communicator =
      std::make_unique<SimulatedCommunicator>(world.slot(group.front()).group, position);
  communicator->set_move_data(moves_data());
  return communicator;
}

void run_simulated_ranks(int64_t world_size, bool move_data,
                         const std::function<void(Communicator&)>& body) {
  SimulatedWorld world(world_size, move_data);
  Hub& hub = *world.state().hub;
  const auto n = static_cast<size_t>(world_size);
  std::vector<std::exception_ptr> error(n);
  std::vector<char> original(n, 0);  // threw something of its own, not a peer's failure
  const auto run = [&](int64_t rank) {
    const auto r = static_cast<size_t>(rank);
    try {
      SimulatedCommunicator communicator(world, rank);
      body(communicator);
    } catch (const std::exception& e) {
      error[r] = std::current_exception();
      bool from_world = false;
      {
        const Lock lock(hub.mutex);
        from_world = hub.thread[r].threw_peer_failure && dynamic_cast<const PeerFailure*>(&e);
      }
      original[r] = from_world ? 0 : 1;
      if (!from_world) world.fail(rank, e.what());
    } catch (...) {
      error[r] = std::current_exception();
      original[r] = 1;
      world.fail(rank, "an exception that is not a std::exception");
    }
    const Lock lock(hub.mutex);
    hub.thread[r].status = Thread::Status::finished;
    if (--hub.running == 0) detect_deadlock_locked(hub);
  };
  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (int64_t rank = 0; rank < world_size; ++rank) threads.emplace_back(run, rank);
  } catch (const std::system_error& e) {
    world.fail(static_cast<int64_t>(threads.size()),
               std::string("could not start its thread: ") + e.what());
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
  for (size_t r = 0; r < n; ++r)
    if (original[r]) std::rethrow_exception(error[r]);
  for (size_t r = 0; r < n; ++r)
    if (error[r]) std::rethrow_exception(error[r]);
}

}  // namespace vramlab::dist
