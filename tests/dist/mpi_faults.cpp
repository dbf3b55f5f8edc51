// Faults across ranks under mpirun, one per job (run_fault.sh checks what follows): a training-like
// loop of all-reduces in which rank 1, at step 50, does one of (a rank killed: mpi_dying_rank.cpp)
//   stop       SIGSTOP itself (a rank that stops answering): the others' watchdog names rank 1
//   sleep      sleep forever inside the step (a hung rank), likewise
//   collective call all_gather where the others call all_reduce (a mismatched collective)
//   size       all-reduce one element more than the others (a mismatched size)
//   recv-size  (with rank 0) receive 7 elements where rank 0 sends 5 (a mismatched send/recv)
// Every other rank must end non-zero within 30 s with a message naming rank 1 (or the mismatch)
// and the collective; nothing here tries to survive, and no process may be left.
//
// usage: mpi_faults MODE   (VRAMLAB_COLLECTIVE_TIMEOUT sets the watchdog's seconds)
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/dist/mpi_communicator.h"

int main(int argc, char** argv) {
  using namespace vramlab::dist;
  using vramlab::DType;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "stop" && mode != "sleep" && mode != "collective" && mode != "size" &&
      mode != "recv-size") {
    std::fprintf(stderr, "usage: mpi_faults stop|sleep|collective|size|recv-size\n");
    return 2;
  }
  try {
    const auto comm = MpiCommunicator::world();
    // The driver checks that these processes are gone afterwards.
    std::printf("rank %lld pid %ld\n", static_cast<long long>(comm->rank()),
                static_cast<long>(getpid()));
    std::fflush(stdout);
    comm->barrier();
    constexpr int64_t n = 1 << 16;
    std::vector<float> gradients(n + 1, 1.0f);  // (n + 1) f32
    std::vector<float> gathered(static_cast<size_t>(n) * static_cast<size_t>(comm->world_size()));
    // (N·n) f32
    const TensorView view(gradients.data(), DType::f32, {n});
    for (int step = 0; step < 100000; ++step) {
      if (comm->rank() == 1 && step == 50) {
        std::printf("rank 1: fault '%s' at step %d\n", mode.c_str(), step);
        std::fflush(stdout);
        if (mode == "stop") std::raise(SIGSTOP);
        if (mode == "sleep")
          for (;;) pause();
        if (mode == "collective") {
          comm->all_gather(view, TensorView(gathered.data(), DType::f32, {n * comm->world_size()}),
                           Traffic::parameters);
          continue;
        }
        if (mode == "size") {
          comm->all_reduce(TensorView(gradients.data(), DType::f32, {n + 1}), Traffic::gradients);
          continue;
        }
      }
      if (mode == "recv-size" && step == 50 && comm->rank() <= 1) {
        if (comm->rank() == 0)
          comm->send(TensorView(gradients.data(), DType::f32, {5}), 1, Traffic::other);
        else
          comm->recv(TensorView(gradients.data(), DType::f32, {7}), 0, Traffic::other);
      }
      comm->all_reduce(view, Traffic::gradients);
    }
    std::printf("rank %lld: finished every step, which it must not\n",
                static_cast<long long>(comm->rank()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
