/// \file
/// \brief Exercise 04.2: the ring reduce-scatter and all-gather, built from point-to-point
/// send/recv, and the all-reduce as one followed by the other: the bandwidth-optimal algorithm
/// behind NCCL's collectives and the ZeRO paper's communication volumes (§7).
///
/// The one API shared by the stub (exercises/04-zero/ring_collectives.cpp) and the reference
/// (solutions/04-zero/ring_collectives.cpp). The tests run them on N simulated ranks
/// (dist::run_simulated_ranks) and compare with the communicator's own collectives and with the
/// bytes dist::ring_bytes_sent counts.
///
/// **Chunks.** Every rank passes a buffer of the same n elements, cut into N chunks, chunk c
/// being dist::ring_chunk(n, N, c): elements [⌊c·n/N⌋, ⌊(c+1)·n/N⌋). Rank r sends only to its right
/// neighbour (r+1) mod N and receives only from its left neighbour (r−1) mod N, one chunk per
/// step, N − 1 steps per collective.
///
/// **Sends are rendezvous**: Communicator::send may return only once the peer has received (the
/// simulated communicator's sends always wait, as MPI's do for large messages). A schedule in
/// which every rank sends before it receives therefore deadlocks; the simulated world detects it
/// and fails every rank with dist::PeerFailure.
///
/// Every send and recv is counted under dist::Traffic::other.
#pragma once

#include <span>

#include "common/dist/communicator.h"

namespace vramlab::lesson04 {

/// Exercise 04.2: ring reduce-scatter, in place. On return chunk r of \p buffer on rank r holds
/// the sum over the ranks of their chunk r; the other chunks hold partial sums (scratch).
/// Rank r sends every chunk but chunk r once: n − |chunk r| elements.
/// \param comm this rank's communicator (N ranks; N = 1 leaves the buffer as it is).
/// \param buffer (n) f32, the same n on every rank.
/// \throws dist::PeerFailure when a peer fails or the ranks deadlock.
void ring_reduce_scatter(dist::Communicator& comm, std::span<float> buffer);

/// Exercise 04.2: ring all-gather, in place. On entry chunk r of \p buffer on rank r holds rank
/// r's part; on return every chunk c holds rank c's part, on every rank. Rank r sends every chunk
/// but chunk (r+1) mod N once.
/// \param comm this rank's communicator. \param buffer (n) f32, the same n on every rank.
/// \throws dist::PeerFailure when a peer fails or the ranks deadlock.
void ring_all_gather(dist::Communicator& comm, std::span<float> buffer);

/// Exercise 04.2: ring all-reduce, in place: ring_reduce_scatter then ring_all_gather, so every
/// rank ends with the sum of every rank's buffer, having sent 2(N−1)/N·n elements (exactly
/// (n − |chunk r|) + (n − |chunk r+1|)).
/// \param comm this rank's communicator. \param buffer (n) f32, the same n on every rank.
/// \throws dist::PeerFailure when a peer fails or the ranks deadlock.
void ring_all_reduce(dist::Communicator& comm, std::span<float> buffer);

}  // namespace vramlab::lesson04
