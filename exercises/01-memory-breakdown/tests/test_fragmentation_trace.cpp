// Tests of exercise 01.5 (a trace that runs out of memory through fragmentation). They run against
// your code (`vramlab check 01.5`) and against the reference (ctest: test_ex_01_5_ref).
// The check is the runtime itself: the trace is replayed on the caching allocator of a simulated
// 1 GiB GPU (common/memory/trace_replay.h, what `vramlab alloc` runs), and the out-of-memory
// error's own figures (device free, reserved but unallocated) decide.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "common/memory/alloc_config.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/memory/trace_replay.h"
#include "common/report/terminal.h"
#include "common/workbook/comparison.h"
#include "lessons/01-memory-breakdown/api/fragmentation_trace.h"

namespace vramlab::lesson01 {
namespace {

std::string mib(int64_t bytes) {
  return report::format_bytes(static_cast<uint64_t>(bytes));
}

// The learner's trace, replayed on a fresh allocator. An invalid line fails the test with the
// replayer's "FILE:LINE: message".
struct Replay {
  std::string trace;
  memory::ReplayOutcome outcome;
  int64_t peak_reserved = 0;
  int64_t lines = 0;
};

Replay replay_trace() {
  Replay r;
  r.trace = fragmentation_trace();
  for (char c : r.trace) r.lines += c == '\n';
  if (!r.trace.empty() && r.trace.back() != '\n') ++r.lines;
  const memory::Device device = memory::parse_device(kFragmentationDevice);
  auto allocator = memory::make_replay_allocator(device, memory::AllocatorConfig{});
  memory::TraceReplayer replayer(*allocator);
  std::istringstream input(r.trace);
  r.outcome = replayer.replay(input, "fragmentation_trace()");
  r.peak_reserved = allocator->stats().reserved_bytes[memory::kAggregate].peak;
  return r;
}

// "line 1327 ('alloc big 64MiB')".
std::string failing_line(const memory::ReplayOutcome& o) {
  return "line " + std::to_string(o.line_number) + " ('" + o.line_text + "')";
}

int64_t unused_bytes(const memory::OutOfMemoryDetails& d) {
  return static_cast<int64_t>(d.free_bytes) + d.reserved_unallocated_bytes;
}

//! [test]
TEST(FragmentationTrace, RunsOutOfMemoryOnTheSimulatedDevice) {
  const Replay r = replay_trace();
  if (!r.outcome.out_of_memory)
    ADD_FAILURE() << "the trace replayed to the end (" << r.outcome.operations
                  << " operations) without running out of memory on " << kFragmentationDevice
                  << "; reserved memory peaked at " << mib(r.peak_reserved)
                  << ". When a request fits no cached block, the allocator first releases every "
                     "cached segment that holds no tensor, then retries.";
}

TEST(FragmentationTrace, MoreThan30PercentHoldsNoTensorAtTheFailure) {
  const Replay r = replay_trace();
  if (!r.outcome.out_of_memory) GTEST_SKIP() << "no out-of-memory error (see the test above)";
  const memory::OutOfMemoryDetails& d = r.outcome.details;
  const int64_t unused = unused_bytes(d);
  const double share = static_cast<double>(unused) / static_cast<double>(d.capacity_bytes);
  if (!(share > kMinimumUnusedShare))
    ADD_FAILURE() << "at the failure, " << failing_line(r.outcome) << ", only " << mib(unused)
                  << " of " << mib(static_cast<int64_t>(d.capacity_bytes)) << " ("
                  << static_cast<int>(100 * share)
                  << "%) held no tensor: " << mib(static_cast<int64_t>(d.free_bytes))
                  << " free on the device + " << mib(d.reserved_unallocated_bytes)
                  << " reserved but unallocated; it must be more than "
                  << static_cast<int>(100 * kMinimumUnusedShare) << "%. Tensors held "
                  << mib(d.allocated_bytes) << ".";
}
//! [test]

TEST(FragmentationTrace, TheFailingRequestIsSmallerThanTheUnusedMemory) {
  const Replay r = replay_trace();
  if (!r.outcome.out_of_memory) GTEST_SKIP() << "no out-of-memory error (see the first test)";
  const memory::OutOfMemoryDetails& d = r.outcome.details;
  if (static_cast<int64_t>(d.rounded_bytes) >= unused_bytes(d))
    ADD_FAILURE() << failing_line(r.outcome) << " asks for "
                  << mib(static_cast<int64_t>(d.rounded_bytes)) << ", but only "
                  << mib(unused_bytes(d))
                  << " holds no tensor: that request could never fit, fragmented or not.";
}

TEST(FragmentationTrace, IsAValidTraceWithinLimitsThatKeepsTheDefaultSettings) {
  const Replay r = replay_trace();
  if (r.lines > kMaxTraceLines)
    ADD_FAILURE() << "the trace has " << r.lines << " lines; at most " << kMaxTraceLines;
  std::istringstream lines(r.trace);
  std::string line;
  for (int64_t n = 1; std::getline(lines, line); ++n) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "set_conf")
      ADD_FAILURE() << "line " << n << " ('" << line
                    << "') changes the allocator's settings; the exercise keeps the defaults";
  }
  if (r.outcome.out_of_memory && r.outcome.details.allowed_bytes != 0)
    ADD_FAILURE() << "a memory-fraction limit of "
                  << mib(static_cast<int64_t>(r.outcome.details.allowed_bytes))
                  << " was in force at the failure";
}

}  // namespace
}  // namespace vramlab::lesson01
