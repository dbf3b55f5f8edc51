// SimulatedCommunicator: every collective against a rank-order sum computed here, for world sizes
// 1, 2, 3, 4, 7 and odd element counts; in-place forms; byte counts; send/recv; split; and the
// failures: mismatched calls, a rank that throws, deadlocks. 64 ranks on a meta world check that
// the lesson's scale runs in seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/dist/simulated_communicator.h"
#include "common/dtype/convert.h"
#include "common/platform/errors.h"

namespace vramlab::dist {
namespace {

const int64_t kWorldSizes[] = {1, 2, 3, 4, 7};
const DType kSummable[] = {DType::f32, DType::bf16, DType::f16};

// A host buffer of n elements of any dtype.
struct Buffer {
  Buffer(DType type, int64_t elements)
      : dtype(type), n(elements), bytes(static_cast<size_t>(elements) * dtype_size_bytes(type)) {}
  TensorView view() { return TensorView(bytes.data(), dtype, {n}); }
  TensorView slice(int64_t first, int64_t count) {
    return TensorView(bytes.data() + first * static_cast<int64_t>(dtype_size_bytes(dtype)), dtype,
                      {count});
  }
  DType dtype;
  int64_t n;
  std::vector<std::byte> bytes;  // (n) dtype
};

// Rank r's input of test `seed`: normal values of varied magnitudes, with a few edge values (±0,
// subnormals of the dtype, values near its largest finite), the same on every thread that asks.
Buffer random_input(DType dtype, int64_t n, uint64_t seed, int64_t rank) {
  Buffer b(dtype, n);
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-6, 6), pick(0, 99), edge(0, 3);
  const float largest = dtype == DType::f16 ? 30000.0f : (dtype == DType::bf16 ? 1e38f : 3e38f);
  const float tiny = dtype == DType::f16 ? 3e-7f : 1e-40f;
  for (int64_t i = 0; i < n; ++i) {
    float x = std::ldexp(normal(rng), scale(rng));
    if (pick(rng) == 0) {
      const float edges[] = {0.0f, -0.0f, tiny, largest};
      x = edges[edge(rng)] * (pick(rng) < 50 ? 1.0f : -1.0f);
    }
    std::byte* at = b.bytes.data() + static_cast<size_t>(i) * dtype_size_bytes(dtype);
    if (dtype == DType::f32) {
      std::memcpy(at, &x, 4);
    } else if (dtype == DType::bf16 || dtype == DType::f16) {
      const uint16_t bits = dtype == DType::bf16 ? f32_to_bf16_bits(x) : f32_to_f16_bits(x);
      std::memcpy(at, &bits, 2);
    } else {
      at[0] = static_cast<std::byte>(rng());  // integer and fp8 dtypes: any bits are data
      for (size_t k = 1; k < dtype_size_bytes(dtype); ++k) at[k] = static_cast<std::byte>(rng());
    }
  }
  return b;
}

float widen(DType dtype, const std::byte* at) {
  if (dtype == DType::f32) {
    float x;
    std::memcpy(&x, at, 4);
    return x;
  }
  uint16_t bits;
  std::memcpy(&bits, at, 2);
  return dtype == DType::bf16 ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits);
}

// The specification: element by element, the fp32 sum over `order` (rank order unless a split
// reorders), rounded once to the dtype.
Buffer rank_order_sum(DType dtype, int64_t n, uint64_t seed, const std::vector<int64_t>& order) {
  std::vector<Buffer> inputs;
  for (int64_t r : order) inputs.push_back(random_input(dtype, n, seed, r));
  Buffer sum(dtype, n);
  const size_t size = dtype_size_bytes(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(i) * size;
    float acc = widen(dtype, inputs[0].bytes.data() + at);
    for (size_t k = 1; k < inputs.size(); ++k) acc += widen(dtype, inputs[k].bytes.data() + at);
    if (dtype == DType::f32) {
      std::memcpy(sum.bytes.data() + at, &acc, 4);
    } else {
      const uint16_t bits = dtype == DType::bf16 ? f32_to_bf16_bits(acc) : f32_to_f16_bits(acc);
      std::memcpy(sum.bytes.data() + at, &bits, 2);
    }
  }
  return sum;
}

std::vector<int64_t> ranks_upto(int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

// "" when `got` holds exactly the bytes of expected[first, first + count); otherwise how many
// elements differ, the first one, both values and the largest |difference|.
std::string exact(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

std::string bitwise_diff(const std::byte* got, const Buffer& expected, int64_t first,
                         int64_t count) {
  const size_t size = dtype_size_bytes(expected.dtype);
  int64_t differing = 0, first_bad = -1;
  double max_abs = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const std::byte* e = expected.bytes.data() + static_cast<size_t>(first + i) * size;
    const std::byte* g = got + static_cast<size_t>(i) * size;
    if (std::memcmp(e, g, size) == 0) continue;
    if (differing++ == 0) first_bad = i;
    if (expected.dtype == DType::f32 || expected.dtype == DType::bf16 ||
        expected.dtype == DType::f16)
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(widen(expected.dtype, e)) -
                                            static_cast<double>(widen(expected.dtype, g))));
  }
  if (differing == 0) return {};
  std::string text = std::to_string(differing) + " of " + std::to_string(count) +
                     " elements differ (tolerance: 0, bitwise), first at " +
                     std::to_string(first_bad) + ", max |diff| " + exact(max_abs);
  if (expected.dtype == DType::f32 || expected.dtype == DType::bf16 ||
      expected.dtype == DType::f16) {
    const size_t at = static_cast<size_t>(first_bad) * size;
    text += ": got " + exact(widen(expected.dtype, got + at)) + ", expected " +
            exact(widen(expected.dtype,
                        expected.bytes.data() + static_cast<size_t>(first) * size + at));
  }
  return text;
}

// Failures seen inside rank threads, reported on the test's thread (gtest assertions are
// thread-safe, but a message naming the rank reads better).
struct Failures {
  void add(int64_t rank, const std::string& what) {
    const std::lock_guard lock(mutex);
    text += "rank " + std::to_string(rank) + ": " + what + "\n";
  }
  std::mutex mutex;
  std::string text;
};

std::vector<int64_t> sizes_for(int64_t world) {
  // Empty, single, fewer than N, not divisible by N, and a few thousand.
  return {0, 1, world - 1 > 0 ? world - 1 : 2, 5 * world + 3, 4099};
}

TEST(SimulatedCommunicator, AllReduceIsTheRankOrderSumBitForBit) {
  uint64_t seed = 1;
  for (int64_t world : kWorldSizes)
    for (DType dtype : kSummable)
      for (int64_t n : sizes_for(world)) {
        ++seed;
        const Buffer expected = rank_order_sum(dtype, n, seed, ranks_upto(world));
        Failures failures;
        run_simulated_ranks(world, true, [&](Communicator& comm) {
          Buffer buffer = random_input(dtype, n, seed, comm.rank());  // (n) dtype
          comm.all_reduce(buffer.view(), Traffic::gradients);
          const std::string diff = bitwise_diff(buffer.bytes.data(), expected, 0, n);
          if (!diff.empty()) failures.add(comm.rank(), diff);
        });
        EXPECT_TRUE(failures.text.empty())
            << "N=" << world << " " << dtype_name(dtype) << " n=" << n << "\n"
            << failures.text;
      }
}

TEST(SimulatedCommunicator, ReduceScatterLeavesChunkROfTheSumOnRankR) {
  uint64_t seed = 100;
  for (int64_t world : kWorldSizes)
    for (DType dtype : kSummable)
      for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{517}})
        for (bool in_place : {false, true}) {
          ++seed;
          const int64_t n = m * world;
          const Buffer expected = rank_order_sum(dtype, n, seed, ranks_upto(world));
          Failures failures;
          run_simulated_ranks(world, true, [&](Communicator& comm) {
            Buffer input = random_input(dtype, n, seed, comm.rank());  // (N·m) dtype
            Buffer separate(dtype, m);                                 // (m) dtype
            const TensorView output = in_place ? input.slice(comm.rank() * m, m) : separate.view();
            comm.reduce_scatter(input.view(), output, Traffic::gradients);
            const std::string diff = bitwise_diff(static_cast<const std::byte*>(output.data()),
                                                  expected, comm.rank() * m, m);
            if (!diff.empty()) failures.add(comm.rank(), diff);
          });
          EXPECT_TRUE(failures.text.empty()) << "N=" << world << " " << dtype_name(dtype)
                                             << " m=" << m << (in_place ? " in place" : "") << "\n"
                                             << failures.text;
        }
}

TEST(SimulatedCommunicator, AllGatherConcatenatesInRankOrder) {
  uint64_t seed = 200;
  for (int64_t world : kWorldSizes)
    for (DType dtype : {DType::f32, DType::bf16, DType::u8, DType::i64})
      for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1031}})
        for (bool in_place : {false, true}) {
          ++seed;
          Buffer expected(dtype, m * world);  // (N·m) dtype
          const size_t chunk_bytes = static_cast<size_t>(m) * dtype_size_bytes(dtype);
          for (int64_t r = 0; r < world; ++r)
            if (chunk_bytes > 0)
              std::memcpy(expected.bytes.data() + static_cast<size_t>(r) * chunk_bytes,
                          random_input(dtype, m, seed, r).bytes.data(), chunk_bytes);
          Failures failures;
          run_simulated_ranks(world, true, [&](Communicator& comm) {
            Buffer mine = random_input(dtype, m, seed, comm.rank());  // (m) dtype
            Buffer output(dtype, m * world);                          // (N·m) dtype
            TensorView input = mine.view();
            if (in_place) {
              input = output.slice(comm.rank() * m, m);
              if (chunk_bytes > 0) std::memcpy(input.data(), mine.bytes.data(), chunk_bytes);
            }
            comm.all_gather(input, output.view(), Traffic::parameters);
            const std::string diff = bitwise_diff(output.bytes.data(), expected, 0, m * world);
            if (!diff.empty()) failures.add(comm.rank(), diff);
          });
          EXPECT_TRUE(failures.text.empty()) << "N=" << world << " " << dtype_name(dtype)
                                             << " m=" << m << (in_place ? " in place" : "") << "\n"
                                             << failures.text;
        }
}

TEST(SimulatedCommunicator, BroadcastCopiesTheRootsBufferFromEveryRoot) {
  uint64_t seed = 300;
  for (int64_t world : kWorldSizes)
    for (int64_t root = 0; root < world; ++root)
      for (int64_t n : {int64_t{0}, int64_t{13}, int64_t{2053}}) {
        ++seed;
        const Buffer expected = random_input(DType::f16, n, seed, root);
        Failures failures;
        run_simulated_ranks(world, true, [&](Communicator& comm) {
          Buffer buffer = random_input(DType::f16, n, seed, comm.rank());  // (n) f16
          comm.broadcast(buffer.view(), root, Traffic::other);
          const std::string diff = bitwise_diff(buffer.bytes.data(), expected, 0, n);
          if (!diff.empty()) failures.add(comm.rank(), diff);
        });
        EXPECT_TRUE(failures.text.empty())
            << "N=" << world << " root=" << root << " n=" << n << "\n"
            << failures.text;
      }
}

TEST(SimulatedCommunicator, AllReduceGivesTheBitsOfReduceScatterThenAllGather) {
  uint64_t seed = 400;
  for (int64_t world : kWorldSizes)
    for (DType dtype : kSummable) {
      ++seed;
      const int64_t m = 301;
      Failures failures;
      run_simulated_ranks(world, true, [&](Communicator& comm) {
        Buffer reduced = random_input(dtype, m * world, seed, comm.rank());  // (N·m) dtype
        Buffer gathered = reduced;                                           // (N·m) dtype
        comm.all_reduce(reduced.view(), Traffic::gradients);
        const TensorView own = gathered.slice(comm.rank() * m, m);
        comm.reduce_scatter(gathered.view(), own, Traffic::gradients);
        comm.all_gather(own, gathered.view(), Traffic::parameters);
        const std::string diff = bitwise_diff(gathered.bytes.data(), reduced, 0, m * world);
        if (!diff.empty()) failures.add(comm.rank(), diff);
      });
      EXPECT_TRUE(failures.text.empty()) << "N=" << world << " " << dtype_name(dtype) << "\n"
                                         << failures.text;
    }
}

TEST(SimulatedCommunicator, CountsTheRingAlgorithmsBytes) {
  for (int64_t world : kWorldSizes)
    for (bool move_data : {true, false}) {
      const int64_t n = 7 * world + 5;  // not divisible by N: chunks differ in size
      Failures failures;
      run_simulated_ranks(world, move_data, [&](Communicator& comm) {
        Buffer big(DType::bf16, n * world), small(DType::bf16, n);  // (N·n), (n) bf16
        comm.all_reduce(small.view(), Traffic::gradients);
        comm.reduce_scatter(big.view(), small.view(), Traffic::gradients);
        comm.all_gather(small.view(), big.view(), Traffic::parameters);
        comm.broadcast(small.view(), world - 1, Traffic::other);
        comm.barrier();
        const int64_t r = comm.rank();
        const auto check = [&](Collective c, int64_t elements, int64_t root = 0) {
          const CallCounts got = comm.stats().of(c);
          const int64_t sent = ring_bytes_sent(c, elements, 2, r, world, root);
          const int64_t received = ring_bytes_received(c, elements, 2, r, world, root);
          if (got.calls != 1 || got.bytes_sent != sent || got.bytes_received != received)
            failures.add(r, std::string(collective_name(c)) + ": " + std::to_string(got.calls) +
                                " calls, sent " + std::to_string(got.bytes_sent) + " (expected " +
                                std::to_string(sent) + "), received " +
                                std::to_string(got.bytes_received) + " (expected " +
                                std::to_string(received) + ")");
        };
        check(Collective::all_reduce, n);
        check(Collective::reduce_scatter, n * world);
        check(Collective::all_gather, n * world);
        check(Collective::broadcast, n, world - 1);
        if (comm.stats().of(Collective::barrier).calls != 1) failures.add(r, "barrier not counted");
        if (comm.stats().of(Traffic::parameters).bytes_sent !=
            ring_bytes_sent(Collective::all_gather, n * world, 2, r, world))
          failures.add(r, "parameters traffic is not the all-gather's");
      });
      EXPECT_TRUE(failures.text.empty()) << "N=" << world << (move_data ? "" : " meta") << "\n"
                                         << failures.text;
    }
}

TEST(SimulatedCommunicator, SixtyFourBitElementCountsOnAMetaWorldAreCountedNotTouched) {
  const int64_t world = 4, n = (int64_t{1} << 40) + 3;  // 2⁴⁰ + 3 bf16: 2 TiB, never allocated
  run_simulated_ranks(world, false, [&](Communicator& comm) {
    const TensorView buffer(nullptr, DType::bf16, {n});  // (n) bf16 on meta: no storage
    comm.all_reduce(buffer, Traffic::gradients);
    const CallCounts got = comm.stats().of(Collective::all_reduce);
    EXPECT_EQ(got.bytes_sent, ring_bytes_sent(Collective::all_reduce, n, 2, comm.rank(), world));
    EXPECT_GT(got.bytes_sent, int64_t{1} << 41);  // ≈ 2·(N−1)/N·2n bytes: past 32 bits
  });
}

TEST(SimulatedCommunicator, SendRecvPassesBuffersAroundARing) {
  for (int64_t world : {2, 3, 4, 7}) {
    const int64_t n = 999;
    Failures failures;
    run_simulated_ranks(world, true, [&](Communicator& comm) {
      const int64_t r = comm.rank(), next = (r + 1) % world, prev = (r + world - 1) % world;
      Buffer out = random_input(DType::f32, n, 500, r);  // (n) f32
      Buffer in(DType::f32, n);                          // (n) f32
      // Rendezvous sends: even ranks send first, odd ranks receive first, so the ring drains.
      if (r % 2 == 0) {
        comm.send(out.view(), next, Traffic::other);
        comm.recv(in.view(), prev, Traffic::other);
      } else {
        comm.recv(in.view(), prev, Traffic::other);
        comm.send(out.view(), next, Traffic::other);
      }
      const std::string diff =
          bitwise_diff(in.bytes.data(), random_input(DType::f32, n, 500, prev), 0, n);
      if (!diff.empty()) failures.add(r, diff);
      if (comm.stats().of(Collective::send).bytes_sent != n * 4 ||
          comm.stats().of(Collective::recv).bytes_received != n * 4)
        failures.add(r, "send/recv bytes not counted");
    });
    EXPECT_TRUE(failures.text.empty()) << "N=" << world << "\n" << failures.text;
  }
}

TEST(SimulatedCommunicator, SplitGroupsByColorAndOrdersByKey) {
  const int64_t world = 7;
  Failures failures;
  run_simulated_ranks(world, true, [&](Communicator& comm) {
    const int64_t r = comm.rank(), color = r % 2;
    // Keys reversed: in each group the highest rank becomes rank 0.
    std::unique_ptr<Communicator> group = comm.split(color, -r);
    std::vector<int64_t> members;  // of this color, by descending rank
    for (int64_t k = world - 1; k >= 0; --k)
      if (k % 2 == color) members.push_back(k);
    const auto expected_rank = std::find(members.begin(), members.end(), r) - members.begin();
    if (group->world_size() != static_cast<int64_t>(members.size()) ||
        group->rank() != expected_rank) {
      failures.add(r, "group rank " + std::to_string(group->rank()) + " of " +
                          std::to_string(group->world_size()) + ", expected " +
                          std::to_string(expected_rank) + " of " + std::to_string(members.size()));
      return;
    }
    const int64_t n = 211;
    Buffer buffer = random_input(DType::bf16, n, 600, r);  // (n) bf16
    group->all_reduce(buffer.view(), Traffic::activations);
    // Summed in the group's rank order, which is descending world rank.
    const std::string diff =
        bitwise_diff(buffer.bytes.data(), rank_order_sum(DType::bf16, n, 600, members), 0, n);
    if (!diff.empty()) failures.add(r, diff);
    // The parent still works after the split, and the group counts only its own calls.
    comm.barrier();
    if (group->stats().total().calls != 1 || comm.stats().of(Collective::all_reduce).calls != 0)
      failures.add(r, "stats not kept per communicator");
  });
  EXPECT_TRUE(failures.text.empty()) << failures.text;
}

TEST(SimulatedCommunicator, AGroupSplitsAgainIntoSubgroups) {
  // 8 ranks → 2 groups of 4 (tensor parallel) → 2 pairs each: every pair sums its two inputs.
  const int64_t world = 8, n = 77;
  Failures failures;
  run_simulated_ranks(world, true, [&](Communicator& comm) {
    const int64_t r = comm.rank();
    auto quad = comm.split(r / 4, r);
    auto pair = quad->split(quad->rank() / 2, quad->rank());
    Buffer buffer = random_input(DType::f32, n, 700, r);  // (n) f32
    pair->all_reduce(buffer.view(), Traffic::activations);
    const int64_t first = r / 2 * 2;
    const std::string diff = bitwise_diff(
        buffer.bytes.data(), rank_order_sum(DType::f32, n, 700, {first, first + 1}), 0, n);
    if (pair->world_size() != 2 || pair->rank() != r % 2 || !diff.empty())
      failures.add(r, "pair rank " + std::to_string(pair->rank()) + " of " +
                          std::to_string(pair->world_size()) + " " + diff);
  });
  EXPECT_TRUE(failures.text.empty()) << failures.text;
}

TEST(SimulatedCommunicator, SplitRejectsANegativeColor) {
  SimulatedWorld world(1, true);
  SimulatedCommunicator comm(world, 0);
  EXPECT_THROW((void)comm.split(-1, 0), UsageError);
}

TEST(SimulatedCommunicator, RejectsBadWorldsAndRanks) {
  EXPECT_THROW(SimulatedWorld(0, true), UsageError);
  EXPECT_THROW(run_simulated_ranks(0, true, [](Communicator&) {}), UsageError);
  SimulatedWorld world(2, true);
  EXPECT_THROW(SimulatedCommunicator(world, 2), UsageError);
  EXPECT_THROW(world.fail(-1, "x"), UsageError);
}

// Runs `body` on every rank, catching each rank's PeerFailure message ("" when none).
std::vector<std::string> peer_failures(int64_t world, bool move_data,
                                       const std::function<void(Communicator&)>& body) {
  std::vector<std::string> messages(static_cast<size_t>(world));
  run_simulated_ranks(world, move_data, [&](Communicator& comm) {
    try {
      body(comm);
    } catch (const PeerFailure& e) {
      messages[static_cast<size_t>(comm.rank())] = e.what();
    }
  });
  return messages;
}

TEST(SimulatedCommunicator, AMismatchedCollectiveFailsEveryRankNamingBothCalls) {
  for (bool move_data : {true, false}) {
    const auto messages = peer_failures(4, move_data, [](Communicator& comm) {
      Buffer big(DType::bf16, 4096 * 4), small(DType::bf16, 4096);  // (4·4096), (4096) bf16
      comm.barrier();
      if (comm.rank() == 2)
        comm.all_gather(small.view(), big.view(), Traffic::parameters);
      else
        comm.all_reduce(big.view(), Traffic::gradients);
    });
    for (size_t r = 0; r < messages.size(); ++r) {
      EXPECT_NE(messages[r].find("ranks 0, 1, 3 called all_reduce of 16384 bf16"),
                std::string::npos)
          << "rank " << r << ": " << messages[r];
      EXPECT_NE(messages[r].find("rank 2 called all_gather of 16384 bf16"), std::string::npos)
          << "rank " << r << ": " << messages[r];
    }
  }
}

TEST(SimulatedCommunicator, AMismatchedCountOrRootIsAMismatchToo) {
  const auto counts = peer_failures(3, true, [](Communicator& comm) {
    Buffer b(DType::f32, 10 + (comm.rank() == 1 ? 1 : 0));  // (10 or 11) f32
    comm.all_reduce(b.view(), Traffic::other);
  });
  for (const std::string& m : counts)
    EXPECT_NE(m.find("rank 1 called all_reduce of 11 f32"), m.npos) << m;
  const auto roots = peer_failures(3, true, [](Communicator& comm) {
    Buffer b(DType::f32, 10);  // (10) f32
    comm.broadcast(b.view(), comm.rank() == 0 ? 1 : 0, Traffic::other);
  });
  for (const std::string& m : roots)
    EXPECT_NE(m.find("rank 0 called broadcast of 10 f32 from rank 1"), m.npos) << m;
}

TEST(SimulatedCommunicator, RecvOfAnotherSizeFailsBothEnds) {
  const auto messages = peer_failures(2, true, [](Communicator& comm) {
    Buffer b(DType::f32, comm.rank() == 0 ? 8 : 9);  // (8 or 9) f32
    if (comm.rank() == 0)
      comm.send(b.view(), 1, Traffic::other);
    else
      comm.recv(b.view(), 0, Traffic::other);
  });
  for (const std::string& m : messages)
    EXPECT_NE(m.find("rank 0 sends 8 f32 to rank 1, which receives 9 f32"), m.npos) << m;
}

TEST(SimulatedCommunicator, ARankThatThrowsFailsItsPeersWithinASecond) {
  const int64_t world = 4;
  std::vector<std::string> messages(world);
  std::vector<double> seconds(world, 0.0);
  try {
    run_simulated_ranks(world, true, [&](Communicator& comm) {
      Buffer b(DType::bf16, 4096);  // (4096) bf16
      if (comm.rank() == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        throw std::runtime_error("out of memory in the test");
      }
      const auto start = std::chrono::steady_clock::now();
      try {
        comm.all_reduce(b.view(), Traffic::gradients);
      } catch (const PeerFailure& e) {
        messages[static_cast<size_t>(comm.rank())] = e.what();
        seconds[static_cast<size_t>(comm.rank())] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        throw;
      }
    });
    FAIL() << "run_simulated_ranks returned although rank 2 threw";
  } catch (const PeerFailure& e) {
    FAIL() << "rethrew a peer's PeerFailure instead of rank 2's exception: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "out of memory in the test");
  }
  for (int64_t r : {0, 1, 3}) {
    const std::string& m = messages[static_cast<size_t>(r)];
    EXPECT_NE(m.find("rank 2 failed: out of memory in the test (while rank " + std::to_string(r) +
                     " waited in all_reduce of 4096 bf16)"),
              m.npos)
        << m;
    EXPECT_LT(seconds[static_cast<size_t>(r)], 1.0) << "rank " << r;
  }
}

TEST(SimulatedCommunicator, TheLowestOriginalExceptionIsRethrown) {
  try {
    run_simulated_ranks(5, true, [](Communicator& comm) {
      if (comm.rank() == 3) throw std::logic_error("three");
      if (comm.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        throw std::out_of_range("one");
      }
      comm.barrier();
    });
    FAIL() << "nothing rethrown";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "one");
  }
}

TEST(SimulatedCommunicator, ACallAfterAFailureThrowsAtOnce) {
  SimulatedWorld world(3, true);
  world.fail(1, "gone");
  world.fail(2, "later, ignored");
  SimulatedCommunicator comm(world, 0);
  try {
    comm.barrier();
    FAIL() << "barrier on a failed world returned";
  } catch (const PeerFailure& e) {
    EXPECT_STREQ(e.what(), "rank 1 failed: gone (when rank 0 called barrier)");
  }
}

TEST(SimulatedCommunicator, ARingOfBlockingSendsIsADeadlock) {
  const int64_t world = 4;
  const auto messages = peer_failures(world, true, [&](Communicator& comm) {
    Buffer b(DType::f32, 3);  // (3) f32
    comm.send(b.view(), (comm.rank() + 1) % world, Traffic::other);
    comm.recv(b.view(), (comm.rank() + world - 1) % world, Traffic::other);
  });
  for (size_t r = 0; r < messages.size(); ++r)
    EXPECT_NE(messages[r].find("deadlock: rank 0 waits in send to 1, rank 1 waits in send to 2, "
                               "rank 2 waits in send to 3, rank 3 waits in send to 0 (while rank " +
                               std::to_string(r) + " waited in send to "),
              std::string::npos)
        << "rank " << r << ": " << messages[r];
}

TEST(SimulatedCommunicator, WaitingOnARankThatReturnedIsADeadlock) {
  const auto recv = peer_failures(4, true, [](Communicator& comm) {
    Buffer b(DType::f32, 3);  // (3) f32
    if (comm.rank() == 3) comm.recv(b.view(), 2, Traffic::other);
    if (comm.rank() < 2) comm.barrier();  // ranks 0, 1 wait for 2 and 3 in the barrier
  });
  EXPECT_NE(recv[3].find("rank 3 waits in recv from 2, which has finished"), std::string::npos)
      << recv[3];
  EXPECT_NE(recv[0].find("rank 0 waits in barrier, which rank 2 has finished without calling"),
            std::string::npos)
      << recv[0];
  EXPECT_TRUE(recv[2].empty()) << "rank 2 returned normally, yet: " << recv[2];
}

TEST(SimulatedCommunicator, DeadlocksAreFoundInsideSplitGroupsToo) {
  const auto messages = peer_failures(4, true, [](Communicator& comm) {
    auto group = comm.split(comm.rank() / 2, comm.rank());
    Buffer b(DType::f32, 3);       // (3) f32
    if (comm.rank() == 1) return;  // leaves rank 0 alone in its group's all-reduce
    if (comm.rank() == 0) group->all_reduce(b.view(), Traffic::other);
    if (comm.rank() >= 2) group->send(b.view(), 1 - group->rank(), Traffic::other);
  });
  for (int64_t r : {0, 2, 3}) {
    const std::string& m = messages[static_cast<size_t>(r)];
    EXPECT_NE(m.find("rank 0 waits in all_reduce of 3 f32 in the group of ranks 0, 1, which rank "
                     "1 has finished without calling"),
              m.npos)
        << m;
    EXPECT_NE(m.find("rank 2 waits in send to 3, rank 3 waits in send to 2"), m.npos) << m;
  }
}

TEST(SimulatedCommunicator, SixtyFourMetaRanksRunThousandsOfCollectivesQuickly) {
  const int64_t world = 64, rounds = 1000;  // 4 collectives a round
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int64_t> calls{0};
  run_simulated_ranks(world, false, [&](Communicator& comm) {
    const int64_t m = 7'500'000'000 / world;  // a 7.5B model's shard: meta, never allocated
    const TensorView full(nullptr, DType::bf16, {m * world});  // (Ψ) bf16
    const TensorView shard(nullptr, DType::bf16, {m});         // (Ψ/N) bf16
    for (int64_t i = 0; i < rounds; ++i) {
      comm.all_gather(shard, full, Traffic::parameters);
      comm.reduce_scatter(full, shard, Traffic::gradients);
      comm.all_reduce(shard, Traffic::metrics);
      comm.broadcast(shard, i % world, Traffic::other);
    }
    calls += comm.stats().total().calls;
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(calls.load(), world * rounds * 4);
  EXPECT_LT(seconds, 30.0) << "64 meta ranks, " << rounds * 4 << " collectives";
  std::printf("64 meta ranks: %lld collectives in %.2f s\n", static_cast<long long>(rounds * 4),
              seconds);
}

}  // namespace
}  // namespace vramlab::dist
