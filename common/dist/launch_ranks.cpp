// Starting the ranks of a run (see launch_ranks.h).
#include "common/dist/launch_ranks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "common/dist/mpi_communicator.h"
#include "common/dist/simulated_communicator.h"
#include "common/memory/tensor_view.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"

namespace vramlab::dist {

namespace {

// Splits the rank's groups from the world (file comment of launch_ranks.h) and calls fn.
void run_rank(Communicator& world, int64_t tensor_parallel,
              const std::function<void(const LaunchedRank&)>& fn) {
  LaunchedRank rank;
  rank.world = &world;
  rank.rank = world.rank();
  rank.world_size = world.world_size();
  std::unique_ptr<Communicator> tensor_group, data_group;  // kept alive while fn runs
  if (tensor_parallel == 1) {
    rank.groups.data_parallel = &world;
  } else {
    // Every rank splits both, in the same order: a split is a collective of the world.
    tensor_group = world.split(world.rank() / tensor_parallel, world.rank());
    data_group = world.split(world.rank() % tensor_parallel, world.rank());
    rank.groups = {data_group.get(), tensor_group.get()};
  }
  fn(rank);
}

}  // namespace

int64_t launched_world_size(const LaunchSpec& spec) {
  if (spec.simulate_ranks < 0)
    throw UsageError("simulated ranks must be >= 0, got " + std::to_string(spec.simulate_ranks));
  int64_t world_size = 1;
  if (spec.simulate_ranks > 0) {
    world_size = spec.simulate_ranks;
  } else if (launched_by_mpirun()) {
    world_size =
        std::max<int64_t>(1, std::strtoll(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr, 10));
  }
  if (spec.tensor_parallel < 1 || world_size % spec.tensor_parallel != 0)
    throw UsageError("--tp " + std::to_string(spec.tensor_parallel) +
                     " must be >= 1 and divide the " + std::to_string(world_size) + " ranks");
  return world_size;
}

void launch_ranks(const LaunchSpec& spec, const std::function<void(const LaunchedRank&)>& fn) {
  (void)launched_world_size(spec);
  if (spec.simulate_ranks > 0) {
    // The world moves data and each rank's communicator only counts when asked, so that
    // all_gather_values can still move what a report needs.
    run_simulated_ranks(spec.simulate_ranks, true, [&](Communicator& world) {
      world.set_move_data(!spec.count_only);
      run_rank(world, spec.tensor_parallel, fn);
    });
    return;
  }
  if (launched_by_mpirun()) {
    // Throws a UsageError naming the missing library in a build without MPI.
    const std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
    world->set_move_data(!spec.count_only);
    run_rank(*world, spec.tensor_parallel, fn);
    return;
  }
  fn(LaunchedRank{});
}

std::vector<int64_t> all_gather_values(const LaunchedRank& rank, std::vector<int64_t> values) {
  if (rank.world == nullptr) return values;
  const auto count = static_cast<int64_t>(values.size());
  std::vector<int64_t> all(values.size() * static_cast<size_t>(rank.world_size));  // (W·count)
  const bool moved = rank.world->moves_data();
  rank.world->set_move_data(true);
  rank.world->all_gather(memory::TensorView(values.data(), DType::i64, {count}),
                         memory::TensorView(all.data(), DType::i64, {std::ssize(all)}),
                         Traffic::other);
  rank.world->set_move_data(moved);
  return all;
}

std::vector<std::string> gather_to_rank0(const LaunchedRank& rank, std::string text) {
  if (rank.world == nullptr) return {std::move(text)};
  Communicator& world = *rank.world;
  const bool moved = world.moves_data();
  world.set_move_data(true);
  std::vector<std::string> all;
  if (rank.rank != 0) {
    std::vector<int64_t> size = {std::ssize(text)};  // (1)
    world.send(memory::TensorView(size.data(), DType::i64, {1}), 0, Traffic::other);
    world.send(memory::TensorView(text.data(), DType::u8, {size[0]}), 0, Traffic::other);
  } else {
    all.push_back(std::move(text));
    for (int64_t peer = 1; peer < rank.world_size; ++peer) {
      std::vector<int64_t> size(1);  // (1)
      world.recv(memory::TensorView(size.data(), DType::i64, {1}), peer, Traffic::other);
      std::string peer_text(static_cast<size_t>(size[0]), '\0');  // (size) u8
      world.recv(memory::TensorView(peer_text.data(), DType::u8, {size[0]}), peer, Traffic::other);
      all.push_back(std::move(peer_text));
    }
  }
  world.set_move_data(moved);
  return all;
}

int64_t launched_rank() {
  if (!launched_by_mpirun()) return 0;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank == nullptr ? 0 : std::max<int64_t>(0, std::strtoll(rank, nullptr, 10));
}

bool mpirun_usable() {
  return build_info::kHaveMpi && build_info::kMpiexec[0] != '\0' &&
         ::access(build_info::kMpiexec, X_OK) == 0;
}

void exec_under_mpirun(int argc, char** argv, int64_t ranks, bool colour) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return;
  std::vector<std::string> args = {build_info::kMpiexec};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  args.insert(args.end(), {"--oversubscribe", "-np", std::to_string(ranks), "-x",
                           "OMP_NUM_THREADS=1", "-x", "OMP_WAIT_POLICY=PASSIVE"});
  if (!colour) {
    ::setenv("NO_COLOR", "1", 1);
    args.insert(args.end(), {"-x", "NO_COLOR"});
  }
  args.push_back(self.string());
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(build_info::kMpiexec, raw.data());
}

}  // namespace vramlab::dist
