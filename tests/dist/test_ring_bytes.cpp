// The ring algorithm's chunks and byte counts (communicator.h), against values derived by hand
// for small worlds and against an independent 128-bit computation at sizes near 2^62.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/dist/communicator.h"

namespace vramlab::dist {
namespace {

constexpr Collective kRingCollectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                           Collective::all_gather};
constexpr Collective kAllCollectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                          Collective::all_gather, Collective::broadcast,
                                          Collective::send,       Collective::recv,
                                          Collective::barrier};

__extension__ typedef __int128 int128;  // sizes near 2^62 times N overflow 64 bits

// ⌊c·n/N⌋ in 128 bits: the definition, with none of the implementation's overflow avoidance.
int64_t chunk_start_128(int64_t n, int64_t world_size, int64_t c) {
  return static_cast<int64_t>(static_cast<int128>(c) * n / world_size);
}

TEST(RingChunk, SmallWorldsByHand) {
  // n = 10, N = 3: starts ⌊10c/3⌋ = 0, 3, 6, 10.
  EXPECT_EQ(ring_chunk(10, 3, 0).first, 0);
  EXPECT_EQ(ring_chunk(10, 3, 0).count, 3);
  EXPECT_EQ(ring_chunk(10, 3, 1).first, 3);
  EXPECT_EQ(ring_chunk(10, 3, 1).count, 3);
  EXPECT_EQ(ring_chunk(10, 3, 2).first, 6);
  EXPECT_EQ(ring_chunk(10, 3, 2).count, 4);
  // n = 7, N = 4: starts 0, 1, 3, 5, 7.
  const int64_t counts_7_4[] = {1, 2, 2, 2};
  const int64_t firsts_7_4[] = {0, 1, 3, 5};
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_EQ(ring_chunk(7, 4, c).first, firsts_7_4[c]) << "chunk " << c;
    EXPECT_EQ(ring_chunk(7, 4, c).count, counts_7_4[c]) << "chunk " << c;
  }
  // n = 2 < N = 4: starts 0, 0, 1, 1, 2; two chunks are empty.
  const int64_t counts_2_4[] = {0, 1, 0, 1};
  for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(ring_chunk(2, 4, c).count, counts_2_4[c]);
  // n = 0: every chunk empty; N = 1: one chunk, all of it.
  for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(ring_chunk(0, 3, c).count, 0);
  EXPECT_EQ(ring_chunk(12345, 1, 0).first, 0);
  EXPECT_EQ(ring_chunk(12345, 1, 0).count, 12345);
}

TEST(RingChunk, ChunksTileTheBufferAtSizesNear2To62) {
  const int64_t big = int64_t{1} << 62;
  for (int64_t n : {big - 1, big, big + 3, big + 12345677, int64_t{3} * (big / 2) + 1}) {
    for (int64_t N : {2, 3, 7, 64, 1000}) {
      int64_t next = 0;
      for (int64_t c = 0; c < N; ++c) {
        const Chunk chunk = ring_chunk(n, N, c);
        ASSERT_EQ(chunk.first, chunk_start_128(n, N, c)) << "n " << n << " N " << N << " c " << c;
        ASSERT_EQ(chunk.first, next) << "chunks do not tile: n " << n << " N " << N << " c " << c;
        ASSERT_GE(chunk.count, n / N);
        ASSERT_LE(chunk.count, n / N + 1);
        next = chunk.first + chunk.count;
      }
      EXPECT_EQ(next, n) << "n " << n << " N " << N;
    }
  }
}

TEST(RingBytes, ReduceScatterAllGatherAndAllReduceByHand) {
  // n = 10 f32 (4 bytes), N = 3, chunks 3, 3, 4.
  // reduce_scatter: rank r sends n − |chunk r|: 7, 7, 6 elements.
  const int64_t rs_sent[] = {28, 28, 24};
  // all_gather: rank r sends n − |chunk r+1|: 7, 6, 7 elements.
  const int64_t ag_sent[] = {28, 24, 28};
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ring_bytes_sent(Collective::reduce_scatter, 10, 4, r, 3), rs_sent[r]) << "rank " << r;
    EXPECT_EQ(ring_bytes_sent(Collective::all_gather, 10, 4, r, 3), ag_sent[r]) << "rank " << r;
    EXPECT_EQ(ring_bytes_sent(Collective::all_reduce, 10, 4, r, 3), rs_sent[r] + ag_sent[r])
        << "rank " << r;
    // Each rank receives what its left neighbour r − 1 sends.
    const int64_t left = (r + 2) % 3;
    EXPECT_EQ(ring_bytes_received(Collective::reduce_scatter, 10, 4, r, 3), rs_sent[left]);
    EXPECT_EQ(ring_bytes_received(Collective::all_gather, 10, 4, r, 3), ag_sent[left]);
    EXPECT_EQ(ring_bytes_received(Collective::all_reduce, 10, 4, r, 3),
              rs_sent[left] + ag_sent[left]);
  }
  // n divisible by N: the textbook (N − 1)/N · n, here 4 ranks, 1024 bf16.
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(ring_bytes_sent(Collective::reduce_scatter, 1024, 2, r, 4), 3 * 256 * 2);
    EXPECT_EQ(ring_bytes_sent(Collective::all_reduce, 1024, 2, r, 4), 2 * 3 * 256 * 2);
  }
}

TEST(RingBytes, BroadcastIsAChainFromTheRoot) {
  // N = 4, root 1, 5 f32 = 20 bytes: the chain 1 → 2 → 3 → 0; rank 0 ends it and sends nothing,
  // the root receives nothing.
  const int64_t sent[] = {0, 20, 20, 20};
  const int64_t received[] = {20, 0, 20, 20};
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(ring_bytes_sent(Collective::broadcast, 5, 4, r, 4, 1), sent[r]) << "rank " << r;
    EXPECT_EQ(ring_bytes_received(Collective::broadcast, 5, 4, r, 4, 1), received[r])
        << "rank " << r;
  }
  // Root 0 of 3: the last of the chain is rank 2.
  EXPECT_EQ(ring_bytes_sent(Collective::broadcast, 9, 2, 2, 3, 0), 0);
  EXPECT_EQ(ring_bytes_sent(Collective::broadcast, 9, 2, 1, 3, 0), 18);
}

TEST(RingBytes, SendRecvMoveTheBufferAndBarrierNothing) {
  EXPECT_EQ(ring_bytes_sent(Collective::send, 7, 2, 0, 2), 14);
  EXPECT_EQ(ring_bytes_received(Collective::send, 7, 2, 0, 2), 0);
  EXPECT_EQ(ring_bytes_received(Collective::recv, 7, 2, 1, 2), 14);
  EXPECT_EQ(ring_bytes_sent(Collective::recv, 7, 2, 1, 2), 0);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ring_bytes_sent(Collective::barrier, 0, 0, r, 3), 0);
    EXPECT_EQ(ring_bytes_received(Collective::barrier, 0, 0, r, 3), 0);
  }
}

TEST(RingBytes, AOneRankWorldSendsAndReceivesNothing) {
  for (Collective c : kAllCollectives) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000003}, int64_t{1} << 62}) {
      EXPECT_EQ(ring_bytes_sent(c, n, 4, 0, 1), 0) << collective_name(c) << " n " << n;
      EXPECT_EQ(ring_bytes_received(c, n, 4, 0, 1), 0) << collective_name(c) << " n " << n;
    }
  }
}

TEST(RingBytes, AnEmptyBufferMovesNothing) {
  for (Collective c : kAllCollectives)
    for (int64_t r = 0; r < 4; ++r) {
      EXPECT_EQ(ring_bytes_sent(c, 0, 4, r, 4, 2), 0) << collective_name(c) << " rank " << r;
      EXPECT_EQ(ring_bytes_received(c, 0, 4, r, 4, 2), 0) << collective_name(c) << " rank " << r;
    }
}

TEST(RingBytes, EveryByteSentIsReceivedSomewhere) {
  const int64_t big = int64_t{1} << 62;
  for (Collective c : kRingCollectives) {
    for (int64_t N : {2, 3, 4, 7, 64}) {
      // Bytes per element 1: n near 2⁶² times 2 bytes would overflow the 64-bit count itself.
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000003}, big / 2 + 5, big - 3}) {
        const int64_t element_bytes = n > (int64_t{1} << 40) ? 1 : 2;
        int128 sent = 0, received = 0;
        for (int64_t r = 0; r < N; ++r) {
          sent += ring_bytes_sent(c, n, element_bytes, r, N);
          received += ring_bytes_received(c, n, element_bytes, r, N);
        }
        EXPECT_TRUE(sent == received) << collective_name(c) << " N " << N << " n " << n;
        // Σ over ranks of n − |one chunk each| = (N − 1)·n per pass.
        const int64_t passes = c == Collective::all_reduce ? 2 : 1;
        EXPECT_TRUE(sent == static_cast<int128>(passes) * (N - 1) * n * element_bytes)
            << collective_name(c) << " N " << N << " n " << n;
      }
    }
  }
  for (int64_t N : {2, 3, 5})
    for (int64_t root = 0; root < N; ++root) {
      int64_t sent = 0, received = 0;
      for (int64_t r = 0; r < N; ++r) {
        sent += ring_bytes_sent(Collective::broadcast, 11, 4, r, N, root);
        received += ring_bytes_received(Collective::broadcast, 11, 4, r, N, root);
      }
      EXPECT_EQ(sent, (N - 1) * 44) << "N " << N << " root " << root;
      EXPECT_EQ(received, sent) << "N " << N << " root " << root;
    }
}

}  // namespace
}  // namespace vramlab::dist
