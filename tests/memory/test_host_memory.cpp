// The host-RAM budget under the sim and cpu devices: allocations up to it work, the one beyond it
// raises HostMemoryError (a UsageError, never the simulated device's OutOfMemoryError) with the
// numbers, and the allocator is left as it was; cached segments are released first; expandable
// pages are undone; the budget is shared by every host backing of the process; meta never takes
// from it, nor does a trace replay; VRAMLAB_HOST_MEMORY_LIMIT is parsed or refused.
//   build/tests/bin/test_memory --gtest_filter='HostMemoryBudget.*' (one of its suites)
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/host_memory.h"
#include "common/memory/trace_replay.h"
#include "common/platform/errors.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kMiB;
using testing::make_meta_allocator;
using testing::make_sim_allocator;

const std::string kVariable(kHostMemoryLimitVariable);

std::map<std::string, std::int64_t> stats_map(const CachingAllocator& allocator) {
  std::map<std::string, std::int64_t> stats;
  for (const auto& [key, value] : allocator.memory_stats()) stats[key] = value;
  return stats;
}

std::int64_t reserved(const CachingAllocator& allocator) {
  return allocator.stats().reserved_bytes[kAggregate].current;
}

// PyTorch's segment size for a large request of at least 10 MiB: rounded up to 2 MiB.
std::uint64_t segment_for(std::uint64_t bytes) {
  return (bytes + 2 * kMiB - 1) / (2 * kMiB) * 2 * kMiB;
}

// After a refused malloc: every gauge and counter as before, except the two counters of the cache
// flush and retry the allocator made before giving up (as before a device out-of-memory); num_ooms
// unchanged, since the simulated device was not out of memory.
void expect_stats_of_a_refusal(std::map<std::string, std::int64_t> before,
                               const std::map<std::string, std::int64_t>& after) {
  before["num_alloc_retries"] += 1;
  before["num_sync_all_streams"] += 1;
  EXPECT_EQ(before, after);
}

class HostMemoryBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv(kVariable.c_str());
    set_host_memory_limit(64 * kMiB);
    ASSERT_EQ(host_memory_held_bytes(), 0u);
  }
  void TearDown() override {
    unsetenv(kVariable.c_str());
    set_host_memory_limit(std::nullopt);
    EXPECT_EQ(host_memory_held_bytes(), 0u) << "host-backed bytes leaked";
  }
};

TEST_F(HostMemoryBudget, AllocationsUpToTheBudgetWorkAndTheNextRaisesTheHostError) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> size(10 * kMiB, 30 * kMiB);
  for (int round = 0; round < 20; ++round) {
    auto allocator = make_sim_allocator(kGiB);
    std::vector<Block*> blocks;
    std::uint64_t bytes = size(rng);
    while (static_cast<std::uint64_t>(reserved(*allocator)) + segment_for(bytes) <= 64 * kMiB) {
      blocks.push_back(allocator->malloc(bytes));
      ASSERT_NE(blocks.back(), nullptr);
      bytes = size(rng);
    }
    const auto held = static_cast<std::uint64_t>(reserved(*allocator));
    ASSERT_EQ(host_memory_held_bytes(), held);
    const auto before = stats_map(*allocator);
    try {
      allocator->malloc(bytes);
      FAIL() << "no error for " << bytes << " bytes with " << held << " held";
    } catch (const HostMemoryError& error) {
      EXPECT_EQ(error.refusal().requested_bytes, segment_for(bytes));
      EXPECT_EQ(error.refusal().held_bytes, held);
      EXPECT_EQ(error.refusal().limit.bytes, 64 * kMiB);
      const std::string message = error.what();
      for (const std::string& part :
           {std::string("out of host RAM, not out of device memory: sim:test "),
            "wanted " + format_size(held + segment_for(bytes)) + " of it (" + format_size(held) +
                " held + " + format_size(segment_for(bytes)) + " requested)",
            "only " + format_size(64 * kMiB) + " is available", std::string("--device meta"),
            kVariable}) {
        EXPECT_NE(message.find(part), std::string::npos) << "no '" << part << "' in " << message;
      }
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    allocator->check_invariants();
    expect_stats_of_a_refusal(before, stats_map(*allocator));
    EXPECT_EQ(host_memory_held_bytes(), held);
    // A request that fits in what is left works; freeing and reallocating works.
    if (held + 2 * kMiB <= 64 * kMiB) {
      Block* small = allocator->malloc(512 * 1024);
      ASSERT_NE(small, nullptr);
      EXPECT_EQ(host_memory_held_bytes(), held + 2 * kMiB);
      allocator->free(small);
    }
    ASSERT_FALSE(blocks.empty());
    const std::size_t first_bytes = blocks.front()->requested_size;
    allocator->free(blocks.front());
    blocks.front() = allocator->malloc(first_bytes);
    ASSERT_NE(blocks.front(), nullptr);
    allocator->check_invariants();
    for (Block* block : blocks) allocator->free(block);
    allocator->empty_cache();
    EXPECT_EQ(host_memory_held_bytes(), 0u);
  }
}

TEST_F(HostMemoryBudget, IsAUsageErrorAndNeverTheDevicesOutOfMemoryError) {
  auto allocator = make_sim_allocator(kGiB);
  EXPECT_THROW(allocator->malloc(100 * kMiB), UsageError);
  try {
    allocator->malloc(100 * kMiB);
  } catch (const OutOfMemoryError&) {
    ADD_FAILURE() << "the host-RAM refusal was reported as the device's out-of-memory";
  } catch (const UsageError&) {
  }
  EXPECT_EQ(stats_map(*allocator).at("num_ooms"), 0);
}

TEST_F(HostMemoryBudget, CachedSegmentsAreReleasedBeforeTheHostIsDeclaredFull) {
  auto allocator = make_sim_allocator(kGiB);
  Block* a = allocator->malloc(20 * kMiB);
  Block* b = allocator->malloc(20 * kMiB);
  Block* c = allocator->malloc(20 * kMiB);
  allocator->free(a);
  allocator->free(b);
  ASSERT_EQ(host_memory_held_bytes(), 60 * kMiB);  // a and b stay cached
  // 40 MiB fits neither the cache (two separate 20 MiB segments) nor beside it, but it fits once
  // the cache is given back.
  Block* d = allocator->malloc(40 * kMiB);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(host_memory_held_bytes(), 60 * kMiB);
  EXPECT_EQ(allocator->stats().num_alloc_retries, 1);
  allocator->check_invariants();
  allocator->free(c);
  allocator->free(d);
  allocator->empty_cache();
}

TEST_F(HostMemoryBudget, ExpandablePagesMappedBeforeTheRefusalAreUnmapped) {
  set_host_memory_limit(50 * kMiB);
  auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
  const auto before = stats_map(*allocator);
  // 70 MiB is four 20 MiB pages: two are mapped, the third is refused, the two are undone.
  EXPECT_THROW(allocator->malloc(70 * kMiB), HostMemoryError);
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  allocator->check_invariants();
  expect_stats_of_a_refusal(before, stats_map(*allocator));
  Block* fits = allocator->malloc(40 * kMiB);
  ASSERT_NE(fits, nullptr);
  EXPECT_EQ(host_memory_held_bytes(), 40 * kMiB);
  const auto with_two_pages = stats_map(*allocator);
  try {
    allocator->malloc(20 * kMiB);
    ADD_FAILURE() << "a third page fitted in 50 MiB";
  } catch (const HostMemoryError& error) {
    EXPECT_EQ(error.refusal().requested_bytes, 20 * kMiB);  // one page at a time
    EXPECT_EQ(error.refusal().held_bytes, 40 * kMiB);
  }
  allocator->check_invariants();
  expect_stats_of_a_refusal(with_two_pages, stats_map(*allocator));
  allocator->free(fits);
  allocator->empty_cache();
}

TEST_F(HostMemoryBudget, AFullSimulatedDeviceIsTheDevicesOutOfMemory) {
  set_host_memory_limit(40 * kMiB);  // below what the refused requests would make too
  auto allocator = make_sim_allocator(32 * kMiB);
  EXPECT_THROW(allocator->malloc(40 * kMiB), OutOfMemoryError);
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  Block* block = allocator->malloc(30 * kMiB);
  EXPECT_THROW(allocator->malloc(20 * kMiB), OutOfMemoryError);
  allocator->check_invariants();
  allocator->free(block);
}

TEST_F(HostMemoryBudget, IsSharedByEveryHostBackingOfTheProcess) {
  auto first = make_sim_allocator(kGiB);
  CachingAllocator second(make_host_backing(kGiB), "sim:1:second", 1);
  CachingAllocator cpu(make_host_backing(1ULL << 60), "cpu", 0);  // the cpu device: no capacity
  Block* a = first->malloc(40 * kMiB);
  try {
    second.malloc(30 * kMiB);
    ADD_FAILURE() << "the second device did not see the first one's 40 MiB";
  } catch (const HostMemoryError& error) {
    EXPECT_NE(std::string(error.what()).find("sim:1:second"), std::string::npos) << error.what();
    EXPECT_EQ(error.refusal().held_bytes, 40 * kMiB);
  }
  EXPECT_THROW(cpu.malloc(30 * kMiB), HostMemoryError);
  Block* b = second.malloc(20 * kMiB);
  EXPECT_EQ(host_memory_held_bytes(), 60 * kMiB);
  first->free(a);
  first->empty_cache();
  Block* c = cpu.malloc(30 * kMiB);
  EXPECT_EQ(host_memory_held_bytes(), 50 * kMiB);
  second.free(b);
  cpu.free(c);
  second.empty_cache();
  cpu.empty_cache();
}

TEST_F(HostMemoryBudget, DestroyingAnAllocatorGivesItsSegmentsBack) {
  {
    auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
    allocator->malloc(30 * kMiB);
    auto plain = make_sim_allocator(kGiB);
    plain->malloc(12 * kMiB);
    EXPECT_EQ(host_memory_held_bytes(), 52 * kMiB);
  }
  EXPECT_EQ(host_memory_held_bytes(), 0u);
}

TEST_F(HostMemoryBudget, TheMetaDeviceNeverTakesFromIt) {
  auto allocator = make_meta_allocator(1ULL << 40);
  std::vector<Block*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(allocator->malloc(100 * kGiB));
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  EXPECT_THROW(allocator->malloc(100 * kGiB), OutOfMemoryError);  // its own capacity, 1 TiB
  for (Block* block : blocks) allocator->free(block);
}

TEST_F(HostMemoryBudget, ATraceReplayOnASimDeviceMapsNoHostMemory) {
  auto allocator = make_replay_allocator(parse_device("sim:h200-141g"), AllocatorConfig{});
  Block* block = allocator->malloc(100 * kGiB);
  EXPECT_EQ(host_memory_held_bytes(), 0u);
  EXPECT_EQ(allocator->capacity_bytes(), 141 * kGiB);
  EXPECT_THROW(allocator->malloc(50 * kGiB), OutOfMemoryError);  // the sim device's capacity
  allocator->free(block);
}

TEST_F(HostMemoryBudget, TheLimitCannotBeZero) {
  EXPECT_THROW(set_host_memory_limit(0), UsageError);
}

TEST_F(HostMemoryBudget, TheEnvironmentVariableSetsTheBudget) {
  set_host_memory_limit(std::nullopt);
  setenv(kVariable.c_str(), "48MiB", 1);
  auto allocator = make_sim_allocator(kGiB);
  const HostMemoryLimit limit = resolve_host_memory_limit();
  EXPECT_EQ(limit.bytes, 48 * kMiB);
  EXPECT_EQ(limit.source, kVariable + "=48MiB");
  Block* block = allocator->malloc(40 * kMiB);
  try {
    allocator->malloc(10 * kMiB);
    ADD_FAILURE() << "50 MiB fitted in 48 MiB";
  } catch (const HostMemoryError& error) {
    EXPECT_NE(std::string(error.what()).find(kVariable + "=48MiB"), std::string::npos)
        << error.what();
  }
  allocator->free(block);
}

TEST_F(HostMemoryBudget, BadEnvironmentValuesAreRefusedWhenTheDeviceIsMade) {
  set_host_memory_limit(std::nullopt);
  for (const char* bad : {"lots", "0", "0GiB", "-1GiB", "12", "2XB", "1.5", "nanGiB", "GiB"}) {
    setenv(kVariable.c_str(), bad, 1);
    try {
      make_host_backing(kGiB);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(kVariable), std::string::npos) << message;
      EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
    }
  }
  // The meta device does not use host memory and does not read the variable.
  EXPECT_NE(make_meta_backing(kGiB), nullptr);
}

TEST_F(HostMemoryBudget, WithoutOverridesTheBudgetComesFromMemAvailableReadOnce) {
  set_host_memory_limit(std::nullopt);
  std::ifstream file("/proc/meminfo");
  if (!file) GTEST_SKIP() << "no /proc/meminfo";
  std::stringstream text;
  text << file.rdbuf();
  ASSERT_TRUE(parse_mem_available(text.str()).has_value());
  const HostMemoryLimit limit = resolve_host_memory_limit();
  EXPECT_NE(limit.source.find("MemAvailable"), std::string::npos) << limit.source;
  EXPECT_NE(limit.source.find("margin"), std::string::npos) << limit.source;
  EXPECT_LT(limit.bytes, std::numeric_limits<std::uint64_t>::max());
  // Read once: allocating (and touching) host memory does not move the budget.
  auto allocator = make_sim_allocator(kGiB);
  Block* block = allocator->malloc(32 * kMiB);
  std::memset(reinterpret_cast<void*>(block->address), 1, 32 * kMiB);
  EXPECT_EQ(resolve_host_memory_limit().bytes, limit.bytes);
  allocator->free(block);
  allocator->empty_cache();
}

TEST(LimitFromMemAvailable, IsMemAvailableMinusTheMarginAndNoLimitWithoutIt) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 50; ++i) {
    const std::uint64_t available = rng() % (1ULL << 42);
    const HostMemoryLimit limit = limit_from_mem_available(available);
    const std::uint64_t margin = host_memory_margin(available);
    EXPECT_EQ(limit.bytes, available > margin ? available - margin : 0) << available;
    EXPECT_NE(limit.source.find("MemAvailable " + format_size(available)), std::string::npos)
        << limit.source;
    EXPECT_NE(limit.source.find("margin of " + format_size(margin)), std::string::npos)
        << limit.source;
  }
  EXPECT_EQ(limit_from_mem_available(512 * kMiB).bytes, 0u);
  EXPECT_EQ(limit_from_mem_available(std::nullopt).bytes,
            std::numeric_limits<std::uint64_t>::max());
}

TEST(HostMemoryMargin, IsOneGiBOrATenthOfMemAvailable) {
  EXPECT_EQ(host_memory_margin(0), kGiB);
  EXPECT_EQ(host_memory_margin(5 * kGiB), kGiB);
  EXPECT_EQ(host_memory_margin(10 * kGiB), kGiB);
  EXPECT_EQ(host_memory_margin(20 * kGiB), 2 * kGiB);
  EXPECT_EQ(host_memory_margin(100 * kGiB + 10), 10 * kGiB + 1);
}

TEST(ParseMemAvailable, ReadsTheKernelsLineInKiB) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    const std::uint64_t kib = rng() % (1ULL << 40);
    const std::string text =
        "MemTotal:       24684576 kB\nMemFree:        " + std::to_string(rng() % 1000000) +
        " kB\nMemAvailable:   " + std::to_string(kib) + " kB\nBuffers:          123 kB\n";
    EXPECT_EQ(parse_mem_available(text), kib * 1024) << text;
  }
  EXPECT_EQ(parse_mem_available("MemAvailable: 7 kB"), 7u * 1024);  // last line, no newline
}

TEST(ParseMemAvailable, RefusesMalformedOrMissingLines) {
  for (const char* text :
       {"", "MemTotal: 100 kB\n", "MemAvailable:\n", "MemAvailable: abc kB\n",
        "MemAvailable: 100 MB\n", "MemAvailable: 100\n", "MemAvailable: -5 kB\n",
        "MemAvailableX: 100 kB\n", " MemAvailable: 100 kB\n", "MemAvailable: 100 kB extra\n",
        "MemAvailable: 99999999999999999999 kB\n"}) {
    EXPECT_FALSE(parse_mem_available(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace vramlab::memory
