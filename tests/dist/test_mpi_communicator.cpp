// MpiCommunicator under `mpirun -np 2|3|4` (tests/dist/CMakeLists.txt runs it; mpi_test_main.cpp
// is its main), checked as collective_checks.h describes: f32 sums against the summation-order
// bound, bf16 and f16 sums (our user-defined MPI operation) against one rounding per pairwise
// addition, copies bit for bit, and every call's byte counters against ring_bytes_*.
//
// Every rank makes the same calls whatever its checks find (EXPECT, never ASSERT, between
// collectives), so one rank's failure cannot leave the others waiting in a collective.
// A PeerFailure ends the job (the communicator aborts MPI at exit), so the faults (a stopped rank,
// a mismatched call or size) are run one per job by mpi_faults.cpp instead.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/dist/mpi_communicator.h"
#include "common/platform/errors.h"
#include "tests/dist/collective_checks.h"

namespace vramlab::dist {
namespace {

using namespace vramlab::dist::checks;  // NOLINT: the shared checks

MpiCommunicator& world() {
  static const std::unique_ptr<MpiCommunicator> comm = MpiCommunicator::world();
  return *comm;
}

// True on every rank when `local` is the same on every rank.
bool same_on_every_rank(uint64_t local) {
  uint64_t low = 0, high = 0;
  MPI_Allreduce(&local, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return low == high;
}

constexpr DType kSummable[] = {DType::f32, DType::bf16, DType::f16};
constexpr int64_t kSizes[] = {0, 1, 7, 1000003};
// Reduce-scatter's and all-gather's per-rank counts (their buffers are N times bigger).
constexpr int64_t kChunkSizes[] = {0, 1, 7, 333331};

TEST(MpiCommunicator, IsOneRankOfTheWorldMpirunStarted) {
  MpiCommunicator& comm = world();
  EXPECT_TRUE(launched_by_mpirun());
  EXPECT_EQ(comm.backend(), "mpi");
  ASSERT_NE(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr);
  EXPECT_EQ(comm.world_size(), std::atoll(std::getenv("OMPI_COMM_WORLD_SIZE")));
  EXPECT_EQ(comm.rank(), std::atoll(std::getenv("OMPI_COMM_WORLD_RANK")));
  EXPECT_TRUE(comm.moves_data());
}

TEST(MpiCommunicator, AllReduceSumsEveryRanksData) {
  MpiCommunicator& comm = world();
  uint64_t seed = 100;
  for (DType dtype : kSummable) {
    for (int64_t n : kSizes) {
      ++seed;
      HostBuffer buffer(dtype, n);  // (n) dtype
      buffer.fill(seed, comm.rank());
      const CommunicationStats before = comm.stats();
      comm.all_reduce(buffer.view(), Traffic::gradients);
      EXPECT_TRUE(counted(comm, before, Collective::all_reduce, Traffic::gradients, n,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      EXPECT_TRUE(sums_match(buffer, dtype, 0, n, 0, seed, all_ranks(comm.world_size())));
      EXPECT_TRUE(same_on_every_rank(buffer.checksum()))
          << dtype_name(dtype) << " n " << n << ": the ranks ended with different sums";
    }
  }
}

TEST(MpiCommunicator, ReduceScatterLeavesChunkROfTheSumInRankR) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 200;
  for (DType dtype : kSummable) {
    for (int64_t m : kChunkSizes) {
      ++seed;
      HostBuffer input(dtype, N * m);  // (N·m) dtype
      HostBuffer output(dtype, m);     // (m) dtype
      input.fill(seed, r);
      const CommunicationStats before = comm.stats();
      comm.reduce_scatter(input.view(), output.view(), Traffic::gradients);
      EXPECT_TRUE(counted(comm, before, Collective::reduce_scatter, Traffic::gradients, N * m,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      EXPECT_TRUE(sums_match(output, dtype, 0, m, r * m, seed, all_ranks(N)))
          << "rank " << r << ", m " << m;
    }
  }
}

TEST(MpiCommunicator, ReduceScatterInPlaceLeavesTheSumInChunkR) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 300;
  for (DType dtype : kSummable) {
    for (int64_t m : kChunkSizes) {
      ++seed;
      HostBuffer buffer(dtype, N * m);  // (N·m) dtype; chunk r ends as the output
      buffer.fill(seed, r);
      const CommunicationStats before = comm.stats();
      comm.reduce_scatter(buffer.view(), buffer.slice(r * m, m), Traffic::gradients);
      EXPECT_TRUE(counted(comm, before, Collective::reduce_scatter, Traffic::gradients, N * m,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      EXPECT_TRUE(sums_match(buffer, dtype, r * m, m, r * m, seed, all_ranks(N)))
          << "rank " << r << ", m " << m;
    }
  }
}

constexpr DType kGathered[] = {DType::f32, DType::bf16, DType::u8, DType::i32, DType::i64};

TEST(MpiCommunicator, AllGatherConcatenatesInRankOrder) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 400;
  for (DType dtype : kGathered) {
    for (int64_t m : kChunkSizes) {
      ++seed;
      HostBuffer input(dtype, m);       // (m) dtype
      HostBuffer output(dtype, N * m);  // (N·m) dtype
      input.fill(seed, r);
      const CommunicationStats before = comm.stats();
      comm.all_gather(input.view(), output.view(), Traffic::parameters);
      EXPECT_TRUE(counted(comm, before, Collective::all_gather, Traffic::parameters, N * m,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      for (int64_t q = 0; q < N; ++q)
        EXPECT_TRUE(copies_match(output, dtype, q * m, m, 0, seed, q)) << "chunk " << q;
    }
  }
}

TEST(MpiCommunicator, AllGatherInPlaceFillsTheOtherChunks) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 500;
  for (DType dtype : kGathered) {
    for (int64_t m : kChunkSizes) {
      ++seed;
      HostBuffer buffer(dtype, N * m);  // (N·m) dtype; chunk r is the input
      buffer.fill(seed, r, r * m, m, 0);
      const CommunicationStats before = comm.stats();
      comm.all_gather(buffer.slice(r * m, m), buffer.view(), Traffic::parameters);
      EXPECT_TRUE(counted(comm, before, Collective::all_gather, Traffic::parameters, N * m,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      for (int64_t q = 0; q < N; ++q)
        EXPECT_TRUE(copies_match(buffer, dtype, q * m, m, 0, seed, q)) << "chunk " << q;
    }
  }
}

TEST(MpiCommunicator, BroadcastCopiesTheRootsBufferFromEveryRoot) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 600;
  for (DType dtype : {DType::f32, DType::f16, DType::i64}) {
    for (int64_t n : kSizes) {
      for (int64_t root = 0; root < N; ++root) {
        ++seed;
        HostBuffer buffer(dtype, n);  // (n) dtype; every rank starts with its own data
        buffer.fill(seed, r);
        const CommunicationStats before = comm.stats();
        comm.broadcast(buffer.view(), root, Traffic::other);
        EXPECT_TRUE(counted(comm, before, Collective::broadcast, Traffic::other, n,
                            static_cast<int64_t>(dtype_size_bytes(dtype)), root));
        EXPECT_TRUE(copies_match(buffer, dtype, 0, n, 0, seed, root)) << "root " << root;
      }
    }
  }
}

TEST(MpiCommunicator, SendRecvPassesBuffersAroundTheRing) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  if (N < 2) GTEST_SKIP() << "send/recv needs two ranks";
  const int64_t next = (r + 1) % N, previous = (r + N - 1) % N;
  uint64_t seed = 700;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t n : kSizes) {
      ++seed;
      HostBuffer outgoing(dtype, n);  // (n) dtype
      HostBuffer incoming(dtype, n);  // (n) dtype
      outgoing.fill(seed, r);
      const CommunicationStats before = comm.stats();
      // Even ranks send first, odd ranks receive first: blocking sends of large messages wait
      // for their receiver, so a ring where everyone sends first could deadlock.
      if (r % 2 == 0) {
        comm.send(outgoing.view(), next, Traffic::activations);
        comm.recv(incoming.view(), previous, Traffic::activations);
      } else {
        comm.recv(incoming.view(), previous, Traffic::activations);
        comm.send(outgoing.view(), next, Traffic::activations);
      }
      const int64_t element_bytes = static_cast<int64_t>(dtype_size_bytes(dtype));
      EXPECT_TRUE(counted(comm, before, Collective::send, Traffic::activations, n, element_bytes));
      EXPECT_TRUE(counted(comm, before, Collective::recv, Traffic::activations, n, element_bytes));
      EXPECT_TRUE(copies_match(incoming, dtype, 0, n, 0, seed, previous));
    }
  }
}

TEST(MpiCommunicator, NoRankLeavesTheBarrierBeforeTheLastEntersIt) {
  MpiCommunicator& comm = world();
  if (comm.world_size() < 2) GTEST_SKIP() << "a barrier of one rank waits for nobody";
  // The ranks share one machine, hence one steady clock (CLOCK_MONOTONIC): rank 0 enters late
  // and says when; every rank must have left after that, whatever the scheduler did.
  const auto now_ns = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count());
  };
  comm.barrier();
  if (comm.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const CommunicationStats before = comm.stats();
  int64_t entered_ns = now_ns();
  comm.barrier();
  const int64_t left_ns = now_ns();
  EXPECT_TRUE(counted(comm, before, Collective::barrier, Traffic::other, 0, 0));
  MPI_Bcast(&entered_ns, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  EXPECT_GE(left_ns, entered_ns) << "rank " << comm.rank() << " left the barrier "
                                 << (entered_ns - left_ns) / 1e6 << " ms before rank 0 entered it";
}

TEST(MpiCommunicator, SplitMakesGroupsOrderedByKeyWithTheirOwnStats) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  // Two colours, even and odd ranks, each ordered by descending world rank (key −r).
  std::vector<int64_t> members;
  for (int64_t q = N - 1; q >= 0; --q)
    if (q % 2 == r % 2) members.push_back(q);
  const std::unique_ptr<Communicator> group = comm.split(r % 2, -r);
  ASSERT_EQ(group->world_size(), static_cast<int64_t>(members.size()));
  int64_t expected_rank = 0;
  while (members[static_cast<size_t>(expected_rank)] != r) ++expected_rank;
  EXPECT_EQ(group->rank(), expected_rank);
  EXPECT_EQ(group->backend(), "mpi");

  uint64_t seed = 800;
  for (DType dtype : kSummable) {
    for (int64_t n : {int64_t{7}, int64_t{1000003}}) {
      ++seed;
      HostBuffer buffer(dtype, n);  // (n) dtype
      buffer.fill(seed, r);
      const CommunicationStats world_before = comm.stats();
      const CommunicationStats before = group->stats();
      group->all_reduce(buffer.view(), Traffic::activations);
      EXPECT_TRUE(counted(*group, before, Collective::all_reduce, Traffic::activations, n,
                          static_cast<int64_t>(dtype_size_bytes(dtype))));
      EXPECT_EQ(comm.stats().total().calls, world_before.total().calls)
          << "the group's call was counted by the world";
      EXPECT_TRUE(sums_match(buffer, dtype, 0, n, 0, seed, members)) << "colour " << r % 2;
    }
  }
  // A group's collectives run on its members only: a reduce-scatter over the group with a
  // broadcast from its last rank.
  const int64_t G = group->world_size(), g = group->rank();
  HostBuffer input(DType::f32, G * 5);  // (G·5) f32
  HostBuffer output(DType::f32, 5);     // (5) f32
  input.fill(++seed, r);
  group->reduce_scatter(input.view(), output.view(), Traffic::gradients);
  EXPECT_TRUE(sums_match(output, DType::f32, 0, 5, g * 5, seed, members));
  HostBuffer broadcast(DType::i32, 11);  // (11) i32
  broadcast.fill(++seed, r);
  group->broadcast(broadcast.view(), G - 1, Traffic::other);
  EXPECT_TRUE(copies_match(broadcast, DType::i32, 0, 11, 0, seed, members.back()));

  // One colour and equal keys: ties keep the world's order.
  const std::unique_ptr<Communicator> same = comm.split(0, 0);
  EXPECT_EQ(same->world_size(), N);
  EXPECT_EQ(same->rank(), r);
}

TEST(MpiCommunicator, SplitRejectsANegativeColourAndAKeyBeyondInt) {
  MpiCommunicator& comm = world();
  EXPECT_THROW((void)comm.split(-1, 0), UsageError);
  EXPECT_THROW((void)comm.split(0, int64_t{1} << 40), UsageError);
  EXPECT_THROW((void)comm.split(int64_t{1} << 40, 0), UsageError);
}

// Views on `meta` have an address but no storage: touching it would crash.
TensorView meta_view(DType dtype, int64_t numel) {
  return TensorView(reinterpret_cast<void*>(uintptr_t{1} << 44), dtype, {numel});
}

TEST(MpiCommunicator, CountOnlyCountsEveryCallAndTouchesNoData) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  comm.set_move_data(false);
  EXPECT_FALSE(comm.moves_data());
  const int64_t big = int64_t{3} << 33;  // beyond MPI's int count: no MPI call may see it
  CommunicationStats before = comm.stats();
  comm.all_reduce(meta_view(DType::bf16, big), Traffic::gradients);
  EXPECT_TRUE(counted(comm, before, Collective::all_reduce, Traffic::gradients, big, 2));
  before = comm.stats();
  comm.reduce_scatter(meta_view(DType::f32, N * big), meta_view(DType::f32, big),
                      Traffic::gradients);
  EXPECT_TRUE(counted(comm, before, Collective::reduce_scatter, Traffic::gradients, N * big, 4));
  before = comm.stats();
  comm.all_gather(meta_view(DType::f16, 1000003), meta_view(DType::f16, N * 1000003),
                  Traffic::parameters);
  EXPECT_TRUE(counted(comm, before, Collective::all_gather, Traffic::parameters, N * 1000003, 2));
  before = comm.stats();
  comm.broadcast(meta_view(DType::i64, 7), N - 1, Traffic::other);
  EXPECT_TRUE(counted(comm, before, Collective::broadcast, Traffic::other, 7, 8, N - 1));
  if (N >= 2) {
    before = comm.stats();
    comm.send(meta_view(DType::f32, big), (r + 1) % N, Traffic::activations);
    comm.recv(meta_view(DType::f32, big), (r + N - 1) % N, Traffic::activations);
    EXPECT_TRUE(counted(comm, before, Collective::send, Traffic::activations, big, 4));
    EXPECT_TRUE(counted(comm, before, Collective::recv, Traffic::activations, big, 4));
  }
  // A group split off a counting communicator counts only too.
  const std::unique_ptr<Communicator> group = comm.split(r % 2, r);
  EXPECT_FALSE(group->moves_data());
  before = group->stats();
  group->all_reduce(meta_view(DType::f32, big), Traffic::gradients);
  EXPECT_TRUE(counted(*group, before, Collective::all_reduce, Traffic::gradients, big, 4));
  comm.set_move_data(true);
  // Data moves again, and the ranks still agree on what comes next.
  HostBuffer buffer(DType::f32, 7);  // (7) f32
  buffer.fill(900, r);
  comm.all_reduce(buffer.view(), Traffic::other);
  EXPECT_TRUE(sums_match(buffer, DType::f32, 0, 7, 0, 900, all_ranks(N)));
}

TEST(MpiCommunicator, BadArgumentsAreUsageErrorsOnEveryRank) {
  MpiCommunicator& comm = world();
  const int64_t N = comm.world_size(), r = comm.rank();
  HostBuffer f32(DType::f32, N * 8);  // (N·8) f32
  HostBuffer i32(DType::i32, 8);      // (8) i32
  EXPECT_THROW(comm.all_reduce(i32.view(), Traffic::other), UsageError);
  EXPECT_THROW(comm.reduce_scatter(f32.view(), f32.slice(0, 7), Traffic::other), UsageError);
  EXPECT_THROW(comm.broadcast(f32.view(), N, Traffic::other), UsageError);
  EXPECT_THROW(comm.send(f32.view(), r, Traffic::other), UsageError);
  if (N >= 2) {
    // Overlapping, but another rank's chunk rather than this rank's: not the in-place form.
    const int64_t other = (r + 1) % N;
    try {
      comm.reduce_scatter(f32.view(), f32.slice(other * 8, 8), Traffic::other);
      ADD_FAILURE() << "reduce_scatter into chunk " << other << " on rank " << r << " succeeded";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
    }
    EXPECT_THROW(comm.all_gather(f32.slice(other * 8, 8), f32.view(), Traffic::other), UsageError);
  }
  // More than 2³¹ − 1 elements per rank cannot be one MPI_Reduce_scatter_block: refused, naming
  // the count, before any memory is touched.
  const int64_t m = int64_t{1} << 31;
  try {
    comm.reduce_scatter(meta_view(DType::f32, N * m), meta_view(DType::f32, m), Traffic::other);
    ADD_FAILURE() << "a reduce-scatter of 2^31 elements per rank was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(m)), std::string::npos) << e.what();
  }
  // The ranks are still in step.
  comm.barrier();
}

}  // namespace
}  // namespace vramlab::dist
