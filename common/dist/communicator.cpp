// Communicator: argument checks and ring-algorithm byte counts around the implementations'
// calls (see communicator.h).
#include "common/dist/communicator.h"

#include <chrono>

#include "common/platform/errors.h"

namespace vramlab::dist {

namespace {

bool summable(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

void require_summable(const TensorView& view, std::string_view what) {
  if (!summable(view.dtype()))
    throw UsageError(std::string(what) + ": cannot sum " + std::string(dtype_name(view.dtype())) +
                     " (expected f32, bf16 or f16)");
}

void require_peer(int64_t peer, int64_t rank, int64_t world_size, std::string_view what) {
  if (peer < 0 || peer >= world_size || peer == rank)
    throw UsageError(std::string(what) + ": peer " + std::to_string(peer) +
                     " is not another rank of a world of " + std::to_string(world_size) +
                     " (this is rank " + std::to_string(rank) + ")");
}

int64_t element_size(const TensorView& view) {
  return static_cast<int64_t>(dtype_size_bytes(view.dtype()));
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string_view collective_name(Collective collective) {
  switch (collective) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_gather:
      return "all_gather";
    case Collective::broadcast:
      return "broadcast";
    case Collective::send:
      return "send";
    case Collective::recv:
      return "recv";
    case Collective::barrier:
      return "barrier";
  }
  return "unknown";
}

std::string_view traffic_name(Traffic traffic) {
  switch (traffic) {
    case Traffic::gradients:
      return "gradients";
    case Traffic::parameters:
      return "parameters";
    case Traffic::activations:
      return "activations";
    case Traffic::metrics:
      return "metrics";
    case Traffic::other:
      return "other";
  }
  return "unknown";
}

namespace {
void add(CallCounts& into, const CallCounts& c) {
  into.calls += c.calls;
  into.bytes_sent += c.bytes_sent;
  into.bytes_received += c.bytes_received;
  into.seconds += c.seconds;
}
}  // namespace

CallCounts CommunicationStats::of(Traffic traffic) const {
  CallCounts sum;
  for (const auto& row : calls) add(sum, row[static_cast<size_t>(traffic)]);
  return sum;
}

CallCounts CommunicationStats::of(Collective collective) const {
  CallCounts sum;
  for (const CallCounts& c : calls[static_cast<size_t>(collective)]) add(sum, c);
  return sum;
}

CallCounts CommunicationStats::total() const {
  CallCounts sum;
  for (const auto& row : calls)
    for (const CallCounts& c : row) add(sum, c);
  return sum;
}

CommunicationStats& CommunicationStats::operator+=(const CommunicationStats& other) {
  for (size_t c = 0; c < kCollectiveCount; ++c)
    for (size_t t = 0; t < kTrafficCount; ++t) add(calls[c][t], other.calls[c][t]);
  return *this;
}

CommunicationStats CommunicationStats::since(const CommunicationStats& earlier) const {
  CommunicationStats d = *this;
  for (size_t c = 0; c < kCollectiveCount; ++c)
    for (size_t t = 0; t < kTrafficCount; ++t) {
      CallCounts& x = d.calls[c][t];
      const CallCounts& e = earlier.calls[c][t];
      x.calls -= e.calls;
      x.bytes_sent -= e.bytes_sent;
      x.bytes_received -= e.bytes_received;
      x.seconds -= e.seconds;
    }
  return d;
}

Chunk ring_chunk(int64_t n, int64_t world_size, int64_t c) {
  if (n < 0 || world_size < 1 || c < 0 || c >= world_size)
    throw InternalError("ring_chunk(" + std::to_string(n) + ", " + std::to_string(world_size) +
                        ", " + std::to_string(c) + ") out of range");
  // ⌊c·n/N⌋ without forming c·n, which overflows for n near 2⁶³: n = qN + m.
  const int64_t q = n / world_size, m = n % world_size;
  const auto start = [&](int64_t k) { return k * q + (k * m) / world_size; };
  return Chunk{start(c), start(c + 1) - start(c)};
}

int64_t ring_bytes_sent(Collective collective, int64_t elements, int64_t element_bytes,
                        int64_t rank, int64_t world_size, int64_t root) {
  const int64_t N = world_size;
  if (N == 1) return 0;
  const auto others = [&](int64_t kept) { return elements - ring_chunk(elements, N, kept).count; };
  switch (collective) {
    case Collective::reduce_scatter:
      return others(rank) * element_bytes;
    case Collective::all_gather:
      return others((rank + 1) % N) * element_bytes;
    case Collective::all_reduce:
      return (others(rank) + others((rank + 1) % N)) * element_bytes;
    case Collective::broadcast:
      // The chain root → root+1 → … ends at root−1, which sends nothing.
      return rank == (root + N - 1) % N ? 0 : elements * element_bytes;
    case Collective::send:
      return elements * element_bytes;
    case Collective::recv:
    case Collective::barrier:
      return 0;
  }
  return 0;
}

int64_t ring_bytes_received(Collective collective, int64_t elements, int64_t element_bytes,
                            int64_t rank, int64_t world_size, int64_t root) {
  const int64_t N = world_size;
  if (N == 1) return 0;
  switch (collective) {
    // In a ring every rank receives what its left neighbour sends.
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_reduce:
      return ring_bytes_sent(collective, elements, element_bytes, (rank + N - 1) % N, N, root);
    case Collective::broadcast:
      return rank == root ? 0 : elements * element_bytes;
    case Collective::recv:
      return elements * element_bytes;
    case Collective::send:
    case Collective::barrier:
      return 0;
  }
  return 0;
}

Communicator::Communicator(int64_t rank, int64_t world_size)
    : rank_(rank), world_size_(world_size) {
  if (world_size < 1)
    throw UsageError("a world needs >= 1 rank, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    throw UsageError("rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size) +
                     ")");
}

void Communicator::count(Collective collective, Traffic traffic, int64_t elements,
                         int64_t element_bytes, int64_t root, double seconds) {
  CallCounts& c = stats_.calls[static_cast<size_t>(collective)][static_cast<size_t>(traffic)];
  ++c.calls;
  c.bytes_sent += ring_bytes_sent(collective, elements, element_bytes, rank_, world_size_, root);
  c.bytes_received +=
      ring_bytes_received(collective, elements, element_bytes, rank_, world_size_, root);
  c.seconds += seconds;
}

void Communicator::all_reduce(const TensorView& buffer, Traffic traffic) {
  require_summable(buffer, "all_reduce");
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && buffer.numel() > 0) do_all_reduce(buffer);
  count(Collective::all_reduce, traffic, buffer.numel(), element_size(buffer), 0, since(start));
}

void Communicator::reduce_scatter(const TensorView& input, const TensorView& output,
                                  Traffic traffic) {
  require_summable(input, "reduce_scatter");
  if (input.dtype() != output.dtype() || input.numel() != output.numel() * world_size_)
    throw UsageError("reduce_scatter: input of " + std::to_string(input.numel()) + " " +
                     std::string(dtype_name(input.dtype())) + " is not " +
                     std::to_string(world_size_) + " x the output's " +
                     std::to_string(output.numel()) + " " +
                     std::string(dtype_name(output.dtype())));
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && input.numel() > 0) do_reduce_scatter(input, output);
  count(Collective::reduce_scatter, traffic, input.numel(), element_size(input), 0, since(start));
}

void Communicator::all_gather(const TensorView& input, const TensorView& output, Traffic traffic) {
  if (input.dtype() != output.dtype() || output.numel() != input.numel() * world_size_)
    throw UsageError("all_gather: output of " + std::to_string(output.numel()) + " " +
                     std::string(dtype_name(output.dtype())) + " is not " +
                     std::to_string(world_size_) + " x the input's " +
                     std::to_string(input.numel()) + " " + std::string(dtype_name(input.dtype())));
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && output.numel() > 0) do_all_gather(input, output);
  count(Collective::all_gather, traffic, output.numel(), element_size(output), 0, since(start));
}

void Communicator::broadcast(const TensorView& buffer, int64_t root, Traffic traffic) {
  if (root < 0 || root >= world_size_)
    throw UsageError("broadcast: root " + std::to_string(root) + " outside [0, " +
                     std::to_string(world_size_) + ")");
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && buffer.numel() > 0) do_broadcast(buffer, root);
  count(Collective::broadcast, traffic, buffer.numel(), element_size(buffer), root, since(start));
}

void Communicator::send(const TensorView& buffer, int64_t peer, Traffic traffic) {
  require_peer(peer, rank_, world_size_, "send");
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && buffer.numel() > 0) do_send(buffer, peer);
  count(Collective::send, traffic, buffer.numel(), element_size(buffer), 0, since(start));
}

void Communicator::recv(const TensorView& buffer, int64_t peer, Traffic traffic) {
  require_peer(peer, rank_, world_size_, "recv");
  const auto start = std::chrono::steady_clock::now();
  if (move_data_ && buffer.numel() > 0) do_recv(buffer, peer);
  count(Collective::recv, traffic, buffer.numel(), element_size(buffer), 0, since(start));
}

void Communicator::barrier() {
  const auto start = std::chrono::steady_clock::now();
  do_barrier();
  count(Collective::barrier, Traffic::other, 0, 0, 0, since(start));
}

}  // namespace vramlab::dist
