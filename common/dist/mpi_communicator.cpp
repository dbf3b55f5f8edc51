// MpiCommunicator: each collective is one MPI call on the communicator's MPI_Comm (see
// mpi_communicator.h). Built against OpenMPI when CMake found MPI (VRAMLAB_HAVE_MPI); without it
// world() says so, and launched_by_mpirun() still answers.
//
// Note [Collective watchdog]
// Rationale: a blocking MPI call waits forever for a rank that stopped answering (SIGSTOP, a
// sleep or a deadlock inside a step), and ranks that call different collectives or sizes hang or
// silently exchange garbage; OpenMPI only ends the job when a rank dies.
// Approach: every call is two phases, both non-blocking and polled against a deadline
// (VRAMLAB_COLLECTIVE_TIMEOUT seconds, default 300: a step's imbalance between ranks, a
// checkpoint written by rank 0, never comes near it).
//   1. Arrival: each rank sends a 5-word header (call number, collective, per-rank count, dtype,
//      root or peer) to every rank it is about to exchange data with (one peer for send/recv) and
//      receives theirs, on a duplicate of the communicator so headers never meet data. When the
//      deadline passes, the ranks whose header has not come are exactly the ones that did not
//      arrive: they are named. A header that differs from this rank's is a mismatched collective:
//      both calls are named.
//   2. Data: the MPI-3 non-blocking form of the call (MPI_Iallreduce, ...), polled the same way.
//      MPI does not say who is missing inside a call, and a rank can stop there (ZeRO-3 spends
//      much of a step in all-gathers), so when the deadline passes the rank probes its peers on
//      the header communicator: every rank answers probes while it polls, so the ones that do
//      not answer within min(timeout, 10 s) are named.
// Why not a watchdog thread around the blocking calls: it cannot name who did not arrive, and
// aborting from a second thread needs MPI_THREAD_MULTIPLE, which costs every call a lock.
// Polling spins on MPI_Testall as OpenMPI's blocking calls do, yielding the core after a few
// thousand polls so that oversubscribed ranks (more ranks than cores) make progress.
// Failure: a PeerFailure is thrown with the message; MPI cannot be finalised after it (requests
// are left pending on a peer that may never answer), so the first failure registers an exit
// handler that calls MPI_Abort: mpirun then ends every rank, the stopped one included, and exits
// non-zero. Cost, measured with bench/compare_collectives.sh: see mpi_communicator.h.
#include "common/dist/mpi_communicator.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"

#if VRAMLAB_HAVE_MPI
#include <mpi.h>

#include "common/dtype/convert.h"
#endif

namespace vramlab::dist {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

#if VRAMLAB_HAVE_MPI

namespace {

// The MPI objects this file makes once per process: a 2-byte datatype for bf16 and f16 (MPI has
// no 16-bit floats) and the sums over it, which round through f32 once per pairwise addition.
struct MpiTypes {
  MPI_Datatype half = MPI_DATATYPE_NULL;
  MPI_Op sum_bf16 = MPI_OP_NULL;
  MPI_Op sum_f16 = MPI_OP_NULL;
};
MpiTypes g_types;
bool g_we_initialised = false;
// Set by the first PeerFailure: MPI can no longer be finalised, only aborted (see the Note).
std::atomic<bool> g_failed{false};

void sum_bf16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);  // (len) bf16
  auto* b = static_cast<uint16_t*>(inout);           // (len) bf16
  for (int i = 0; i < *len; ++i)
    b[i] = f32_to_bf16_bits(bf16_bits_to_f32(a[i]) + bf16_bits_to_f32(b[i]));
}

void sum_f16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);  // (len) f16
  auto* b = static_cast<uint16_t*>(inout);           // (len) f16
  for (int i = 0; i < *len; ++i)
    b[i] = f32_to_f16_bits(f16_bits_to_f32(a[i]) + f16_bits_to_f32(b[i]));
}

std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

void abort_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Abort(MPI_COMM_WORLD, 1);
}

// Marks MPI as unusable and throws \p message as a PeerFailure. Every caller has printed nothing
// yet: the binary's main prints the one line, then the exit handler aborts the job.
[[noreturn]] void fail(const std::string& message) {
  if (!g_failed.exchange(true)) std::atexit(abort_at_exit);
  throw PeerFailure(message);
}

// Turns an MPI error code into our exceptions: a bad argument is the caller's (UsageError), any
// other failure (a truncated message, a lost peer, an internal error) a PeerFailure.
void check(int code, std::string_view call, int64_t rank, int64_t world_size) {
  if (code == MPI_SUCCESS) return;
  int error_class = MPI_ERR_OTHER;
  MPI_Error_class(code, &error_class);
  const std::string message = "mpi " + std::string(call) + " on rank " + std::to_string(rank) +
                              " of " + std::to_string(world_size) + ": " + error_text(code);
  switch (error_class) {
    case MPI_ERR_BUFFER:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_ROOT:
    case MPI_ERR_RANK:
    case MPI_ERR_OP:
    case MPI_ERR_ARG:
    case MPI_ERR_COMM:
      throw UsageError(message);
    default:
      fail(message);
  }
}

using Clock = std::chrono::steady_clock;

// VRAMLAB_COLLECTIVE_TIMEOUT: seconds a rank waits for its peers in one call (see the Note).
double collective_timeout_seconds() {
  constexpr double kDefaultSeconds = 300.0;
  const char* text = std::getenv("VRAMLAB_COLLECTIVE_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(seconds) || seconds <= 0.0 || seconds > 1e6)
    throw UsageError("VRAMLAB_COLLECTIVE_TIMEOUT=" + platform::printable(text) +
                     ": expected seconds in (0, 1e6]");
  return seconds;
}

// Polls \p requests until all complete (true) or \p deadline passes (false).
// Tags on the header communicator for the liveness probe of a call that did not complete (Note,
// phase 2) and its answer (tag 0 is the arrival headers').
constexpr int kProbeTag = 1;
constexpr int kAnswerTag = 2;
// The longest a rank waits for the answers to its liveness probe.
constexpr double kMaxProbeSeconds = 10.0;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The header of one call, compared between the ranks that take part (Note, phase 1).
struct CallHeader {
  int64_t call = 0;        // this communicator's call number, from 1
  int64_t collective = 0;  // Collective
  int64_t count = 0;       // elements per rank: n, or m for reduce_scatter and all_gather
  int64_t dtype = 0;       // DType
  int64_t root = 0;        // broadcast's root, send/recv's partner as seen by the sender
};
constexpr int kHeaderWords = 5;
static_assert(sizeof(CallHeader) == kHeaderWords * sizeof(int64_t));

std::string describe(const CallHeader& header) {
  const auto collective = static_cast<Collective>(header.collective);
  std::string text = std::string(collective_name(collective)) + " of " +
                     std::to_string(header.count) + " " +
                     std::string(dtype_name(static_cast<DType>(header.dtype)));
  if (collective == Collective::broadcast) text += " from root " + std::to_string(header.root);
  return text;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || g_failed) return;
  MPI_Op_free(&g_types.sum_bf16);
  MPI_Op_free(&g_types.sum_f16);
  MPI_Type_free(&g_types.half);
  MPI_Finalize();
}

// Initialises MPI unless the program already did (then the program finalises it too), and makes
// the 16-bit types once.
void ensure_initialised() {
  if (g_types.half != MPI_DATATYPE_NULL) return;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw UsageError("MPI_Init_thread failed: MPI cannot start in this process");
    if (provided < MPI_THREAD_FUNNELED)
      throw UsageError("MPI provides thread level " + std::to_string(provided) +
                       ", below MPI_THREAD_FUNNELED (" + std::to_string(MPI_THREAD_FUNNELED) + ")");
    g_we_initialised = true;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw UsageError("MPI was already finalised: no communicator can be made");
  MPI_Type_contiguous(2, MPI_BYTE, &g_types.half);
  MPI_Type_commit(&g_types.half);
  MPI_Op_create(sum_bf16, /*commute=*/1, &g_types.sum_bf16);
  MPI_Op_create(sum_f16, /*commute=*/1, &g_types.sum_f16);
  if (g_we_initialised) std::atexit(finalize_at_exit);
}

MPI_Datatype datatype_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f16:
    case DType::bf16:
      return g_types.half;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::u8:
      return MPI_UINT8_T;
    case DType::i8:
      return MPI_INT8_T;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
  }
  throw InternalError("no MPI datatype for dtype " + std::to_string(static_cast<int>(dtype)));
}

MPI_Op sum_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_SUM;
    case DType::bf16:
      return g_types.sum_bf16;
    case DType::f16:
      return g_types.sum_f16;
    default:
      throw InternalError("no MPI sum for dtype " + std::to_string(static_cast<int>(dtype)));
  }
}

// MPI 3.1 counts are int. All-reduce, broadcast and send/recv go in pieces of at most 2³¹ − 1
// elements (one piece, one call, for any buffer below 8 GiB of f32); reduce-scatter and all-gather
// cannot be cut that way, so their per-rank count must fit.
constexpr int64_t kMaxCount = std::numeric_limits<int>::max();

char* bytes_at(const TensorView& view, int64_t element) {
  return static_cast<char*>(view.data()) +
         element * static_cast<int64_t>(dtype_size_bytes(view.dtype()));
}

// The in-place forms pass one exact chunk; any other overlap would be read while it is written.
void require_apart_or_chunk(const TensorView& small, const TensorView& large, const char* chunk,
                            std::string_view call) {
  const char* a = static_cast<const char*>(small.data());
  const char* b = static_cast<const char*>(large.data());
  const bool overlap = a < b + large.bytes() && b < a + small.bytes();
  if (overlap && a != chunk)
    throw UsageError(std::string(call) + ": the " + std::to_string(small.numel()) +
                     "-element buffer overlaps the " + std::to_string(large.numel()) +
                     "-element one but is not this rank's chunk of it (the in-place form)");
}

}  // namespace

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm headers = MPI_COMM_NULL;  // a duplicate of comm for the arrival headers
  bool owned = false;                // made by split(), freed with the communicator
  double timeout_seconds = 300.0;
  int64_t calls = 0;
  int64_t rank = 0;
  int64_t world_size = 1;
  CallHeader current;         // the call in progress, for the data phase's message
  int64_t current_peer = -1;  // its partner (send/recv), or -1 for every rank

  void require_count(int64_t count, std::string_view call) const {
    if (count > kMaxCount)
      throw UsageError("mpi " + std::string(call) + ": " + std::to_string(count) +
                       " elements per rank exceed MPI's int count (2^31 - 1)");
  }

  void attach(MPI_Comm made, bool made_here) {
    comm = made;
    owned = made_here;
    // Errors come back as codes (turned into exceptions by check()) instead of aborting the job.
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_dup(comm, &headers);
    MPI_Comm_set_errhandler(headers, MPI_ERRORS_RETURN);
    int r = 0, size = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    rank = r;
    world_size = size;
    timeout_seconds = collective_timeout_seconds();
  }

  // Answers the liveness probes of ranks whose call did not complete: any rank polling is alive.
  void answer_probes() const {
    for (;;) {
      int waiting = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kProbeTag, headers, &waiting, &status);
      if (!waiting) return;
      int64_t call = 0;
      MPI_Recv(&call, 1, MPI_INT64_T, status.MPI_SOURCE, kProbeTag, headers, MPI_STATUS_IGNORE);
      MPI_Send(&call, 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, headers);  // 8 bytes: eager
    }
  }

  // Polls \p requests until all complete (true) or \p deadline passes (false), answering probes.
  // \p statuses: one per request, or MPI_STATUSES_IGNORE.
  bool wait_until(std::vector<MPI_Request>& requests, Clock::time_point deadline,
                  std::string_view call, MPI_Status* statuses = MPI_STATUSES_IGNORE) const {
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses), call,
            rank, world_size);
      if (done) return true;
      if (polls % 64 != 63) continue;
      answer_probes();
      if (Clock::now() > deadline) return false;
      if (polls > 4096) sched_yield();
    }
  }

  // The ranks among \p peers that do not answer a liveness probe within kMaxProbeSeconds (at
  // most the timeout): stopped, or busy outside any call. \return "rank 1, rank 3", or "".
  std::string silent_ranks(const std::vector<int64_t>& peers) const {
    std::vector<int64_t> answers(peers.size());  // (peers)
    std::vector<MPI_Request> requests(2 * peers.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < peers.size(); ++i) {
      MPI_Irecv(&answers[i], 1, MPI_INT64_T, static_cast<int>(peers[i]), kAnswerTag, headers,
                &requests[i]);
      MPI_Isend(&current.call, 1, MPI_INT64_T, static_cast<int>(peers[i]), kProbeTag, headers,
                &requests[peers.size() + i]);
    }
    const Clock::time_point deadline = after(std::min(timeout_seconds, kMaxProbeSeconds));
    for (int64_t polls = 0; Clock::now() < deadline; ++polls) {
      int done = 0;
      MPI_Testall(static_cast<int>(peers.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) return "";
      answer_probes();
      if (polls > 4096) sched_yield();
    }
    std::string silent;
    for (size_t i = 0; i < peers.size(); ++i) {
      int answered = 0;
      MPI_Test(&requests[i], &answered, MPI_STATUS_IGNORE);
      if (!answered) silent += (silent.empty() ? "rank " : ", rank ") + std::to_string(peers[i]);
    }
    return silent;
  }

  // The other ranks of the current call: one partner for send/recv, every other rank otherwise.
  [[nodiscard]] std::vector<int64_t> peers_of(int64_t peer) const {
    std::vector<int64_t> peers;
    for (int64_t r = 0; r < world_size; ++r)
      if (r != rank && (peer < 0 || r == peer)) peers.push_back(r);
    return peers;
  }

  [[nodiscard]] std::string where() const {
    return "on rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ", call #" +
           std::to_string(current.call);
  }

  // Phase 1 of the Note: exchanges headers with \p peer, or with every other rank when peer is
  // negative; names the ranks that did not arrive and any mismatched call.
  void arrive(Collective collective, int64_t count, DType dtype, int64_t root, int64_t peer) {
    current = {++calls, static_cast<int64_t>(collective), count, static_cast<int64_t>(dtype), root};
    std::vector<int64_t> peers;
    for (int64_t r = 0; r < world_size; ++r)
      if (r != rank && (peer < 0 || r == peer)) peers.push_back(r);
    if (peers.empty()) return;
    std::vector<CallHeader> theirs(peers.size());  // (peers) headers
    std::vector<MPI_Request> requests(2 * peers.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < peers.size(); ++i) {
      check(MPI_Irecv(&theirs[i], kHeaderWords, MPI_INT64_T, static_cast<int>(peers[i]), 0, headers,
                      &requests[i]),
            "MPI_Irecv (header)", rank, world_size);
      check(MPI_Isend(&current, kHeaderWords, MPI_INT64_T, static_cast<int>(peers[i]), 0, headers,
                      &requests[peers.size() + i]),
            "MPI_Isend (header)", rank, world_size);
    }
    if (!wait_until(requests, after(timeout_seconds), "header exchange")) {
      std::vector<int64_t> missing;
      for (size_t i = 0; i < peers.size(); ++i) {
        int arrived = 0;
        MPI_Test(&requests[i], &arrived, MPI_STATUS_IGNORE);
        if (!arrived) missing.push_back(peers[i]);
      }
      // A rank still inside an earlier call (its partner there stopped) is alive and answers;
      // the one that stopped does not, and is the one to name.
      const std::string silent = silent_ranks(missing);
      const std::string within =
          " did not arrive within " + seconds_text() + " s (VRAMLAB_COLLECTIVE_TIMEOUT)";
      if (!silent.empty())
        fail("mpi " + describe(current) + " " + where() + ": " + silent + within +
             " and did not answer a probe: stopped or hung");
      std::string named;
      for (const int64_t r : missing)
        named += (named.empty() ? "rank " : ", rank ") + std::to_string(r);
      if (named.empty()) named = "a rank that did not take this rank's header";
      fail("mpi " + describe(current) + " " + where() + ": " + named + within +
           " but answered a probe: waiting in another call");
    }
    for (size_t i = 0; i < peers.size(); ++i) {
      CallHeader expected = current;
      if (collective == Collective::send || collective == Collective::recv) {
        // The partner's call is the mirror of ours; both name the receiver as root.
        expected.collective = static_cast<int64_t>(
            collective == Collective::send ? Collective::recv : Collective::send);
      }
      const CallHeader& got = theirs[i];
      if (got.collective == expected.collective && got.count == expected.count &&
          got.dtype == expected.dtype && got.root == expected.root && got.call >= 1)
        continue;
      const bool known = got.collective >= 0 &&
                         got.collective < static_cast<int64_t>(kCollectiveCount) &&
                         got.dtype >= 0 && got.dtype <= static_cast<int64_t>(DType::i64);
      fail("mpi mismatched collective " + where() + ": this rank called " + describe(current) +
           ", rank " + std::to_string(peers[i]) + " called " +
           (known ? describe(got) : std::string("an unknown call")) + " (its call #" +
           std::to_string(got.call) + ")");
    }
  }

  // Phase 2 of the Note: waits for one non-blocking call started by \p call.
  void wait(MPI_Request request, std::string_view call) {
    wait_for_status(request, call, MPI_STATUS_IGNORE);
  }
  void wait_for_status(MPI_Request request, std::string_view call, MPI_Status* status) {
    std::vector<MPI_Request> requests{request};
    if (wait_until(requests, after(timeout_seconds), call, status)) return;
    std::string silent = silent_ranks(peers_of(current_peer));
    if (silent.empty())
      silent = "every rank answered a probe, so one is stuck in MPI itself";
    else
      silent += " did not answer (stopped, or busy outside any call)";
    fail("mpi " + describe(current) + " " + where() + ": " + std::string(call) +
         " did not complete within " + seconds_text() +
         " s (VRAMLAB_COLLECTIVE_TIMEOUT) although every rank had arrived; " + silent);
  }

  [[nodiscard]] std::string seconds_text() const {
    std::string text = std::to_string(timeout_seconds);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
    return text;
  }
};

MpiCommunicator::MpiCommunicator(int64_t rank, int64_t world_size, std::unique_ptr<Impl> impl)
    : Communicator(rank, world_size), impl_(std::move(impl)) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a failure requests may be pending on these communicators: the job is aborted instead.
  if (finalized || g_failed) return;
  MPI_Comm_free(&impl_->headers);
  if (impl_->owned) MPI_Comm_free(&impl_->comm);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  ensure_initialised();
  auto impl = std::make_unique<Impl>();
  impl->attach(MPI_COMM_WORLD, /*made_here=*/false);
  const int64_t rank = impl->rank, size = impl->world_size;
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size, std::move(impl)));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int64_t color, int64_t key) {
  if (color < 0 || color > kMaxCount)
    throw UsageError("split: color " + std::to_string(color) + " outside [0, 2^31 - 1]");
  if (key < std::numeric_limits<int>::min() || key > kMaxCount)
    throw UsageError("split: key " + std::to_string(key) + " does not fit MPI's int");
  auto impl = std::make_unique<Impl>();
  MPI_Comm made = MPI_COMM_NULL;
  check(MPI_Comm_split(impl_->comm, static_cast<int>(color), static_cast<int>(key), &made),
        "MPI_Comm_split", rank(), world_size());
  impl->attach(made, /*made_here=*/true);
  const int64_t group_rank = impl->rank, size = impl->world_size;
  std::unique_ptr<Communicator> group(new MpiCommunicator(group_rank, size, std::move(impl)));
  group->set_move_data(moves_data());  // a group of ranks on meta only counts too
  return group;
}

void MpiCommunicator::do_all_reduce(const TensorView& buffer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  const MPI_Op op = sum_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel(); first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    impl_->arrive(Collective::all_reduce, count, buffer.dtype(), 0, -1);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, bytes_at(buffer, first), count, type, op, impl_->comm,
                         &request),
          "MPI_Iallreduce", rank(), world_size());
    impl_->wait(request, "MPI_Iallreduce");
  }
}

void MpiCommunicator::do_reduce_scatter(const TensorView& input, const TensorView& output) {
  const int64_t m = output.numel();
  impl_->require_count(m, "reduce_scatter");
  const MPI_Datatype type = datatype_of(input.dtype());
  const MPI_Op op = sum_of(input.dtype());
  char* own_chunk = bytes_at(input, rank() * m);
  require_apart_or_chunk(output, input, own_chunk, "reduce_scatter");
  impl_->arrive(Collective::reduce_scatter, m, input.dtype(), 0, -1);
  MPI_Request request = MPI_REQUEST_NULL;
  if (output.data() == own_chunk) {
    // In place: MPI leaves the result at the start of the buffer, NCCL's convention (and ours)
    // wants it in chunk r.
    check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, input.data(), static_cast<int>(m), type, op,
                                    impl_->comm, &request),
          "MPI_Ireduce_scatter_block", rank(), world_size());
    impl_->wait(request, "MPI_Ireduce_scatter_block");
    if (rank() != 0) std::memmove(own_chunk, input.data(), static_cast<size_t>(output.bytes()));
    return;
  }
  check(MPI_Ireduce_scatter_block(input.data(), output.data(), static_cast<int>(m), type, op,
                                  impl_->comm, &request),
        "MPI_Ireduce_scatter_block", rank(), world_size());
  impl_->wait(request, "MPI_Ireduce_scatter_block");
}

void MpiCommunicator::do_all_gather(const TensorView& input, const TensorView& output) {
  const int64_t m = input.numel();
  impl_->require_count(m, "all_gather");
  const MPI_Datatype type = datatype_of(input.dtype());
  char* own_chunk = bytes_at(output, rank() * m);
  require_apart_or_chunk(input, output, own_chunk, "all_gather");
  impl_->arrive(Collective::all_gather, m, input.dtype(), 0, -1);
  MPI_Request request = MPI_REQUEST_NULL;
  if (input.data() == own_chunk) {
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, output.data(), static_cast<int>(m),
                         type, impl_->comm, &request),
          "MPI_Iallgather", rank(), world_size());
  } else {
    check(MPI_Iallgather(input.data(), static_cast<int>(m), type, output.data(),
                         static_cast<int>(m), type, impl_->comm, &request),
          "MPI_Iallgather", rank(), world_size());
  }
  impl_->wait(request, "MPI_Iallgather");
}

void MpiCommunicator::do_broadcast(const TensorView& buffer, int64_t root) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel(); first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    impl_->arrive(Collective::broadcast, count, buffer.dtype(), root, -1);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibcast(bytes_at(buffer, first), count, type, static_cast<int>(root), impl_->comm,
                     &request),
          "MPI_Ibcast", rank(), world_size());
    impl_->wait(request, "MPI_Ibcast");
  }
}

void MpiCommunicator::do_send(const TensorView& buffer, int64_t peer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel() || first == 0; first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    impl_->arrive(Collective::send, count, buffer.dtype(), peer, peer);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(bytes_at(buffer, first), count, type, static_cast<int>(peer), /*tag=*/0,
                    impl_->comm, &request),
          "MPI_Isend", rank(), world_size());
    impl_->wait(request, "MPI_Isend");
  }
}

void MpiCommunicator::do_recv(const TensorView& buffer, int64_t peer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  // A sender with more elements than the buffer fails with MPI_ERR_TRUNCATE; one with fewer is
  // no error to MPI, so the received count is checked here.
  for (int64_t first = 0; first < buffer.numel() || first == 0; first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    // The header check makes a size mismatch a PeerFailure before any data moves; the count
    // check below stays for the data itself.
    impl_->arrive(Collective::recv, count, buffer.dtype(), rank(), peer);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(bytes_at(buffer, first), count, type, static_cast<int>(peer), /*tag=*/0,
                    impl_->comm, &request),
          "MPI_Irecv", rank(), world_size());
    MPI_Status status;
    impl_->wait_for_status(request, "MPI_Irecv", &status);
    int received = 0;
    MPI_Get_count(&status, type, &received);
    if (received != count)
      throw PeerFailure("mpi recv on rank " + std::to_string(rank()) + ": rank " +
                        std::to_string(peer) + " sent " + std::to_string(received) +
                        " elements where " + std::to_string(count) + " were expected");
  }
}

void MpiCommunicator::do_barrier() {
  impl_->arrive(Collective::barrier, 0, DType::u8, 0, -1);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(impl_->comm, &request), "MPI_Ibarrier", rank(), world_size());
  impl_->wait(request, "MPI_Ibarrier");
}

#else  // !VRAMLAB_HAVE_MPI

struct MpiCommunicator::Impl {};

MpiCommunicator::MpiCommunicator(int64_t rank, int64_t world_size, std::unique_ptr<Impl> impl)
    : Communicator(rank, world_size), impl_(std::move(impl)) {}
MpiCommunicator::~MpiCommunicator() = default;

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  throw UsageError(
      "this vramlab was built without MPI (CMake found no MPI_CXX): install OpenMPI "
      "(libopenmpi-dev) and reconfigure to run ranks under mpirun");
}

// No MpiCommunicator can exist without MPI (world() throws), so nothing below is reachable.
std::unique_ptr<Communicator> MpiCommunicator::split(int64_t, int64_t) {
  throw InternalError("MpiCommunicator without MPI");
}
void MpiCommunicator::do_all_reduce(const TensorView&) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_reduce_scatter(const TensorView&, const TensorView&) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_all_gather(const TensorView&, const TensorView&) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_broadcast(const TensorView&, int64_t) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_send(const TensorView&, int64_t) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_recv(const TensorView&, int64_t) {
  throw InternalError("no MPI");
}
void MpiCommunicator::do_barrier() {
  throw InternalError("no MPI");
}

#endif  // VRAMLAB_HAVE_MPI

}  // namespace vramlab::dist
