// The NVMe tier (common/storage/nvme_tier.h) on this machine's file system: random bytes of odd
// sizes come back bit for bit through io_uring and through threads, for several block sizes and
// queue depths, without touching a byte beyond the request; a path that is not a writable
// directory, and a full disk (a file-size limit in a child process, which the kernel enforces as
// it enforces a full disk: EFBIG), each give one StorageError naming the path, leave no file
// behind and lose nothing already written.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/storage/nvme_tier.h"
#include "tests/temp_dir.h"

namespace vramlab::storage {
namespace {

namespace fs = std::filesystem;

using test_build::TempDir;

std::vector<unsigned char> random_bytes(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> out(static_cast<size_t>(n));
  for (unsigned char& b : out) b = static_cast<unsigned char>(rng());
  return out;
}

// The engines this kernel runs: threads always, io_uring where the kernel allows it.
std::vector<NvmeEngine> engines(const std::string& dir) {
  std::vector<NvmeEngine> out{NvmeEngine::threads};
  NvmeOptions o;
  o.path = dir;
  if (NvmeTier(o).engine() == NvmeEngine::io_uring) out.push_back(NvmeEngine::io_uring);
  return out;
}

TEST(NvmeTier, RandomBytesOfOddSizesComeBackBitForBitThroughEveryEngine) {
  const TempDir dir;
  const int64_t kCanary = 4096;
  uint64_t seed = 20261205;
  for (const NvmeEngine engine : engines(dir.path)) {
    std::printf("engine %s\n", std::string(nvme_engine_name(engine)).c_str());
    for (const int64_t block : {int64_t{4096}, int64_t{64} << 10, int64_t{1} << 20}) {
      for (const int64_t depth : {1, 3, 8}) {
        NvmeOptions o{dir.path, block, depth, engine};
        NvmeTier tier(o);
        EXPECT_EQ(tier.engine(), engine);
        for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{4095}, int64_t{4096}, int64_t{4097},
                                5 * block, 5 * block + 17, (int64_t{3} << 20) + 17}) {
          SCOPED_TRACE(std::string(nvme_engine_name(engine)) + ", block " + std::to_string(block) +
                       ", depth " + std::to_string(depth) + ", " + std::to_string(n) + " bytes");
          const std::vector<unsigned char> data = random_bytes(n, ++seed);
          const int64_t file = tier.create("odd size", n);
          EXPECT_EQ(tier.file_bytes(file), (n + 4095) / 4096 * 4096);
          tier.write(file, data.data(), n);
          // Read into a buffer with canaries on both sides: nothing outside [0, n) changes.
          std::vector<unsigned char> back(static_cast<size_t>(n + 2 * kCanary), 0xA5);
          tier.read(file, back.data() + kCanary, n);
          EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + kCanary));
          for (int64_t i = 0; i < kCanary; ++i) {
            ASSERT_EQ(back[static_cast<size_t>(i)], 0xA5);
            ASSERT_EQ(back[static_cast<size_t>(n + kCanary + i)], 0xA5);
          }
          // A prefix reads back alone.
          if (n > 1) {
            std::vector<unsigned char> half(static_cast<size_t>(n / 2));
            tier.read(file, half.data(), n / 2);
            EXPECT_TRUE(std::equal(half.begin(), half.end(), data.begin()));
          }
        }
        EXPECT_GT(tier.stats().write_bytes_per_s(), 0.0);
        EXPECT_GT(tier.stats().read_bytes_per_s(), 0.0);
      }
    }
  }
  EXPECT_EQ(dir.files(), 0) << "every tier removes its files";
}

TEST(NvmeTier, ARewrittenFileHoldsItsLastContentsAndTheStatsCountCallersBytes) {
  const TempDir dir;
  NvmeTier tier({dir.path, int64_t{1} << 16, 4, NvmeEngine::automatic});
  const int64_t n = (int64_t{1} << 20) + 333;
  const int64_t a = tier.create("a", n), b = tier.create("b", n);
  EXPECT_NE(tier.file_path(a), tier.file_path(b));
  const std::vector<unsigned char> first = random_bytes(n, 1), second = random_bytes(n, 2);
  tier.write(a, first.data(), n);
  tier.write(b, first.data(), n);
  tier.write(a, second.data(), n);
  std::vector<unsigned char> back(static_cast<size_t>(n));
  tier.read(a, back.data(), n);
  EXPECT_EQ(back, second);
  tier.read(b, back.data(), n);
  EXPECT_EQ(back, first);
  EXPECT_EQ(tier.stats().bytes_written, 3 * n);
  EXPECT_EQ(tier.stats().bytes_read, 2 * n);
  EXPECT_EQ(dir.files(), 2);
  EXPECT_THROW(tier.write(a, first.data(), tier.file_bytes(a) + 1), UsageError);
  EXPECT_THROW(tier.read(7, back.data(), 1), UsageError);
  EXPECT_THROW((void)tier.create("negative", -1), UsageError);
}

std::string storage_error(const NvmeOptions& o) {
  try {
    NvmeTier tier(o);
  } catch (const StorageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(NvmeTier, APathThatIsNotAWritableDirectoryIsNamedInOneLine) {
  const TempDir dir;
  const std::string missing = dir.path + "/no-such-dir";
  const std::string file = dir.path + "/a-file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  // /proc takes no new files, even from root (as CI may run).
  for (const std::string& path : {missing, file, std::string("/proc")}) {
    const std::string message = storage_error({path, int64_t{1} << 20, 8, NvmeEngine::automatic});
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message, "accepted") << path;
  }
  EXPECT_EQ(dir.files(), 1);  // the probe files went
  for (const auto& [block, depth] :
       {std::pair<int64_t, int64_t>{4095, 8}, {0, 8}, {8192 + 512, 8}, {4096, 0}, {4096, 257}})
    EXPECT_THROW(NvmeTier({dir.path, block, depth, NvmeEngine::threads}), UsageError)
        << block << " " << depth;
  EXPECT_THROW((void)parse_nvme_engine("aio"), UsageError);
  for (const NvmeEngine e : {NvmeEngine::automatic, NvmeEngine::io_uring, NvmeEngine::threads})
    EXPECT_EQ(parse_nvme_engine(nvme_engine_name(e)), e);
}

// In a child process, so the limit stays there. Exit codes name the first check that failed.
int full_disk_child(const std::string& dir, NvmeEngine engine) {
  std::signal(SIGXFSZ, SIG_IGN);  // the kernel's signal at the limit: the call fails with EFBIG
  NvmeTier tier({dir, int64_t{1} << 16, 4, engine});
  const int64_t kept_bytes = (int64_t{256} << 10) + 5;
  const std::vector<unsigned char> kept = random_bytes(kept_bytes, 3);
  const int64_t a = tier.create("kept", kept_bytes);
  tier.write(a, kept.data(), kept_bytes);
  const int64_t b = tier.create("later", int64_t{2} << 20);  // reserved under the limit
  rlimit limit{int64_t{1} << 20, int64_t{1} << 20};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
  // Creating a file beyond the limit: refused before a byte is written, and not left behind.
  const int64_t before = std::distance(fs::directory_iterator(dir), fs::directory_iterator());
  try {
    (void)tier.create("too big", int64_t{4} << 20);
    return 11;
  } catch (const StorageError& e) {
    if (std::string(e.what()).find("the disk is full") == std::string::npos) return 12;
  }
  if (std::distance(fs::directory_iterator(dir), fs::directory_iterator()) != before) return 13;
  // Writing past the limit into a reserved file: one error, the source untouched.
  std::vector<unsigned char> source = random_bytes(int64_t{2} << 20, 4);
  const std::vector<unsigned char> copy = source;
  try {
    tier.write(b, source.data(), int64_t{2} << 20);
    return 14;
  } catch (const StorageError& e) {
    const std::string what = e.what();
    if (what.find("the disk is full") == std::string::npos) return 15;
    if (what.find(tier.file_path(b)) == std::string::npos) return 16;
  }
  if (source != copy) return 17;
  // What was written before is still there.
  std::vector<unsigned char> back(static_cast<size_t>(kept_bytes));
  tier.read(a, back.data(), kept_bytes);
  if (back != kept) return 18;
  return 0;
}

TEST(NvmeTier, AFullDiskIsOneErrorAndLosesNothingWrittenBefore) {
  const TempDir dir;
  for (const NvmeEngine engine : engines(dir.path)) {
    SCOPED_TRACE(nvme_engine_name(engine));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int code = 99;
      try {
        code = full_disk_child(dir.path, engine);
      } catch (...) {
        code = 98;
      }
      std::_Exit(code);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's check " << WEXITSTATUS(status) << " failed";
    EXPECT_EQ(dir.files(), 0) << "the child's tier removed its files";
  }
}

}  // namespace
}  // namespace vramlab::storage
