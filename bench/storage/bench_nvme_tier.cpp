// The NVMe tier's write and read throughput (common/storage/nvme_tier.h) against the plainest
// large sequential O_DIRECT I/O on the same file system: one thread, pwrite and pread of 16 MiB
// aligned chunks into one preallocated file. The two alternate within each iteration, so a change
// in the disk's speed or the machine's load hits both alike; the target is a tier at
// least 0.8 of the plain figure.
//
//   build/bench/bin/bench_nvme_tier                              (the figure; files in $TMPDIR or
//   /tmp) VRAMLAB_NVME_PATH=/mnt/nvme build/bench/bin/bench_nvme_tier  (on the drive you mean)
//   build/bench/bin/bench_nvme_tier --benchmark_min_time=0.01    (CI's smoke run)
//
// Counters: tier_write_GBps, tier_read_GBps, plain_write_GBps, plain_read_GBps (the best
// iteration of each), write_ratio and read_ratio (tier / plain), direct (1 when O_DIRECT held),
// io_uring (1 when the tier used it). Argument threads=1 runs the tier's thread engine (its
// fallback where the kernel refuses io_uring) instead.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/storage/nvme_tier.h"

namespace {

using namespace vramlab;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBytes = int64_t{256} << 20;  // per transfer
constexpr int64_t kPlainChunk = int64_t{16} << 20;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One thread, 16 MiB requests, straight from an aligned buffer: the baseline.
struct PlainFile {
  explicit PlainFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0600);
    if (fd_ < 0) fd_ = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd_ < 0 || ::posix_fallocate(fd_, 0, kBytes) != 0) std::abort();
  }
  ~PlainFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  double write(const unsigned char* buffer) const {
    const auto start = Clock::now();
    for (int64_t at = 0; at < kBytes; at += kPlainChunk)
      if (::pwrite(fd_, buffer + at, kPlainChunk, at) != kPlainChunk) std::abort();
    return seconds_since(start);
  }
  double read(unsigned char* buffer) const {
    const auto start = Clock::now();
    for (int64_t at = 0; at < kBytes; at += kPlainChunk)
      if (::pread(fd_, buffer + at, kPlainChunk, at) != kPlainChunk) std::abort();
    return seconds_since(start);
  }
  std::string path_;
  int fd_ = -1;
};

void BM_NvmeTierAgainstPlainDirectIo(benchmark::State& state) {
  const char* env = std::getenv("VRAMLAB_NVME_PATH");
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = env ? env : tmp ? tmp : "/tmp";
  // Argument 0: io_uring where the kernel allows it; 1: the threads the tier falls back to.
  const storage::NvmeEngine engine =
      state.range(0) == 0 ? storage::NvmeEngine::automatic : storage::NvmeEngine::threads;
  storage::NvmeTier tier({dir, int64_t{1} << 20, 8, engine});
  const int64_t file = tier.create("bench", kBytes);
  const PlainFile plain(dir + "/vramlab-bench-plain-" + std::to_string(::getpid()));
  void* memory = nullptr;
  if (::posix_memalign(&memory, 4096, kBytes) != 0) std::abort();
  auto* buffer = static_cast<unsigned char*>(memory);  // (kBytes) aligned for the plain path
  for (int64_t i = 0; i < kBytes; ++i)
    buffer[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  double tier_write = 1e30, tier_read = 1e30, plain_write = 1e30, plain_read = 1e30;
  bool tier_first = true;
  for (auto _ : state) {
    const auto tier_pass = [&] {
      auto start = Clock::now();
      tier.write(file, buffer, kBytes);
      tier_write = std::min(tier_write, seconds_since(start));
      start = Clock::now();
      tier.read(file, buffer, kBytes);
      tier_read = std::min(tier_read, seconds_since(start));
    };
    const auto plain_pass = [&] {
      plain_write = std::min(plain_write, plain.write(buffer));
      plain_read = std::min(plain_read, plain.read(buffer));
    };
    if (tier_first) {
      tier_pass();
      plain_pass();
    } else {
      plain_pass();
      tier_pass();
    }
    tier_first = !tier_first;
  }
  std::free(memory);
  const auto gbps = [](double seconds) { return static_cast<double>(kBytes) / seconds / 1e9; };
  state.counters["tier_write_GBps"] = gbps(tier_write);
  state.counters["tier_read_GBps"] = gbps(tier_read);
  state.counters["plain_write_GBps"] = gbps(plain_write);
  state.counters["plain_read_GBps"] = gbps(plain_read);
  state.counters["write_ratio"] = plain_write / tier_write;
  state.counters["read_ratio"] = plain_read / tier_read;
  state.counters["direct"] = tier.direct() ? 1 : 0;
  state.counters["io_uring"] = tier.engine() == storage::NvmeEngine::io_uring ? 1 : 0;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4 * kBytes);
}
BENCHMARK(BM_NvmeTierAgainstPlainDirectIo)
    ->ArgName("threads")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
