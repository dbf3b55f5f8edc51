// Note [The stream clock]
// Why: offloading hides a copy behind compute, or it does not and the step waits; on a machine
// without a GPU nothing runs concurrently, so the overlap has to be computed. A GPU stream is an
// in-order queue the host fills without waiting; what a stream's work costs is its duration, when
// it starts is decided by the queue. So a timeline per stream needs only two rules:
//   start = max(the stream's previous end, the host's time at enqueue), end = start + duration;
//   an event recorded on stream A and waited on by stream B moves B's next start to A's point.
// The host's time moves only when it waits (synchronize, Event::synchronize) or works itself
// (host_work): enqueueing is free, as a kernel launch is nearly so. The durations are the
// caller's: on sim the kernel's measured time, on meta a roofline, for a copy bytes over the
// link's bandwidth (nn::Runtime decides). An event's query() asks whether the host has reached
// its point, the only way a host learns that a GPU finished.
// What it costs: a kernel on the clock reads steady_clock twice and enqueues a span, about 60-70
// ns on a call that takes about 390 ns without it (the call's own checks and dispatch, for a fill
// of 16 floats; bench/stream/bench_clock_overhead, both measured in one run), so a few hundred
// kernels of a training step add tens of microseconds to steps of milliseconds.
#include "common/stream/clock.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::stream {

namespace {

void check_seconds(double seconds, std::string_view what) {
  if (!std::isfinite(seconds) || seconds < 0.0)
    throw UsageError(std::string(what) + ": a duration must be finite and >= 0 seconds, not " +
                     std::to_string(seconds));
}

}  // namespace

Clock::Clock() {
  streams_.push_back(Timeline{"compute"});
}

StreamId Clock::new_stream(std::string name) {
  streams_.push_back(Timeline{std::move(name)});
  return static_cast<StreamId>(streams_.size()) - 1;
}

StreamId Clock::new_host_thread(std::string name) {
  streams_.push_back(Timeline{.name = std::move(name), .host_thread = true});
  return static_cast<StreamId>(streams_.size()) - 1;
}

bool Clock::is_host_thread(StreamId stream) const {
  return timeline(stream).host_thread;
}

Clock::Timeline& Clock::timeline(StreamId stream) {
  return const_cast<Timeline&>(std::as_const(*this).timeline(stream));
}

const Clock::Timeline& Clock::timeline(StreamId stream) const {
  if (stream < 0 || stream >= stream_count())
    throw UsageError("stream " + std::to_string(stream) + " does not exist: the clock has " +
                     std::to_string(stream_count()) + " streams (0 is the compute stream)");
  return streams_[static_cast<size_t>(stream)];
}

const std::string& Clock::stream_name(StreamId stream) const {
  return timeline(stream).name;
}

Span Clock::enqueue(StreamId stream, double seconds, std::string_view name) {
  check_seconds(seconds, name);
  Timeline& line = timeline(stream);
  const double start = std::max(line.ready, host_time_);
  line.ready = start + seconds;
  line.busy += seconds;
  Span span{stream, start, line.ready, std::string(name)};
  if (keep_spans_) spans_.push_back(span);
  return span;
}

void Clock::host_work(double seconds) {
  check_seconds(seconds, "host work");
  host_time_ += seconds;
}

double Clock::stream_time(StreamId stream) const {
  return timeline(stream).ready;
}

void Clock::synchronize_stream(StreamId stream) {
  host_wait_until(timeline(stream).ready);
}

void Clock::host_wait_until(double time) {
  host_time_ = std::max(host_time_, time);
}

double Clock::synchronize() {
  for (const Timeline& line : streams_)
    if (!line.host_thread) host_time_ = std::max(host_time_, line.ready);
  return host_time_;
}

double Clock::waited_seconds(StreamId stream) const {
  return timeline(stream).waited;
}

double Clock::busy_seconds(StreamId stream) const {
  return timeline(stream).busy;
}

void Clock::wait_until(StreamId stream, double time) {
  Timeline& line = timeline(stream);
  // Idle from when the stream would otherwise start its next work (not before the host reached
  // it) to the event's point: that much of the other stream's work is not hidden.
  const double would_start = std::max(line.ready, host_time_);
  if (time > would_start) {
    line.waited += time - would_start;
    line.ready = time;
  }
}

StreamGuard::StreamGuard(Clock& clock, StreamId stream) : clock_(clock), previous_(clock.current_) {
  (void)clock.timeline(stream);  // refuses an unknown stream before changing anything
  clock.current_ = stream;
}

StreamGuard::~StreamGuard() {
  clock_.current_ = previous_;
}

}  // namespace vramlab::stream
