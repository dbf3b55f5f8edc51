// Known-wrong variant of exercise 04.2 (kept for `vramlab verify`, never linked into a lesson):
// has every rank send before it receives; sends wait for their receiver, so no rank ever reaches
// its receive: the ranks deadlock.
// The exercise's tests must fail for it.
#include <vector>

#include "lessons/04-zero/api/ring_collectives.h"

namespace vramlab::lesson04 {

namespace {

using dist::Chunk;
using memory::TensorView;

int64_t mod(int64_t a, int64_t n) {
  return ((a % n) + n) % n;
}

TensorView view(float* data, int64_t count) {
  return TensorView(data, DType::f32, {count});  // (count) f32
}

// One ring step: \p out to the right neighbour, \p in from the left, sending first on every rank.
void exchange(dist::Communicator& comm, const TensorView& out, const TensorView& in) {
  const int64_t r = comm.rank(), N = comm.world_size();
  const int64_t right = mod(r + 1, N), left = mod(r - 1, N);
  comm.send(out, right, dist::Traffic::other);
  comm.recv(in, left, dist::Traffic::other);
}

}  // namespace

void ring_reduce_scatter(dist::Communicator& comm, std::span<float> buffer) {
  const int64_t r = comm.rank(), N = comm.world_size();
  const auto n = static_cast<int64_t>(buffer.size());
  if (N == 1) return;
  std::vector<float> incoming(static_cast<size_t>(n / N + 1));  // (⌈n/N⌉) f32, one chunk
  // At step s rank r passes on chunk r−s−1, whose partial sum it completed at step s−1 (at step
  // 0: its own values), and adds its own values to chunk r−s−2 from the left. The chunk it
  // receives at the last step, s = N−2, is chunk r: complete.
  for (int64_t s = 0; s + 1 < N; ++s) {
    const Chunk out = dist::ring_chunk(n, N, mod(r - s - 1, N));
    const Chunk in = dist::ring_chunk(n, N, mod(r - s - 2, N));
    exchange(comm, view(buffer.data() + out.first, out.count), view(incoming.data(), in.count));
    for (int64_t i = 0; i < in.count; ++i)
      buffer[static_cast<size_t>(in.first + i)] += incoming[static_cast<size_t>(i)];
  }
}

void ring_all_gather(dist::Communicator& comm, std::span<float> buffer) {
  const int64_t r = comm.rank(), N = comm.world_size();
  const auto n = static_cast<int64_t>(buffer.size());
  // At step s rank r passes on chunk r−s (its own at step 0, then the one it just received) and
  // receives chunk r−s−1 in place: nothing to add, so no scratch.
  for (int64_t s = 0; s + 1 < N; ++s) {
    const Chunk out = dist::ring_chunk(n, N, mod(r - s, N));
    const Chunk in = dist::ring_chunk(n, N, mod(r - s - 1, N));
    exchange(comm, view(buffer.data() + out.first, out.count),
             view(buffer.data() + in.first, in.count));
  }
}

void ring_all_reduce(dist::Communicator& comm, std::span<float> buffer) {
  ring_reduce_scatter(comm, buffer);  // rank r now holds the sum of chunk r
  ring_all_gather(comm, buffer);      // which it starts the all-gather with
}

}  // namespace vramlab::lesson04
