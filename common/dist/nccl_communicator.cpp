// NcclCommunicator: one NCCL call per collective on the communicator's stream, waited for before
// returning (see nccl_communicator.h). Compiled only with VRAMLAB_HAVE_NCCL.
#include "common/dist/nccl_communicator.h"

#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/cuda/stream.h"
#include "common/platform/errors.h"

namespace vramlab::dist {

namespace {

// A bad argument or use is the caller's (UsageError); anything else (a system or CUDA error, a
// remote peer's failure) a PeerFailure. NCCL's last-error text says which peer when it knows.
void check(ncclResult_t result, const char* call, ncclComm_t comm, int64_t rank) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  const char* detail = ncclGetLastError(comm);
  const std::string message = std::string("nccl ") + call + " on rank " + std::to_string(rank) +
                              ": " + ncclGetErrorString(result) +
                              (detail && *detail ? std::string(" (") + detail + ")" : "");
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) throw UsageError(message);
  throw PeerFailure(message);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::u8:
      return ncclUint8;  // moved, never summed (Communicator checks)
    case DType::i8:
      return ncclInt8;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
  }
  throw InternalError("no NCCL type for dtype " + std::to_string(static_cast<int>(dtype)));
}

size_t count_of(const TensorView& view) {
  return static_cast<size_t>(view.numel());
}

int64_t default_device(int64_t bootstrap_rank) {
  int devices = 0;
  cuda_runtime::check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw UsageError("NcclCommunicator: no CUDA device on this node");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int64_t local_rank = local ? std::atoll(local) : bootstrap_rank;
  return local_rank % devices;
}

}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  std::shared_ptr<cuda_runtime::Stream> owned_stream;  // shared with the splits made from it
  float* barrier_scratch = nullptr;                    // (1) f32 on the device

  ~Impl() {
    if (barrier_scratch) cudaFree(barrier_scratch);
    if (comm) ncclCommDestroy(comm);
  }
};

NcclCommunicator::NcclCommunicator(int64_t rank, int64_t world_size, int64_t device,
                                   cudaStream_t stream, std::unique_ptr<Impl> impl)
    : Communicator(rank, world_size), device_(device), stream_(stream), impl_(std::move(impl)) {
  cuda_runtime::check_cuda(cudaMalloc(&impl_->barrier_scratch, sizeof(float)), "cudaMalloc");
}

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, int64_t device, cudaStream_t stream)
    : Communicator(bootstrap.rank(), bootstrap.world_size()), impl_(std::make_unique<Impl>()) {
  if (!bootstrap.moves_data())
    throw UsageError(
        "NcclCommunicator: the bootstrap communicator only counts (meta), it cannot "
        "carry the ncclUniqueId");
  device_ = device < 0 ? default_device(bootstrap.rank()) : device;
  int devices = 0;
  cuda_runtime::check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (device_ >= devices)
    throw UsageError("NcclCommunicator: device " + std::to_string(device_) + " outside [0, " +
                     std::to_string(devices) + ")");
  cuda_runtime::check_cuda(cudaSetDevice(static_cast<int>(device_)), "cudaSetDevice");
  if (stream == nullptr) {
    impl_->owned_stream = std::make_shared<cuda_runtime::Stream>();
    stream = impl_->owned_stream->get();
  }
  stream_ = stream;

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (bootstrap.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr, rank());
  bootstrap.broadcast(TensorView(id.internal, DType::u8, {NCCL_UNIQUE_ID_BYTES}), 0,
                      Traffic::other);
  check(
      ncclCommInitRank(&impl_->comm, static_cast<int>(world_size()), id, static_cast<int>(rank())),
      "ncclCommInitRank", nullptr, rank());
  cuda_runtime::check_cuda(cudaMalloc(&impl_->barrier_scratch, sizeof(float)), "cudaMalloc");
}

NcclCommunicator::~NcclCommunicator() = default;

std::unique_ptr<Communicator> NcclCommunicator::split(int64_t color, int64_t key) {
  if (color < 0 || color > std::numeric_limits<int>::max())
    throw UsageError("split: color " + std::to_string(color) + " outside [0, 2^31 - 1]");
  if (key < std::numeric_limits<int>::min() || key > std::numeric_limits<int>::max())
    throw UsageError("split: key " + std::to_string(key) + " does not fit NCCL's int");
  auto impl = std::make_unique<Impl>();
  impl->owned_stream = impl_->owned_stream;
  check(ncclCommSplit(impl_->comm, static_cast<int>(color), static_cast<int>(key), &impl->comm,
                      nullptr),
        "ncclCommSplit", impl_->comm, rank());
  int new_rank = 0, new_size = 0;
  check(ncclCommUserRank(impl->comm, &new_rank), "ncclCommUserRank", impl->comm, rank());
  check(ncclCommCount(impl->comm, &new_size), "ncclCommCount", impl->comm, rank());
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(new_rank, new_size, device_, stream_, std::move(impl)));
}

void NcclCommunicator::group(const std::function<void()>& calls) {
  if (in_group_) throw UsageError("NcclCommunicator::group: groups do not nest");
  check(ncclGroupStart(), "ncclGroupStart", impl_->comm, rank());
  in_group_ = true;
  try {
    calls();
  } catch (...) {
    in_group_ = false;
    ncclGroupEnd();
    throw;
  }
  in_group_ = false;
  check(ncclGroupEnd(), "ncclGroupEnd", impl_->comm, rank());
  complete("group");
}

void NcclCommunicator::complete(const char* call) {
  if (in_group_) return;
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) {
    // A peer's failure surfaces as an asynchronous NCCL error; name it rather than CUDA's.
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(impl_->comm, &async);
    if (async != ncclSuccess) check(async, call, impl_->comm, rank());
    cuda_runtime::check_cuda(status, call);
  }
}

void NcclCommunicator::do_all_reduce(const TensorView& buffer) {
  check(ncclAllReduce(buffer.data(), buffer.data(), count_of(buffer), nccl_type(buffer.dtype()),
                      ncclSum, impl_->comm, stream_),
        "ncclAllReduce", impl_->comm, rank());
  complete("ncclAllReduce");
}

void NcclCommunicator::do_reduce_scatter(const TensorView& input, const TensorView& output) {
  // In place when output is chunk r of input: NCCL's own convention, nothing to move.
  check(ncclReduceScatter(input.data(), output.data(), count_of(output), nccl_type(input.dtype()),
                          ncclSum, impl_->comm, stream_),
        "ncclReduceScatter", impl_->comm, rank());
  complete("ncclReduceScatter");
}

void NcclCommunicator::do_all_gather(const TensorView& input, const TensorView& output) {
  check(ncclAllGather(input.data(), output.data(), count_of(input), nccl_type(input.dtype()),
                      impl_->comm, stream_),
        "ncclAllGather", impl_->comm, rank());
  complete("ncclAllGather");
}

void NcclCommunicator::do_broadcast(const TensorView& buffer, int64_t root) {
  check(ncclBroadcast(buffer.data(), buffer.data(), count_of(buffer), nccl_type(buffer.dtype()),
                      static_cast<int>(root), impl_->comm, stream_),
        "ncclBroadcast", impl_->comm, rank());
  complete("ncclBroadcast");
}

void NcclCommunicator::do_send(const TensorView& buffer, int64_t peer) {
  check(ncclSend(buffer.data(), count_of(buffer), nccl_type(buffer.dtype()), static_cast<int>(peer),
                 impl_->comm, stream_),
        "ncclSend", impl_->comm, rank());
  complete("ncclSend");
}

void NcclCommunicator::do_recv(const TensorView& buffer, int64_t peer) {
  check(ncclRecv(buffer.data(), count_of(buffer), nccl_type(buffer.dtype()), static_cast<int>(peer),
                 impl_->comm, stream_),
        "ncclRecv", impl_->comm, rank());
  complete("ncclRecv");
}

void NcclCommunicator::do_barrier() {
  // NCCL has no barrier: a one-element all-reduce every rank must join, waited for.
  check(ncclAllReduce(impl_->barrier_scratch, impl_->barrier_scratch, 1, ncclFloat32, ncclSum,
                      impl_->comm, stream_),
        "ncclAllReduce (barrier)", impl_->comm, rank());
  complete("barrier");
}

}  // namespace vramlab::dist
