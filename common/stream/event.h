/// \file
/// \brief An event on a stream clock (clock.h): record it on one stream, make another stream or
/// the host wait for it, ask whether it has completed, as torch.cuda.Event.
#pragma once

#include "common/stream/clock.h"

namespace vramlab::stream {

/// A point on one stream's timeline. An event never recorded counts as completed, as in CUDA.
class Event {
 public:
  /// Marks the point after the work enqueued on \p stream so far (torch.cuda.Event.record).
  /// Recording again moves the event. \throws vramlab::UsageError for an unknown stream.
  void record(Clock& clock, StreamId stream);
  /// Work enqueued on \p stream from now on starts after the recorded point
  /// (torch.cuda.Event.wait / Stream.wait_event); the idle time counts as the stream's
  /// waited_seconds. Nothing happens when the event was never recorded. \throws
  /// vramlab::UsageError for an unknown stream, or a clock other than the one recorded on.
  void wait(Clock& clock, StreamId stream) const;
  /// \return true when the host has reached the recorded point (torch.cuda.Event.query): the
  /// work before it is done as far as the host can know.
  [[nodiscard]] bool query() const;
  /// The host waits for the recorded point (torch.cuda.Event.synchronize).
  void synchronize() const;
  /// \return the recorded point in the clock's seconds (0 when never recorded).
  [[nodiscard]] double time() const { return time_; }
  /// \return whether record() was called.
  [[nodiscard]] bool recorded() const { return clock_ != nullptr; }

 private:
  Clock* clock_ = nullptr;
  double time_ = 0.0;
};

}  // namespace vramlab::stream
