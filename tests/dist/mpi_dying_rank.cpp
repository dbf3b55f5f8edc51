// A rank that dies in the middle of a training-like loop of all-reduces: rank 1 kills itself
// (SIGKILL, as the kernel's out-of-memory killer would) at iteration 50 while the others are
// inside, or about to enter, the next all-reduce. Run by run_dying_rank.sh under mpirun, which
// must end the whole job, name rank 1 and leave no process behind; nothing here tries to survive.
//
// MpiCommunicator::world() initialises MPI itself here (the test binaries' main does it for them),
// so this also runs the path where vramlab owns MPI's lifetime.
#include <csignal>
#include <cstdio>
#include <exception>
#include <vector>

#include "common/dist/mpi_communicator.h"

int main() {
  using namespace vramlab::dist;
  try {
    const auto comm = MpiCommunicator::world();
    std::vector<float> gradients(1 << 16, 1.0f);  // (65536) f32
    const TensorView view(gradients.data(), vramlab::DType::f32, {1 << 16});
    for (int step = 0; step < 100000; ++step) {
      if (comm->rank() == 1 && step == 50) {
        std::printf("rank 1: killing itself at step %d\n", step);
        std::fflush(stdout);
        std::raise(SIGKILL);
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
