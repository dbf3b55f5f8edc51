// NcclCommunicator under `mpirun -np 2` with one GPU per rank (tests/dist/CMakeLists.txt runs it;
// mpi_test_main.cpp is its main and reports a skip, exit 77, on machines without GPUs). Data are
// made on the host as collective_checks.h describes, copied to the device, moved by NCCL, copied
// back and checked: sums against one rounding per pairwise addition (NCCL's bf16 and f16 sums
// round no more often), copies bit for bit, byte counters against ring_bytes_*.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/dist/mpi_communicator.h"
#include "common/dist/nccl_communicator.h"
#include "common/platform/errors.h"
#include "tests/dist/collective_checks.h"

namespace vramlab::dist {
namespace {

using namespace vramlab::dist::checks;  // NOLINT: the shared checks
using cuda_runtime::check_cuda;

NcclCommunicator& nccl() {
  static const std::unique_ptr<MpiCommunicator> bootstrap = MpiCommunicator::world();
  static const std::unique_ptr<NcclCommunicator> comm =
      std::make_unique<NcclCommunicator>(*bootstrap);
  return *comm;
}

// A device copy of a HostBuffer (cudaMalloc'd on the communicator's device).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(HostBuffer& host, DType dtype, int64_t numel)
      : host_(host), dtype_(dtype), numel_(numel) {
    check_cuda(cudaMalloc(&data_, host.size_bytes() > 0 ? host.size_bytes() : 1), "cudaMalloc");
    check_cuda(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice),
               "cudaMemcpy to the device");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] TensorView view() const { return TensorView(data_, dtype_, {numel_}); }
  [[nodiscard]] TensorView slice(int64_t first, int64_t count) const {
    return view().slice(first, {count});
  }
  // Copies the device's bytes back into the host buffer, for the checks.
  void download() {
    check_cuda(cudaMemcpy(host_.data(), data_, host_.size_bytes(), cudaMemcpyDeviceToHost),
               "cudaMemcpy to the host");
  }

 private:
  HostBuffer& host_;
  DType dtype_;
  int64_t numel_;
  void* data_ = nullptr;
};

constexpr DType kSummable[] = {DType::f32, DType::bf16, DType::f16};
constexpr int64_t kSizes[] = {1, 7, 1000003};
constexpr int64_t kChunkSizes[] = {1, 7, 333331};

int64_t element_bytes(DType dtype) {
  return static_cast<int64_t>(dtype_size_bytes(dtype));
}

TEST(NcclCommunicator, AllReduceSumsEveryRanksData) {
  NcclCommunicator& comm = nccl();
  EXPECT_EQ(comm.backend(), "nccl");
  uint64_t seed = 1100;
  for (DType dtype : kSummable)
    for (int64_t n : kSizes) {
      HostBuffer host(dtype, n);  // (n) dtype
      host.fill(++seed, comm.rank());
      DeviceBuffer device(host, dtype, n);
      const CommunicationStats before = comm.stats();
      comm.all_reduce(device.view(), Traffic::gradients);
      device.download();
      EXPECT_TRUE(counted(comm, before, Collective::all_reduce, Traffic::gradients, n,
                          element_bytes(dtype)));
      EXPECT_TRUE(sums_match(host, dtype, 0, n, 0, seed, all_ranks(comm.world_size())));
    }
}

TEST(NcclCommunicator, ReduceScatterOutOfPlaceAndInPlace) {
  NcclCommunicator& comm = nccl();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 1200;
  for (DType dtype : kSummable)
    for (int64_t m : kChunkSizes) {
      HostBuffer input(dtype, N * m);  // (N·m) dtype
      HostBuffer output(dtype, m);     // (m) dtype
      input.fill(++seed, r);
      DeviceBuffer device_input(input, dtype, N * m), device_output(output, dtype, m);
      const CommunicationStats before = comm.stats();
      comm.reduce_scatter(device_input.view(), device_output.view(), Traffic::gradients);
      device_output.download();
      EXPECT_TRUE(counted(comm, before, Collective::reduce_scatter, Traffic::gradients, N * m,
                          element_bytes(dtype)));
      EXPECT_TRUE(sums_match(output, dtype, 0, m, r * m, seed, all_ranks(N)));
      // In place: the output is chunk r of the input.
      comm.reduce_scatter(device_input.view(), device_input.slice(r * m, m), Traffic::gradients);
      device_input.download();
      EXPECT_TRUE(sums_match(input, dtype, r * m, m, r * m, seed, all_ranks(N)));
    }
}

TEST(NcclCommunicator, AllGatherOutOfPlaceAndInPlace) {
  NcclCommunicator& comm = nccl();
  const int64_t N = comm.world_size(), r = comm.rank();
  uint64_t seed = 1300;
  for (DType dtype : {DType::f32, DType::bf16, DType::u8, DType::i64})
    for (int64_t m : kChunkSizes) {
      HostBuffer input(dtype, m);       // (m) dtype
      HostBuffer output(dtype, N * m);  // (N·m) dtype
      input.fill(++seed, r);
      DeviceBuffer device_input(input, dtype, m), device_output(output, dtype, N * m);
      const CommunicationStats before = comm.stats();
      comm.all_gather(device_input.view(), device_output.view(), Traffic::parameters);
      device_output.download();
      EXPECT_TRUE(counted(comm, before, Collective::all_gather, Traffic::parameters, N * m,
                          element_bytes(dtype)));
      for (int64_t q = 0; q < N; ++q)
        EXPECT_TRUE(copies_match(output, dtype, q * m, m, 0, seed, q)) << "chunk " << q;
      // In place: the input is chunk r of the output.
      HostBuffer gathered(dtype, N * m);  // (N·m) dtype
      gathered.fill(seed, r, r * m, m, 0);
      DeviceBuffer device_gathered(gathered, dtype, N * m);
      comm.all_gather(device_gathered.slice(r * m, m), device_gathered.view(), Traffic::parameters);
      device_gathered.download();
      for (int64_t q = 0; q < N; ++q)
        EXPECT_TRUE(copies_match(gathered, dtype, q * m, m, 0, seed, q)) << "chunk " << q;
    }
}

TEST(NcclCommunicator, BroadcastFromEveryRoot) {
  NcclCommunicator& comm = nccl();
  uint64_t seed = 1400;
  for (DType dtype : {DType::f32, DType::f16, DType::i32})
    for (int64_t n : kSizes)
      for (int64_t root = 0; root < comm.world_size(); ++root) {
        HostBuffer host(dtype, n);  // (n) dtype
        host.fill(++seed, comm.rank());
        DeviceBuffer device(host, dtype, n);
        const CommunicationStats before = comm.stats();
        comm.broadcast(device.view(), root, Traffic::other);
        device.download();
        EXPECT_TRUE(counted(comm, before, Collective::broadcast, Traffic::other, n,
                            element_bytes(dtype), root));
        EXPECT_TRUE(copies_match(host, dtype, 0, n, 0, seed, root)) << "root " << root;
      }
}

TEST(NcclCommunicator, SendRecvAroundTheRingOneByOneAndAsAGroup) {
  NcclCommunicator& comm = nccl();
  const int64_t N = comm.world_size(), r = comm.rank();
  if (N < 2) GTEST_SKIP() << "send/recv needs two ranks";
  const int64_t next = (r + 1) % N, previous = (r + N - 1) % N;
  uint64_t seed = 1500;
  for (bool grouped : {false, true})
    for (int64_t n : kSizes) {
      HostBuffer outgoing(DType::bf16, n), incoming(DType::bf16, n);  // (n) bf16 each
      outgoing.fill(++seed, r);
      DeviceBuffer device_out(outgoing, DType::bf16, n), device_in(incoming, DType::bf16, n);
      const CommunicationStats before = comm.stats();
      if (grouped) {
        // Everyone sends and receives at once: only a group makes that safe.
        comm.group([&] {
          comm.send(device_out.view(), next, Traffic::activations);
          comm.recv(device_in.view(), previous, Traffic::activations);
        });
      } else if (r % 2 == 0) {
        comm.send(device_out.view(), next, Traffic::activations);
        comm.recv(device_in.view(), previous, Traffic::activations);
      } else {
        comm.recv(device_in.view(), previous, Traffic::activations);
        comm.send(device_out.view(), next, Traffic::activations);
      }
      device_in.download();
      EXPECT_TRUE(counted(comm, before, Collective::send, Traffic::activations, n, 2));
      EXPECT_TRUE(counted(comm, before, Collective::recv, Traffic::activations, n, 2));
      EXPECT_TRUE(copies_match(incoming, DType::bf16, 0, n, 0, seed, previous))
          << (grouped ? "grouped" : "one by one");
    }
  EXPECT_THROW(comm.group([&] { comm.group([] {}); }), UsageError);
}

TEST(NcclCommunicator, SplitIntoTwoColoursSumsWithinEach) {
  NcclCommunicator& comm = nccl();
  const int64_t N = comm.world_size(), r = comm.rank();
  std::vector<int64_t> members;
  for (int64_t q = N - 1; q >= 0; --q)
    if (q % 2 == r % 2) members.push_back(q);
  const std::unique_ptr<Communicator> group = comm.split(r % 2, -r);
  EXPECT_EQ(group->world_size(), static_cast<int64_t>(members.size()));
  EXPECT_EQ(group->backend(), "nccl");
  HostBuffer host(DType::f32, 1000003);  // (1000003) f32
  host.fill(1600, r);
  DeviceBuffer device(host, DType::f32, 1000003);
  group->all_reduce(device.view(), Traffic::activations);
  device.download();
  EXPECT_TRUE(sums_match(host, DType::f32, 0, 1000003, 0, 1600, members));
  EXPECT_EQ(group->stats().of(Collective::all_reduce).calls, 1);
  EXPECT_THROW((void)comm.split(-1, 0), UsageError);
}

TEST(NcclCommunicator, BarrierAndCountOnlyCalls) {
  NcclCommunicator& comm = nccl();
  CommunicationStats before = comm.stats();
  comm.barrier();
  EXPECT_TRUE(counted(comm, before, Collective::barrier, Traffic::other, 0, 0));
  comm.set_move_data(false);
  const int64_t big = int64_t{5} << 31;  // no storage behind it: only counted
  before = comm.stats();
  comm.all_reduce(TensorView(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::bf16, {big}),
                  Traffic::gradients);
  EXPECT_TRUE(counted(comm, before, Collective::all_reduce, Traffic::gradients, big, 2));
  comm.set_move_data(true);
}

}  // namespace
}  // namespace vramlab::dist
