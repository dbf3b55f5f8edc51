// The GoogleTest main of MPI test binaries: every rank runs every test; rank 0 prints GoogleTest's
// usual output, the other ranks print only their failures, each line naming the rank; every rank
// exits non-zero when any rank failed (so mpirun and ctest see it whichever rank it was).
//
// MPI is initialised here, before any MpiCommunicator::world(), so the tests also cover a program
// that owns MPI's lifetime itself (world() must then neither initialise nor finalise it).
//
// Built with VRAMLAB_MPI_TEST_NEEDS_GPUS (the NCCL tests), every rank first probes for a GPU of
// its own; unless all have one, every rank exits 77, which ctest reports as skipped (never as
// passed), and rank 0 says why.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#if VRAMLAB_MPI_TEST_NEEDS_GPUS
#include "common/platform/gpu_probe.h"
#endif

namespace {

// Prints a non-zero rank's failed assertions, one line each, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // Kept from OnTestStart: UnitTest::current_test_info() would take the lock GoogleTest holds
  // while it reports a result, and deadlock.
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] FAILED %s at %s:%d\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#if VRAMLAB_MPI_TEST_NEEDS_GPUS
  {
    const vramlab::platform::GpuProbe probe = vramlab::platform::probe_gpus();
    const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const long needed = local_size ? std::atol(local_size) : 1;
    const int usable = probe.status == vramlab::platform::GpuStatus::available &&
                               static_cast<long>(probe.devices.size()) >= needed
                           ? 1
                           : 0;
    int everywhere = 0;
    MPI_Allreduce(&usable, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {
      if (rank == 0)
        std::printf(
            "SKIPPED: these tests need one GPU per rank (%ld on this node); the probe "
            "says: %s (%s), %zu device(s)\n",
            needed, vramlab::platform::gpu_status_name(probe.status), probe.detail.c_str(),
            probe.devices.size());
      MPI_Finalize();
      return 77;
    }
  }
#endif
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int failed_here = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int failed_anywhere = 0;
  MPI_Allreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && failed_anywhere && !failed_here)
    std::fprintf(stderr, "FAILED on another rank (its lines start with [rank N])\n");
  MPI_Finalize();
  return failed_anywhere;
}
