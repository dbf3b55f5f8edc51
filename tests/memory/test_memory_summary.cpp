// memory_summary(): PyTorch's table, compared with tables derived by hand from the rules of
// torch/cuda/memory.py (memory_summary and its _format_size/_format_count helpers).
//   build/tests/bin/test_memory --gtest_filter='MemorySummary.*:FormatSize.*'
#include <gtest/gtest.h>

#include "common/memory/memory_summary.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::make_sim_allocator;

const std::string kDouble =
    "|===========================================================================|\n";
const std::string kSingle =
    "|---------------------------------------------------------------------------|\n";

std::string header(int ooms, int retries) {
  char line[200];
  std::snprintf(line, sizeof(line),
                "|            CUDA OOMs: %-12d |        cudaMalloc retries: %-8d  |\n", ooms,
                retries);
  return kDouble +
         "|                  PyTorch CUDA memory summary, device ID 0                 |\n" +
         kSingle + line + kDouble +
         "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n";
}

TEST(MemorySummary, OneLiveOneByteTensorMatchesTheHandDerivedTable) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->malloc(1);
  // Rounded to 512 B in a 2 MiB small segment; the 2 MiB − 512 B remainder is non-releasable.
  // Sizes switch to KiB when the column's "all" value is ≥ 768 KiB, so even the 0-byte large-pool
  // rows of reserved memory print "0 KiB".
  const std::string count_rows =
      "| Allocations           |       1    |       1    |       1    |       0    |\n"
      "|       from large pool |       0    |       0    |       0    |       0    |\n"
      "|       from small pool |       1    |       1    |       1    |       0    |\n";
  const std::string expected =
      header(0, 0) + kSingle +
      "| Allocated memory      |    512 B   |    512 B   |    512 B   |      0 B   |\n"
      "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
      "|       from small pool |    512 B   |    512 B   |    512 B   |      0 B   |\n" +
      kSingle +
      "| Active memory         |    512 B   |    512 B   |    512 B   |      0 B   |\n"
      "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
      "|       from small pool |    512 B   |    512 B   |    512 B   |      0 B   |\n" +
      kSingle +
      "| Requested memory      |      1 B   |      1 B   |      1 B   |      0 B   |\n"
      "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
      "|       from small pool |      1 B   |      1 B   |      1 B   |      0 B   |\n" +
      kSingle +
      "| GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |\n"
      "|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |\n"
      "|       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |\n" +
      kSingle +
      "| Non-releasable memory |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |\n"
      "|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |\n"
      "|       from small pool |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |\n" +
      kSingle + count_rows + kSingle +
      "| Active allocs         |       1    |       1    |       1    |       0    |\n"
      "|       from large pool |       0    |       0    |       0    |       0    |\n"
      "|       from small pool |       1    |       1    |       1    |       0    |\n" +
      kSingle +
      "| GPU reserved segments |       1    |       1    |       1    |       0    |\n"
      "|       from large pool |       0    |       0    |       0    |       0    |\n"
      "|       from small pool |       1    |       1    |       1    |       0    |\n" +
      kSingle +
      "| Non-releasable allocs |       1    |       1    |       1    |       0    |\n"
      "|       from large pool |       0    |       0    |       0    |       0    |\n"
      "|       from small pool |       1    |       1    |       1    |       0    |\n" +
      kSingle + "| Oversize allocations  |       0    |       0    |       0    |       0    |\n" +
      kSingle + "| Oversize GPU segments |       0    |       0    |       0    |       0    |\n" +
      kDouble;
  EXPECT_EQ(allocator->memory_summary(), expected);
}

TEST(MemorySummary, EveryLineIs77CharactersWide) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->malloc(123456789);
  const std::string summary = allocator->memory_summary();
  std::size_t start = 0;
  std::size_t lines = 0;
  while (start < summary.size()) {
    const std::size_t end = summary.find('\n', start);
    EXPECT_EQ(end - start, 77u) << summary.substr(start, end - start);
    start = end + 1;
    ++lines;
  }
  EXPECT_EQ(lines, 6u + 9u * 4u + 2u * 2u + 1u);
}

TEST(MemorySummary, AbbreviatedKeepsOnlyTheAllRows) {
  auto allocator = make_sim_allocator(kGiB);
  const std::string summary = allocator->memory_summary(true);
  EXPECT_EQ(summary.find("from large pool"), std::string::npos);
  EXPECT_NE(summary.find("| Allocated memory      |      0 B   |"), std::string::npos);
}

TEST(MemorySummary, CountersAppearInTheHeader) {
  DeviceStats stats;
  stats.num_ooms = 3;
  stats.num_alloc_retries = 12;
  EXPECT_EQ(render_memory_summary(stats, 0, true).substr(0, header(3, 12).size()), header(3, 12));
}

TEST(MemorySummary, SizePrefixSwitchesAt768KiBOfTheAllRow) {
  DeviceStats stats;
  stats.requested_bytes[kAggregate] = Stat{786432, 786431, 5368709120LL, 0};
  stats.requested_bytes[kLargePool] = Stat{1000, 0, 5368709120LL, 0};
  const std::string summary = render_memory_summary(stats, 0, false);
  EXPECT_NE(
      summary.find("| Requested memory      |    768 KiB | 786431 B   |   5120 MiB |      0 B   |"),
      std::string::npos)
      << summary;
  // The large-pool row uses the all row's prefixes: 1000 B in a KiB column prints 0 KiB.
  EXPECT_NE(
      summary.find("|       from large pool |      0 KiB |      0 B   |   5120 MiB |      0 B   |"),
      std::string::npos)
      << summary;
}

TEST(MemorySummary, CountPrefixSwitchesAt750Thousand) {
  DeviceStats stats;
  stats.allocation[kAggregate] = Stat{750000, 749999, 2500000000LL, 0};
  const std::string summary = render_memory_summary(stats, 0, true);
  EXPECT_NE(
      summary.find("| Allocations           |     750 K  |  749999    |    2500 M  |       0    |"),
      std::string::npos)
      << summary;
}

TEST(FormatSize, FollowsC10FormatSize) {
  EXPECT_EQ(format_size(0), "0 bytes");
  EXPECT_EQ(format_size(1024), "1024 bytes");
  EXPECT_EQ(format_size(1025), "1.00 KiB");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_size(1048576), "1024.00 KiB");
  EXPECT_EQ(format_size(1048577), "1.00 MiB");
  EXPECT_EQ(format_size(20ULL << 20), "20.00 MiB");
  EXPECT_EQ(format_size(1ULL << 30), "1024.00 MiB");
  EXPECT_EQ(format_size((3ULL << 30) / 2), "1.50 GiB");
}

}  // namespace
}  // namespace vramlab::memory
