// Our MpiCommunicator's collectives beside the plain MPI calls they wrap, interleaved in one run:
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/bench/bin/bench_collectives
//   bench/compare_collectives.sh            (the same, printed as a table with the ratios)
//
// One benchmark per collective (all_reduce, reduce_scatter, all_gather, broadcast) and buffer
// size (1, 16, 64 MiB of f32: the all-reduced buffer, the reduce-scatter's input, the all-gather's
// output, the broadcast buffer). Every iteration times our call and the plain MPI call on the same
// buffers, alternating which goes first; each call starts after an MPI_Barrier and its time is the
// slowest rank's (what a training step waits for). Reported: the medians `ours_ms` and `mpi_ms`,
// and `ratio`, the median over iterations of ours / MPI (the goal: within 10%, ratio ≤
// 1.10). The two calls of an iteration run back to back under the same load, so their ratio is
// the steadier measure when ranks outnumber cores and a preempted rank can make one call many
// times slower. Rank 0 prints; the iteration counts are fixed (Iterations), so every rank makes
// the same calls whatever its clock says.
//
// Run without mpirun (the CI smoke run) it is a world of one rank through MPI's singleton
// initialisation: all_reduce and broadcast then move nothing and reduce_scatter and all_gather
// copy input to output, so the two times differ by what our wrapper adds (argument checks,
// counting; tens of nanoseconds).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dist/mpi_communicator.h"

namespace {

using vramlab::DType;
using vramlab::dist::Collective;
using vramlab::dist::MpiCommunicator;
using vramlab::dist::TensorView;
using vramlab::dist::Traffic;

MpiCommunicator& world() {
  static const std::unique_ptr<MpiCommunicator> comm = MpiCommunicator::world();
  return *comm;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Runs `call` once on every rank after a barrier. \return the slowest rank's seconds.
template <typename Call>
double timed(Call&& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  call();
  double seconds = MPI_Wtime() - start, slowest = 0.0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

void BM_Collective(benchmark::State& state) {
  MpiCommunicator& comm = world();
  const auto collective = static_cast<Collective>(state.range(0));
  const int64_t bytes = state.range(1);
  const int64_t N = comm.world_size();
  const int64_t n = bytes / 4;  // elements of the big buffer
  const int64_t m = n / N;      // per-rank chunk of reduce_scatter and all_gather
  std::vector<float> big(static_cast<size_t>(n), 1.0f);    // (n) f32
  std::vector<float> chunk(static_cast<size_t>(m), 1.0f);  // (m) f32
  const TensorView big_view(big.data(), DType::f32, {n});
  const TensorView chunk_view(chunk.data(), DType::f32, {m});
  const TensorView gathered_view(big.data(), DType::f32, {N * m});

  const auto ours = [&] {
    switch (collective) {
      case Collective::all_reduce:
        comm.all_reduce(big_view, Traffic::other);
        break;
      case Collective::reduce_scatter:
        comm.reduce_scatter(gathered_view, chunk_view, Traffic::other);
        break;
      case Collective::all_gather:
        comm.all_gather(chunk_view, gathered_view, Traffic::other);
        break;
      default:
        comm.broadcast(big_view, 0, Traffic::other);
        break;
    }
  };
  const auto plain = [&] {
    switch (collective) {
      case Collective::all_reduce:
        MPI_Allreduce(MPI_IN_PLACE, big.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
      case Collective::reduce_scatter:
        MPI_Reduce_scatter_block(big.data(), chunk.data(), static_cast<int>(m), MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD);
        break;
      case Collective::all_gather:
        MPI_Allgather(chunk.data(), static_cast<int>(m), MPI_FLOAT, big.data(), static_cast<int>(m),
                      MPI_FLOAT, MPI_COMM_WORLD);
        break;
      default:
        MPI_Bcast(big.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    }
  };

  // One untimed round of each: first-touch page faults and MPI's connection set-up.
  ours();
  plain();
  std::vector<double> ours_seconds, mpi_seconds;
  int64_t iteration = 0;
  for (auto _ : state) {
    double ours_time = 0.0, mpi_time = 0.0;
    if (iteration++ % 2 == 0) {
      ours_time = timed(ours);
      mpi_time = timed(plain);
    } else {
      mpi_time = timed(plain);
      ours_time = timed(ours);
    }
    ours_seconds.push_back(ours_time);
    mpi_seconds.push_back(mpi_time);
    state.SetIterationTime(ours_time);
  }
  const double ours_median = median(ours_seconds), mpi_median = median(mpi_seconds);
  state.counters["ours_ms"] = 1e3 * ours_median;
  state.counters["mpi_ms"] = 1e3 * mpi_median;
  // Paired: each iteration's two calls ran back to back under the same load, so the median of
  // their ratios is steadier than the ratio of the medians when other processes share the cores.
  std::vector<double> ratios;
  for (size_t i = 0; i < ours_seconds.size(); ++i)
    if (mpi_seconds[i] > 0) ratios.push_back(ours_seconds[i] / mpi_seconds[i]);
  state.counters["ratio"] = ratios.empty() ? 0.0 : median(ratios);
  state.counters["ranks"] = static_cast<double>(N);
  state.SetLabel(
      std::string(vramlab::dist::collective_name(collective)) + " " + std::to_string(bytes >> 20) +
      " MiB" +
      (N == 1 ? " (1 rank: MPI copies locally or does nothing; the difference is our wrapper)"
              : ""));
}

template <int64_t kMiB>
void Arguments(benchmark::internal::Benchmark* b) {
  for (Collective c : {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
                       Collective::broadcast})
    b->Args({static_cast<int64_t>(c), kMiB << 20});
}

// Fixed iteration counts: an adaptive count would let each rank's clock decide, and ranks that
// disagree would wait forever in each other's collectives. More iterations for the small sizes,
// whose times 4 ranks sharing 2 cores make noisiest.
BENCHMARK(BM_Collective)
    ->Apply(Arguments<1>)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(100);
BENCHMARK(BM_Collective)
    ->Apply(Arguments<16>)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(24);
BENCHMARK(BM_Collective)
    ->Apply(Arguments<64>)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(12);

// Rank 0 reports; the others run the same benchmarks silently.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  MpiCommunicator& comm = world();  // initialises MPI (finalised at exit)
  // The other ranks must not open --benchmark_out's file: each would truncate rank 0's output.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i)
    if (comm.rank() == 0 || std::string(argv[i]).rfind("--benchmark_out", 0) != 0)
      args.push_back(argv[i]);
  int arg_count = static_cast<int>(args.size());
  benchmark::Initialize(&arg_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(arg_count, args.data())) return 1;
  if (comm.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
