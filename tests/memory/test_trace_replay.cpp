// The `vramlab alloc` trace format: every operation, and errors that name FILE:LINE.
//   build/tests/bin/test_memory --gtest_filter='TraceReplay.*'
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "common/memory/trace_replay.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kMiB;

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

bool has_control_character(const std::string& text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) return true;
  return false;
}

// A NUL once cut the message short and an escape sequence reached the terminal raw: a line with a
// control character is refused, named by line, with the character shown as \xNN.
TEST(TraceReplay, ControlCharactersAreRefusedWithTheLineAndShownEscaped) {
  const struct {
    std::string line;
    std::string shown;
  } cases[] = {
      {std::string("alloc a\0b 4096", 15), "alloc a\\x00b 4096"},
      {"alloc a\x1b[2Jb 4096", "alloc a\\x1b[2Jb 4096"},
      {"free \x7f", "free \\x7f"},
      {"alloc x 4096 category=\x01", "alloc x 4096 category=\\x01"},
      {"alloc x\v 4096", "alloc x\\x0b 4096"},
  };
  for (const auto& c : cases) {
    auto allocator = meta_allocator("1GiB");
    const std::string error = usage_error(*allocator, "alloc ok 1MiB\n" + c.line + "\nfree ok\n");
    EXPECT_EQ(error.rfind("t.trace:2: control character ", 0), 0u) << error;
    EXPECT_NE(error.find(c.shown), std::string::npos) << error;
    EXPECT_FALSE(has_control_character(error)) << error;
  }
  // Tabs separate words, and a Windows line end is fine.
  auto allocator = meta_allocator("1GiB");
  TraceReplayer replayer(*allocator);
  std::istringstream input("alloc\ta\t4096\r\nfree a\r\n");
  EXPECT_EQ(replayer.replay(input, "t.trace").operations, 2u);
}

TEST(TraceReplay, PrintableEscapesExactlyTheControlCharacters) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::string text(random() % 40, '\0');
    for (char& c : text) c = static_cast<char>(random() % 256);
    const std::string shown = platform::printable(text);
    EXPECT_FALSE(has_control_character(shown));
    // Undo the escapes: the original comes back, so nothing was lost or added.
    std::string back;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (shown.compare(i, 2, "\\x") == 0 && i + 3 < shown.size()) {
        const int value = std::stoi(shown.substr(i + 2, 2), nullptr, 16);
        if (value < 0x20 || value == 0x7f) {
          back += static_cast<char>(value);
          i += 3;
          continue;
        }
      }
      back += shown[i];
    }
    EXPECT_EQ(back, text);
  }
  EXPECT_EQ(platform::printable("caf\xc3\xa9 \t"), "caf\xc3\xa9 \\x09");
}

TEST(TraceReplay, CpuHasNoCachingAllocator) {
  EXPECT_THROW(make_replay_allocator(parse_device("cpu"), AllocatorConfig{}), UsageError);
}

}  // namespace
}  // namespace vramlab::memory
