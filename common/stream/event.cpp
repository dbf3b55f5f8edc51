// Events on the stream clock (Note [The stream clock] in clock.cpp).
#include "common/stream/event.h"


#include "common/platform/errors.h"

namespace vramlab::stream {

void Event::record(Clock& clock, StreamId stream) {
  time_ = clock.stream_time(stream);
  clock_ = &clock;
}

void Event::wait(Clock& clock, StreamId stream) const {
  if (clock_ == nullptr) {
    (void)clock.stream_time(stream);  // an unknown stream is still refused
    return;
  }
  if (clock_ != &clock)
    throw UsageError("an event recorded on one device's streams cannot order another device's");
  clock.wait_until(stream, time_);
}

bool Event::query() const {
  return clock_ == nullptr || clock_->host_time() >= time_;
}

void Event::synchronize() const {
  if (clock_ != nullptr) clock_->host_wait_until(time_);
}

}  // namespace vramlab::stream
