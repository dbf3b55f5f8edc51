// MpiCommunicator: each collective is one MPI call on the communicator's MPI_Comm (see
// mpi_communicator.h). Built against OpenMPI when CMake found MPI (VRAMLAB_HAVE_MPI); without it
// world() says so, and launched_by_mpirun() still answers.
#include "common/dist/mpi_communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "common/platform/errors.h"

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
      throw PeerFailure(message);
  }
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
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
  bool owned = false;  // made by split(), freed with the communicator

  void require_count(int64_t count, std::string_view call) const {
    if (count > kMaxCount)
      throw UsageError("mpi " + std::string(call) + ": " + std::to_string(count) +
                       " elements per rank exceed MPI's int count (2^31 - 1)");
  }
};

MpiCommunicator::MpiCommunicator(int64_t rank, int64_t world_size, std::unique_ptr<Impl> impl)
    : Communicator(rank, world_size), impl_(std::move(impl)) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl_->owned && !finalized) MPI_Comm_free(&impl_->comm);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  ensure_initialised();
  auto impl = std::make_unique<Impl>();
  impl->comm = MPI_COMM_WORLD;
  // Errors come back as codes (turned into exceptions by check()) instead of aborting the job.
  MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(impl->comm, &rank);
  MPI_Comm_size(impl->comm, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size, std::move(impl)));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int64_t color, int64_t key) {
  if (color < 0 || color > kMaxCount)
    throw UsageError("split: color " + std::to_string(color) + " outside [0, 2^31 - 1]");
  if (key < std::numeric_limits<int>::min() || key > kMaxCount)
    throw UsageError("split: key " + std::to_string(key) + " does not fit MPI's int");
  auto impl = std::make_unique<Impl>();
  check(MPI_Comm_split(impl_->comm, static_cast<int>(color), static_cast<int>(key), &impl->comm),
        "MPI_Comm_split", rank(), world_size());
  impl->owned = true;
  MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(impl->comm, &rank);
  MPI_Comm_size(impl->comm, &size);
  return std::unique_ptr<Communicator>(new MpiCommunicator(rank, size, std::move(impl)));
}

void MpiCommunicator::do_all_reduce(const TensorView& buffer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  const MPI_Op op = sum_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel(); first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    check(MPI_Allreduce(MPI_IN_PLACE, bytes_at(buffer, first), count, type, op, impl_->comm),
          "MPI_Allreduce", rank(), world_size());
  }
}

void MpiCommunicator::do_reduce_scatter(const TensorView& input, const TensorView& output) {
  const int64_t m = output.numel();
  impl_->require_count(m, "reduce_scatter");
  const MPI_Datatype type = datatype_of(input.dtype());
  const MPI_Op op = sum_of(input.dtype());
  char* own_chunk = bytes_at(input, rank() * m);
  require_apart_or_chunk(output, input, own_chunk, "reduce_scatter");
  if (output.data() == own_chunk) {
    // In place: MPI leaves the result at the start of the buffer, NCCL's convention (and ours)
    // wants it in chunk r.
    check(MPI_Reduce_scatter_block(MPI_IN_PLACE, input.data(), static_cast<int>(m), type, op,
                                   impl_->comm),
          "MPI_Reduce_scatter_block", rank(), world_size());
    if (rank() != 0) std::memmove(own_chunk, input.data(), static_cast<size_t>(output.bytes()));
    return;
  }
  check(MPI_Reduce_scatter_block(input.data(), output.data(), static_cast<int>(m), type, op,
                                 impl_->comm),
        "MPI_Reduce_scatter_block", rank(), world_size());
}

void MpiCommunicator::do_all_gather(const TensorView& input, const TensorView& output) {
  const int64_t m = input.numel();
  impl_->require_count(m, "all_gather");
  const MPI_Datatype type = datatype_of(input.dtype());
  char* own_chunk = bytes_at(output, rank() * m);
  require_apart_or_chunk(input, output, own_chunk, "all_gather");
  if (input.data() == own_chunk) {
    check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, output.data(), static_cast<int>(m),
                        type, impl_->comm),
          "MPI_Allgather", rank(), world_size());
    return;
  }
  check(MPI_Allgather(input.data(), static_cast<int>(m), type, output.data(), static_cast<int>(m),
                      type, impl_->comm),
        "MPI_Allgather", rank(), world_size());
}

void MpiCommunicator::do_broadcast(const TensorView& buffer, int64_t root) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel(); first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    check(MPI_Bcast(bytes_at(buffer, first), count, type, static_cast<int>(root), impl_->comm),
          "MPI_Bcast", rank(), world_size());
  }
}

void MpiCommunicator::do_send(const TensorView& buffer, int64_t peer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  for (int64_t first = 0; first < buffer.numel() || first == 0; first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    check(MPI_Send(bytes_at(buffer, first), count, type, static_cast<int>(peer), /*tag=*/0,
                   impl_->comm),
          "MPI_Send", rank(), world_size());
  }
}

void MpiCommunicator::do_recv(const TensorView& buffer, int64_t peer) {
  const MPI_Datatype type = datatype_of(buffer.dtype());
  // A sender with more elements than the buffer fails with MPI_ERR_TRUNCATE; one with fewer is
  // no error to MPI, so the received count is checked here.
  for (int64_t first = 0; first < buffer.numel() || first == 0; first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, buffer.numel() - first));
    MPI_Status status;
    check(MPI_Recv(bytes_at(buffer, first), count, type, static_cast<int>(peer), /*tag=*/0,
                   impl_->comm, &status),
          "MPI_Recv", rank(), world_size());
    int received = 0;
    MPI_Get_count(&status, type, &received);
    if (received != count)
      throw PeerFailure("mpi recv on rank " + std::to_string(rank()) + ": rank " +
                        std::to_string(peer) + " sent " + std::to_string(received) +
                        " elements where " + std::to_string(count) + " were expected");
  }
}

void MpiCommunicator::do_barrier() {
  check(MPI_Barrier(impl_->comm), "MPI_Barrier", rank(), world_size());
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
