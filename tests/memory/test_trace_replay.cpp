// The `vramlab alloc` trace format: every operation, and errors that name FILE:LINE.
//   build/tests/bin/test_trace_replay
#include <gtest/gtest.h>

#include <sstream>

#include "common/memory/trace_replay.h"
#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

constexpr std::size_t kMiB = 1ULL << 20;

std::unique_ptr<CachingAllocator> meta_allocator(const std::string& size) {
  return make_replay_allocator(parse_device("meta:" + size), AllocatorConfig{});
}

std::string usage_error(CachingAllocator& allocator, const std::string& text) {
  TraceReplayer replayer(allocator);
  std::istringstream input(text);
  try {
    replayer.replay(input, "t.trace");
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(TraceReplay, RunsEveryOperation) {
  auto allocator = meta_allocator("1GiB");
  TraceReplayer replayer(*allocator);
  std::istringstream input(
      "# comment\n"
      "\n"
      "alloc a 5MiB stream=1 category=parameter\n"
      "alloc b 4096\n"
      "alloc empty 0\n"
      "record_stream b 2\n"
      "free b\n"
      "free empty\n"
      "reset_peak\n"
      "sync 2\n"
      "set_conf max_split_size_mb:64\n"
      "alloc c 100MiB\n"
      "free c\n"
      "empty_cache\n"
      "sync\n");
  const ReplayOutcome outcome = replayer.replay(input, "t.trace");
  EXPECT_FALSE(outcome.out_of_memory);
  EXPECT_EQ(outcome.operations, 13u);
  const DeviceStats stats = allocator->stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 1);
  EXPECT_EQ(stats.max_split_size, static_cast<std::int64_t>(64 * kMiB));
  EXPECT_EQ(stats.oversize_allocations.allocated, 1);
  EXPECT_EQ(allocator->category_stats().of(MemoryCategory::parameter).current,
            static_cast<std::int64_t>(5 * kMiB));
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(20 * kMiB));
}

TEST(TraceReplay, OutOfMemoryStopsAtItsLine) {
  auto allocator = meta_allocator("64MiB");
  TraceReplayer replayer(*allocator);
  std::istringstream input("alloc a 40MiB\n# between\nalloc b 40MiB\nalloc c 1\n");
  const ReplayOutcome outcome = replayer.replay(input, "t.trace");
  EXPECT_TRUE(outcome.out_of_memory);
  EXPECT_EQ(outcome.line_number, 3u);
  EXPECT_EQ(outcome.line_text, "alloc b 40MiB");
  EXPECT_EQ(outcome.operations, 1u);
  EXPECT_EQ(outcome.message.rfind("meta:64MiB out of memory. Tried to allocate 40.00 MiB.", 0), 0u);
  allocator->check_invariants();
}

TEST(TraceReplay, MalformedLinesNameFileAndLine) {
  auto allocator = meta_allocator("1GiB");
  const std::pair<const char*, const char*> cases[] = {
      {"alloc a\n", "t.trace:1: 'alloc' expects"},
      {"alloc a 1\nalloc a 2\n", "t.trace:2: 'a' is already allocated"},
      {"free nobody\n", "t.trace:1: 'nobody' is not allocated"},
      {"alloc a 12XB\n", "t.trace:1: invalid size '12XB'"},
      {"alloc a 1 stream=-1\n", "t.trace:1: invalid stream '-1'"},
      {"alloc a 1 category=weights\n", "t.trace:1: unknown memory category 'weights'"},
      {"\n\nmalloc a 1\n", "t.trace:3: unknown operation 'malloc'"},
      {"set_conf max_split_size_mb:1\n", "t.trace:1: invalid value '1'"},
      {"record_stream a\n", "t.trace:1: 'record_stream' expects"},
  };
  for (const auto& [text, expected] : cases) {
    auto fresh = meta_allocator("1GiB");
    const std::string message = usage_error(*fresh, text);
    EXPECT_EQ(message.rfind(expected, 0), 0u) << text << " -> " << message;
  }
}

TEST(TraceReplay, CpuHasNoCachingAllocator) {
  EXPECT_THROW(make_replay_allocator(parse_device("cpu"), AllocatorConfig{}), UsageError);
}

}  // namespace
}  // namespace vramlab::memory
