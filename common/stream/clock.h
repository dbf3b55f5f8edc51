/// \file
/// \brief A device's streams on a clock you can turn: each stream is a timeline of the work put on
/// it, in seconds, beside the host's own time. Note [The stream clock] in clock.cpp.
///
/// Vocabulary as in CUDA and PyTorch: work is *enqueued* on a stream by the host and runs after
/// everything enqueued on that stream before it; streams run side by side; an Event (event.h)
/// recorded on one stream and waited on by another orders them; synchronize() makes the host wait.
/// On `cpu`, `sim` and `meta` the clock is the device: a kernel runs when it is called (the bytes
/// really move on cpu and sim) and is then placed on its stream's timeline with the duration the
/// caller gives (measured on sim, a roofline on meta, bytes over the link for a copy). So the
/// clock answers the question a GPU's timeline answers (did the copy hide behind the compute?)
/// on a machine without one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::stream {

/// A stream of one clock: 0 is the compute stream (CUDA's default stream), others come from
/// Clock::new_stream(). The same numbers as memory::StreamId.
using StreamId = std::int64_t;

/// One piece of work placed on a stream: [start, end) in the clock's seconds.
struct Span {
  StreamId stream = 0;  ///< the stream it ran on
  double start = 0.0;   ///< seconds on the clock
  double end = 0.0;     ///< start plus its duration
  std::string name;     ///< what the work was ("linear_forward", "copy h2d 12 MiB")
};

/// The timelines of one device's streams, and the host's time.
class Clock {
 public:
  /// A clock with the compute stream only, every time at zero.
  Clock();

  /// The compute stream (0): kernels run here unless a StreamGuard says otherwise.
  [[nodiscard]] static constexpr StreamId compute_stream() { return 0; }
  /// Makes a stream, named \p name in traces ("copy h2d"). \return its id (1, 2, ...).
  StreamId new_stream(std::string name);
  /// Makes a timeline for work the host does on a thread of its own (the CPU optimizer step of a
  /// delayed parameter update, ZeRO-Offload's DPU): work enqueued on it does not move host_time(),
  /// and synchronize() does not wait for it, as torch.cuda.synchronize() waits for the device's
  /// streams and not for the host's threads. Events order it as they order a stream;
  /// synchronize_stream() joins it. \return its id, from the streams' numbers.
  StreamId new_host_thread(std::string name);
  /// \return whether \p stream was made by new_host_thread(). \throws vramlab::UsageError for an
  /// unknown stream.
  [[nodiscard]] bool is_host_thread(StreamId stream) const;
  /// \return how many streams the clock has (the compute stream included).
  [[nodiscard]] std::int64_t stream_count() const {
    return static_cast<std::int64_t>(streams_.size());
  }
  /// \throws vramlab::UsageError naming \p stream when the clock has no such stream.
  [[nodiscard]] const std::string& stream_name(StreamId stream) const;

  /// The stream kernels and copies go to: compute_stream() unless a StreamGuard set another.
  [[nodiscard]] StreamId current_stream() const { return current_; }

  /// Places work of \p seconds on \p stream: it starts when the stream has finished what was
  /// enqueued before it and not before the host enqueues it (host_time()), as a GPU stream runs
  /// a kernel. \throws vramlab::UsageError for an unknown stream or a negative or non-finite
  /// duration. \return the span it occupies.
  Span enqueue(StreamId stream, double seconds, std::string_view name);
  /// The host itself works for \p seconds (a CPU optimizer step, say): host_time() moves on, so
  /// later work cannot start before it. \throws vramlab::UsageError for a negative or non-finite
  /// duration.
  void host_work(double seconds);

  /// When everything enqueued on \p stream so far is done. \throws vramlab::UsageError for an
  /// unknown stream.
  [[nodiscard]] double stream_time(StreamId stream) const;
  /// The host's time: what it has waited for, plus its own work.
  [[nodiscard]] double host_time() const { return host_time_; }
  /// The host waits for \p stream (torch.cuda.Stream.synchronize()).
  void synchronize_stream(StreamId stream);
  /// The host waits for every stream (torch.cuda.synchronize()), not for its own threads
  /// (new_host_thread()). \return host_time() after.
  double synchronize();

  /// Seconds \p stream sat idle waiting for an event of another stream (Event::wait): on the
  /// compute stream, the copy time that did not hide behind compute ("exposed").
  [[nodiscard]] double waited_seconds(StreamId stream) const;
  /// Seconds of work enqueued on \p stream (its busy time).
  [[nodiscard]] double busy_seconds(StreamId stream) const;

  /// Every span enqueued so far, in the order enqueued, when keep_spans(true) was asked (for the
  /// Chrome trace's one lane per stream); empty otherwise.
  [[nodiscard]] const std::vector<Span>& spans() const { return spans_; }
  /// Keep (or stop keeping) a Span per enqueue: off by default, as a long run makes many.
  void keep_spans(bool keep) { keep_spans_ = keep; }
  /// \return whether spans are being kept.
  [[nodiscard]] bool keeps_spans() const { return keep_spans_; }

  /// Called by Event::wait: \p stream's next work starts no earlier than \p time.
  void wait_until(StreamId stream, double time);
  /// Called by Event::synchronize: the host waits until \p time.
  void host_wait_until(double time);

 private:
  friend class StreamGuard;
  struct Timeline {
    std::string name;
    double ready = 0.0;   // when its last enqueued work ends
    double busy = 0.0;    // sum of its work's durations
    double waited = 0.0;  // idle time spent waiting on other streams' events
    bool host_thread = false;  // new_host_thread(): synchronize() does not wait for it
  };
  Timeline& timeline(StreamId stream);
  [[nodiscard]] const Timeline& timeline(StreamId stream) const;

  std::vector<Timeline> streams_;  // (stream_count), index = StreamId
  double host_time_ = 0.0;
  StreamId current_ = 0;
  bool keep_spans_ = false;
  std::vector<Span> spans_;
};

/// Makes \p stream the clock's current stream for the guard's lifetime, as c10's
/// CUDAStreamGuard does, so kernels and copies go to it without a stream argument.
class StreamGuard {
 public:
  /// \throws vramlab::UsageError for an unknown stream.
  StreamGuard(Clock& clock, StreamId stream);
  ~StreamGuard();  ///< Restores the stream current before.
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Clock& clock_;
  StreamId previous_;
};

}  // namespace vramlab::stream
