// Tests of exercise 04.2 (the ring reduce-scatter and all-gather from send/recv, and the
// all-reduce). They run against your code (`vramlab check 04.2`) and against the reference
// (ctest: test_ex_04_2_ref).
// Expectations: the simulated communicator's own collectives (comm.all_reduce,
// comm.reduce_scatter, which sum in rank order 0..N−1) for N = 1..5 ranks and odd sizes, fewer
// elements than ranks included, and dist::ring_bytes_sent / ring_bytes_received for the bytes
// the exercise's sends and receives counted.
//
// The tolerance of a sum: the ring adds chunk c's values in the order c+1, c+2, …, c, the
// communicator in the order 0, 1, …, N−1. Each f32 sum of N terms is within γ(N−1)·Σ|x_i| of the
// exact sum (Higham, Accuracy and Stability of Numerical Algorithms, §4.2; γ(k) = k·u/(1 − k·u),
// u = 2⁻²⁴), so the two differ by at most 2·γ(N−1)·Σ|x_i|: the test divides each difference by
// its element's Σ|x_i| and allows 2·γ(N−1). The all-gather moves values without arithmetic:
// bitwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/dist/simulated_communicator.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/04-zero/api/ring_collectives.h"

namespace vramlab::lesson04 {
namespace {

using dist::Collective;
using dist::Communicator;
using memory::TensorView;
using workbook::Comparison;
using workbook::Unit;

constexpr int64_t kSizes[] = {1, 2, 3, 5, 7, 64, 1000, 4099, 100003};

double gamma(int64_t k) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(k) * u / (1.0 - static_cast<double>(k) * u);
}

// Rank r's buffer: values of mixed sign over six decades, the same on every run.
std::vector<float> rank_values(int64_t n, int64_t world_size, int64_t rank) {
  std::mt19937_64 rng(static_cast<uint64_t>(4200 + 7919 * n + 131 * world_size + rank));
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_int_distribution<int> decade(-3, 3);
  std::vector<float> x(static_cast<size_t>(n));  // (n) f32
  for (float& v : x) v = value(rng) * std::pow(10.0f, static_cast<float>(decade(rng)));
  return x;
}

TensorView view(std::vector<float>& x) {
  return TensorView(x.data(), DType::f32, {static_cast<int64_t>(x.size())});  // (n) f32
}

std::string case_name(const char* op, int64_t n, int64_t world_size, int64_t rank) {
  return std::string(op) + " n=" + std::to_string(n) + " N=" + std::to_string(world_size) +
         " rank " + std::to_string(rank);
}

// What each rank found, gathered after the ranks have joined.
struct RankResult {
  std::vector<float> mine;       // (n) f32 the exercise's buffer after the call
  std::vector<float> reference;  // (n) f32 the communicator's all_reduce of the same data
  std::vector<float> scattered;  // (n/N) f32 comm.reduce_scatter's output when N divides n
  int64_t bytes_sent = 0, bytes_received = 0;
};

using Operation = void (*)(Communicator&, std::span<float>);

// Runs \p op on N simulated ranks, then the communicator's collectives on the same data. A
// deadlock or a failed peer becomes a test failure that says so.
std::vector<RankResult> run_ranks(Operation op, bool gather_only, int64_t n, int64_t world_size) {
  std::vector<RankResult> results(static_cast<size_t>(world_size));
  try {
    dist::run_simulated_ranks(world_size, true, [&](Communicator& comm) {
      RankResult& out = results[static_cast<size_t>(comm.rank())];
      std::vector<float> x = rank_values(n, world_size, comm.rank());  // (n) f32
      if (gather_only) {
        // Only chunk r is this rank's part; the rest must be overwritten.
        const dist::Chunk own = dist::ring_chunk(n, world_size, comm.rank());
        for (int64_t i = 0; i < n; ++i)
          if (i < own.first || i >= own.first + own.count)
            x[static_cast<size_t>(i)] = std::nanf("");
      }
      out.mine = x;
      op(comm, out.mine);
      const dist::CallCounts sent = comm.stats().of(Collective::send);
      const dist::CallCounts received = comm.stats().of(Collective::recv);
      out.bytes_sent = sent.bytes_sent;
      out.bytes_received = received.bytes_received;
      if (gather_only) return;
      out.reference = rank_values(n, world_size, comm.rank());
      comm.all_reduce(view(out.reference), dist::Traffic::other);
      if (n % world_size == 0) {
        std::vector<float> input = rank_values(n, world_size, comm.rank());  // (n) f32
        out.scattered.resize(static_cast<size_t>(n / world_size));
        comm.reduce_scatter(view(input), view(out.scattered), dist::Traffic::other);
      }
    });
  } catch (const dist::PeerFailure& e) {
    ADD_FAILURE() << "the ranks did not finish (n=" << n << ", N=" << world_size
                  << "): " << e.what()
                  << "\n(a deadlock: do all ranks send first? Sends wait for their receiver.)";
    return {};
  }
  return results;
}

struct SumChecks {
  Comparison sums;
  Comparison scattered{
      "|ring - comm.reduce_scatter| / (2 gamma(N-1) sum|x_i|) per element of chunk r (N divides n)",
      Unit::kNumber, 1.0};
  Comparison sent{"bytes the ranks' sends counted (dist::ring_bytes_sent)", Unit::kBytes};
  Comparison received{"bytes the ranks' receives counted (dist::ring_bytes_received)",
                      Unit::kBytes};
  explicit SumChecks(const std::string& what)
      : sums(what + ": |ring - comm.all_reduce| / (2 gamma(N-1) sum|x_i|) per element",
             Unit::kNumber, 1.0) {}
};

void add_sums(SumChecks& checks, const char* op, Collective collective, int64_t n,
              int64_t world_size, const std::vector<RankResult>& results, bool whole_buffer) {
  std::vector<double> magnitude(static_cast<size_t>(n), 0.0);  // (n) Σ_q |x_q| per element
  for (int64_t q = 0; q < world_size; ++q) {
    const std::vector<float> x = rank_values(n, world_size, q);
    for (int64_t i = 0; i < n; ++i)
      magnitude[static_cast<size_t>(i)] +=
          std::fabs(static_cast<double>(x[static_cast<size_t>(i)]));
  }
  const double allowed = 2.0 * gamma(world_size - 1);
  for (int64_t r = 0; r < static_cast<int64_t>(results.size()); ++r) {
    const RankResult& res = results[static_cast<size_t>(r)];
    const dist::Chunk own = dist::ring_chunk(n, world_size, r);
    const int64_t first = whole_buffer ? 0 : own.first;
    const int64_t count = whole_buffer ? n : own.count;
    for (int64_t i = first; i < first + count; ++i) {
      const auto k = static_cast<size_t>(i);
      const double diff = static_cast<double>(res.mine[k]) - static_cast<double>(res.reference[k]);
      // N = 1 allows nothing: a sum of one term is exact.
      const double bound = allowed * magnitude[k];
      const std::string where = case_name(op, n, world_size, r) + " element " + std::to_string(i);
      checks.sums.add(where, 0.0,
                      bound > 0.0 ? std::fabs(diff) / bound : (diff == 0.0 ? 0.0 : INFINITY));
      if (!res.scattered.empty() && !whole_buffer) {
        const double scattered_diff =
            static_cast<double>(res.mine[k]) -
            static_cast<double>(res.scattered[static_cast<size_t>(i - first)]);
        checks.scattered.add(where, 0.0,
                             bound > 0.0 ? std::fabs(scattered_diff) / bound
                                         : (scattered_diff == 0.0 ? 0.0 : INFINITY));
      }
    }
    checks.sent.add(case_name(op, n, world_size, r),
                    static_cast<double>(dist::ring_bytes_sent(collective, n, 4, r, world_size)),
                    static_cast<double>(res.bytes_sent));
    checks.received.add(
        case_name(op, n, world_size, r),
        static_cast<double>(dist::ring_bytes_received(collective, n, 4, r, world_size)),
        static_cast<double>(res.bytes_received));
  }
}

//! [test]
TEST(RingCollectives, AllReduceEqualsTheCommunicatorsWithinTheSummationOrderBound) {
  SumChecks checks("ring_all_reduce");
  for (const int64_t world_size : {1, 2, 3, 4, 5})
    for (const int64_t n : kSizes) {
      const std::vector<RankResult> results = run_ranks(ring_all_reduce, false, n, world_size);
      add_sums(checks, "all_reduce", Collective::all_reduce, n, world_size, results, true);
    }
  VRAMLAB_EXPECT_PASSES(checks.sums);
  VRAMLAB_EXPECT_PASSES(checks.sent);
  VRAMLAB_EXPECT_PASSES(checks.received);
}
//! [test]

TEST(RingCollectives, ReduceScatterLeavesChunkRSummedOnRankR) {
  SumChecks checks("ring_reduce_scatter");
  for (const int64_t world_size : {1, 2, 3, 4, 5})
    for (const int64_t n : kSizes) {
      const std::vector<RankResult> results = run_ranks(ring_reduce_scatter, false, n, world_size);
      add_sums(checks, "reduce_scatter", Collective::reduce_scatter, n, world_size, results, false);
    }
  VRAMLAB_EXPECT_PASSES(checks.sums);
  VRAMLAB_EXPECT_PASSES(checks.scattered);
  VRAMLAB_EXPECT_PASSES(checks.sent);
  VRAMLAB_EXPECT_PASSES(checks.received);
}

TEST(RingCollectives, AllGatherCopiesEveryRanksChunkBitwise) {
  Comparison values("ring_all_gather: chunk c on every rank equals rank c's values (bitwise)");
  Comparison sent("bytes the ranks' sends counted (dist::ring_bytes_sent)", Unit::kBytes);
  Comparison received("bytes the ranks' receives counted (dist::ring_bytes_received)",
                      Unit::kBytes);
  for (const int64_t world_size : {1, 2, 3, 4, 5})
    for (const int64_t n : kSizes) {
      const std::vector<RankResult> results = run_ranks(ring_all_gather, true, n, world_size);
      for (int64_t r = 0; r < static_cast<int64_t>(results.size()); ++r) {
        const RankResult& res = results[static_cast<size_t>(r)];
        for (int64_t c = 0; c < world_size; ++c) {
          const dist::Chunk chunk = dist::ring_chunk(n, world_size, c);
          const std::vector<float> owner = rank_values(n, world_size, c);
          for (int64_t i = chunk.first; i < chunk.first + chunk.count; ++i)
            values.add(case_name("all_gather", n, world_size, r) + " element " + std::to_string(i) +
                           " (chunk " + std::to_string(c) + ")",
                       static_cast<double>(owner[static_cast<size_t>(i)]),
                       static_cast<double>(res.mine[static_cast<size_t>(i)]));
        }
        sent.add(
            case_name("all_gather", n, world_size, r),
            static_cast<double>(dist::ring_bytes_sent(Collective::all_gather, n, 4, r, world_size)),
            static_cast<double>(res.bytes_sent));
        received.add(case_name("all_gather", n, world_size, r),
                     static_cast<double>(
                         dist::ring_bytes_received(Collective::all_gather, n, 4, r, world_size)),
                     static_cast<double>(res.bytes_received));
      }
    }
  VRAMLAB_EXPECT_PASSES(values);
  VRAMLAB_EXPECT_PASSES(sent);
  VRAMLAB_EXPECT_PASSES(received);
}

TEST(RingCollectives, AllReduceSendsTwoNMinusOneOverNOfTheBuffer) {
  // 2(N−1)/N·n elements of 4 bytes when N divides n: the volume ZeRO's §7 gives DDP.
  Comparison sent("bytes one rank sends in ring_all_reduce (2(N-1)/N x 4n)", Unit::kBytes);
  for (const int64_t world_size : {2, 3, 4, 5})
    for (const int64_t n : {60, 6000, 120000}) {
      const std::vector<RankResult> results = run_ranks(ring_all_reduce, false, n, world_size);
      for (int64_t r = 0; r < static_cast<int64_t>(results.size()); ++r)
        sent.add(case_name("all_reduce", n, world_size, r),
                 2.0 * static_cast<double>(world_size - 1) / static_cast<double>(world_size) * 4.0 *
                     static_cast<double>(n),
                 static_cast<double>(results[static_cast<size_t>(r)].bytes_sent));
    }
  VRAMLAB_EXPECT_PASSES(sent);
}

}  // namespace
}  // namespace vramlab::lesson04
