// stream::Clock and stream::Event (Note [The stream clock]): work on two streams overlaps, an
// event joins them, and the compute stream's wait is the copy time that did not hide.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "common/platform/errors.h"
#include "common/stream/clock.h"
#include "common/stream/event.h"

namespace vramlab::stream {
namespace {

// A step: a copy of `bytes` at `bandwidth` on `copy_on`, compute of `compute` seconds on the
// compute stream in two halves with the copy's event waited on between them (the second half
// reads what the copy brought), then the host waits for everything.
struct StepTimes {
  double step = 0.0;
  double exposed = 0.0;  // the compute stream's wait on the copy
};
StepTimes run_step(double compute, double bytes, double bandwidth, bool side_stream) {
  Clock clock;
  const StreamId copy = side_stream ? clock.new_stream("copy h2d") : Clock::compute_stream();
  clock.enqueue(copy, bytes / bandwidth, "copy");
  Event copied;
  copied.record(clock, copy);
  clock.enqueue(Clock::compute_stream(), compute / 2, "first half");
  copied.wait(clock, Clock::compute_stream());
  clock.enqueue(Clock::compute_stream(), compute / 2, "second half");
  return {clock.synchronize(), clock.waited_seconds(Clock::compute_stream())};
}

TEST(StreamClock, ACopyOnItsOwnStreamHidesBehindComputeUntilItIsLongerThanTheComputeBeforeTheJoin) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> seconds(1e-6, 2.0), bandwidths(1e9, 9e11);
  for (int trial = 0; trial < 200; ++trial) {
    const double compute = seconds(rng), bandwidth = bandwidths(rng);
    // Copies of real sizes: up to 2^40 bytes (a 70B model's fp16 weights are 2^37).
    const double bytes = std::ldexp(std::uniform_real_distribution<double>(0.0, 1.0)(rng), 40);
    const double copy = bytes / bandwidth;
    const StepTimes side = run_step(compute, bytes, bandwidth, true);
    const StepTimes same = run_step(compute, bytes, bandwidth, false);
    const double tolerance = 1e-12 * (compute + copy);
    // The second half waits for the copy: max(copy, first half) + second half.
    EXPECT_NEAR(side.step, std::max(copy, compute / 2) + compute / 2, tolerance);
    EXPECT_NEAR(side.exposed, std::max(0.0, copy - compute / 2), tolerance);
    // On one stream everything runs in order, and no stream waits on another.
    EXPECT_NEAR(same.step, copy + compute, tolerance);
    EXPECT_EQ(same.exposed, 0.0);
  }
}

TEST(StreamClock, AnEventJoinGivesTheLongerOfTheTwoAndWithoutItTheStreamsDoNotWaitForEachOther) {
  for (const auto& [compute, copy] : {std::pair{3.0, 2.0}, {2.0, 3.0}, {1.5, 1.5}, {0.0, 0.25}}) {
    Clock clock;
    const StreamId side = clock.new_stream("copy d2h");
    clock.enqueue(Clock::compute_stream(), compute, "compute");
    clock.enqueue(side, copy, "copy");
    EXPECT_EQ(clock.stream_time(Clock::compute_stream()), compute);
    EXPECT_EQ(clock.stream_time(side), copy);
    Event done;
    done.record(clock, side);
    done.wait(clock, Clock::compute_stream());
    EXPECT_EQ(clock.stream_time(Clock::compute_stream()), std::max(compute, copy));
    EXPECT_EQ(clock.waited_seconds(Clock::compute_stream()), std::max(0.0, copy - compute));
    EXPECT_EQ(clock.busy_seconds(Clock::compute_stream()), compute);
    EXPECT_EQ(clock.busy_seconds(side), copy);
    EXPECT_EQ(clock.synchronize(), std::max(compute, copy));
  }
}

TEST(StreamClock, WorkEnqueuedAfterTheHostWaitedStartsWhenTheHostDid) {
  Clock clock;
  const StreamId side = clock.new_stream("copy");
  clock.enqueue(Clock::compute_stream(), 5.0, "long kernel");
  clock.synchronize_stream(Clock::compute_stream());
  EXPECT_EQ(clock.host_time(), 5.0);
  // The side stream was idle, but the host only enqueues this copy at 5 s.
  const Span copy = clock.enqueue(side, 1.0, "copy");
  EXPECT_EQ(copy.start, 5.0);
  EXPECT_EQ(copy.end, 6.0);
  clock.host_work(0.5);  // a CPU optimizer step, say
  EXPECT_EQ(clock.host_time(), 5.5);
  EXPECT_EQ(clock.enqueue(Clock::compute_stream(), 1.0, "kernel").start, 5.5);
  // A wait on an event the stream has passed costs nothing.
  Event early;
  early.record(clock, side);
  clock.enqueue(Clock::compute_stream(), 2.0, "kernel");
  early.wait(clock, Clock::compute_stream());
  EXPECT_EQ(clock.waited_seconds(Clock::compute_stream()), 0.0);
  EXPECT_EQ(clock.stream_time(Clock::compute_stream()), 8.5);
}

TEST(StreamClock, AHostThreadRunsBesideTheHostWhichWaitsForItOnlyWhenItJoinsIt) {
  // DPU's shape: the CPU optimizer of step i runs on a host thread while step i + 1 computes.
  for (const auto& [update, compute] :
       {std::pair{2.0, 3.0}, {3.0, 2.0}, {1.25, 1.25}, {0.0, 0.5}, {1e-9, 4096.0}}) {
    Clock clock;
    const StreamId optimizer = clock.new_host_thread("cpu optimizer");
    const StreamId copy = clock.new_stream("copy");
    EXPECT_TRUE(clock.is_host_thread(optimizer));
    EXPECT_FALSE(clock.is_host_thread(copy));
    EXPECT_FALSE(clock.is_host_thread(Clock::compute_stream()));
    clock.enqueue(optimizer, update, "update");
    EXPECT_EQ(clock.host_time(), 0.0);  // the host went on
    Event updated;
    updated.record(clock, optimizer);
    clock.enqueue(Clock::compute_stream(), compute, "forward and backward");
    // The device's streams are all synchronize() waits for.
    EXPECT_EQ(clock.synchronize(), compute);
    EXPECT_EQ(clock.stream_time(optimizer), update);
    // The parameters' copy back starts once the update is done.
    updated.wait(clock, copy);
    EXPECT_EQ(clock.enqueue(copy, 0.5, "copy back").start, std::max(update, compute));
    EXPECT_EQ(clock.busy_seconds(optimizer), update);
    clock.synchronize_stream(optimizer);  // a join
    EXPECT_EQ(clock.host_time(), std::max(update, compute));
    EXPECT_EQ(clock.synchronize(), std::max(update, compute) + 0.5);
  }
  Clock clock;
  EXPECT_THROW((void)clock.is_host_thread(1), UsageError);
}

TEST(StreamEvent, QueryIsTrueOnlyOnceTheHostHasReachedTheRecordedPoint) {
  Clock clock;
  const StreamId side = clock.new_stream("copy");
  Event never;
  EXPECT_TRUE(never.query());  // as in CUDA: an event never recorded has completed
  EXPECT_FALSE(never.recorded());
  never.wait(clock, Clock::compute_stream());
  EXPECT_EQ(clock.stream_time(Clock::compute_stream()), 0.0);

  clock.enqueue(side, 2.0, "copy");
  Event copied;
  copied.record(clock, side);
  EXPECT_EQ(copied.time(), 2.0);
  EXPECT_FALSE(copied.query());
  clock.host_work(1.0);
  EXPECT_FALSE(copied.query());
  copied.synchronize();
  EXPECT_TRUE(copied.query());
  EXPECT_EQ(clock.host_time(), 2.0);
  // Recording again moves the event to the stream's new end.
  clock.enqueue(side, 3.0, "copy");
  copied.record(clock, side);
  EXPECT_FALSE(copied.query());
  clock.synchronize_stream(Clock::compute_stream());  // another stream: still pending
  EXPECT_FALSE(copied.query());
  clock.synchronize();
  EXPECT_TRUE(copied.query());
  EXPECT_EQ(clock.host_time(), 5.0);
}

TEST(StreamGuard, KernelsGoToTheGuardedStreamAndTheOldOneComesBack) {
  Clock clock;
  const StreamId a = clock.new_stream("a"), b = clock.new_stream("b");
  EXPECT_EQ(clock.current_stream(), Clock::compute_stream());
  {
    StreamGuard outer(clock, a);
    EXPECT_EQ(clock.current_stream(), a);
    {
      StreamGuard inner(clock, b);
      EXPECT_EQ(clock.current_stream(), b);
    }
    EXPECT_EQ(clock.current_stream(), a);
    EXPECT_THROW(StreamGuard(clock, 3), UsageError);
    EXPECT_EQ(clock.current_stream(), a);
  }
  EXPECT_EQ(clock.current_stream(), Clock::compute_stream());
  EXPECT_EQ(clock.stream_name(a), "a");
  EXPECT_EQ(clock.stream_count(), 3);
}

TEST(StreamClock, BadDurationsAndUnknownStreamsAreRefusedNamingTheValue) {
  Clock clock;
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    try {
      clock.enqueue(Clock::compute_stream(), bad, "linear_forward");
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("linear_forward"), std::string::npos) << e.what();
    }
    EXPECT_THROW(clock.host_work(bad), UsageError);
  }
  EXPECT_EQ(clock.stream_time(Clock::compute_stream()), 0.0);
  EXPECT_EQ(clock.host_time(), 0.0);
  for (StreamId bad : {StreamId{-1}, StreamId{1}, StreamId{1} << 40}) {
    try {
      clock.enqueue(bad, 1.0, "copy");
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  Clock other;
  Event e;
  e.record(other, Clock::compute_stream());
  EXPECT_THROW(e.wait(clock, Clock::compute_stream()), UsageError);
}

TEST(StreamClock, SpansAreKeptOnlyWhenAskedWithTheirStreamsForTheTraceLanes) {
  Clock clock;
  const StreamId side = clock.new_stream("copy");
  clock.enqueue(Clock::compute_stream(), 1.0, "not kept");
  EXPECT_TRUE(clock.spans().empty());
  clock.keep_spans(true);
  clock.enqueue(side, 2.0, "copy");
  clock.enqueue(Clock::compute_stream(), 1.0, "kernel");
  ASSERT_EQ(clock.spans().size(), 2u);
  EXPECT_EQ(clock.spans()[0].stream, side);
  EXPECT_EQ(clock.spans()[0].start, 0.0);
  EXPECT_EQ(clock.spans()[1].stream, Clock::compute_stream());
  EXPECT_EQ(clock.spans()[1].start, 1.0);
  EXPECT_EQ(clock.spans()[1].name, "kernel");
}

}  // namespace
}  // namespace vramlab::stream
