// Chrome trace-event JSON of a recording: metadata naming the process and threads, an "X" event per
// span, and "C" counter samples replayed from the snapshot's trace (allocated bytes stacked by
// category, reserved bytes), on the spans' clock in microseconds.
#include "common/profile/chrome_trace.h"

#include <algorithm>
#include <array>
#include <set>

#include "common/memory/memory_category.h"
#include "common/platform/errors.h"
#include "common/profile/detail/recording_trace.h"
#include "common/snapshot/snapshot_replay.h"

namespace vramlab::profile {
namespace {

using nlohmann::json;

constexpr int kProcessId = 0;
constexpr int kStreamsProcessId = 1;  // the stream clock's lanes

double microseconds(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

std::size_t category_of(const snapshot::ReplayBlock& block) {
  const json& description = *block.description;
  if (description.is_object()) {
    const auto it = description.find("category");
    if (it != description.end() && it->is_string()) {
      const auto name = it->get<std::string>();
      for (std::size_t c = 0; c < memory::kMemoryCategoryCount; ++c) {
        if (memory::category_name(memory::kAllMemoryCategories[c]) == name) return c;
      }
    }
  }
  return static_cast<std::size_t>(memory::MemoryCategory::other);
}

using CategoryBytes = std::array<std::int64_t, memory::kMemoryCategoryCount>;

json allocated_sample(double ts, const CategoryBytes& bytes) {
  json args = json::object();
  for (std::size_t c = 0; c < memory::kMemoryCategoryCount; ++c)
    args[std::string(memory::category_name(memory::kAllMemoryCategories[c]))] = bytes[c];
  return {{"name", "allocated"},    {"ph", "C"}, {"ts", ts},
          {"pid", kProcessId},      {"tid", 0},  {"cat", "memory"},
          {"args", std::move(args)}};
}

json reserved_sample(double ts, std::uint64_t bytes) {
  return {{"name", "reserved"},
          {"ph", "C"},
          {"ts", ts},
          {"pid", kProcessId},
          {"tid", 0},
          {"cat", "memory"},
          {"args", {{"reserved", bytes}}}};
}

json metadata(const char* name, int thread, const std::string& value) {
  return {{"name", name},      {"ph", "M"},     {"ts", 0.0},
          {"pid", kProcessId}, {"tid", thread}, {"args", {{"name", value}}}};
}

// Counter values are signed 64-bit; each category's share is at most the total.
void require_signed(std::uint64_t allocated_bytes, std::size_t event) {
  if (allocated_bytes > static_cast<std::uint64_t>(INT64_MAX)) {
    throw UsageError("recording's allocated bytes exceed a signed 64-bit count at event " +
                     std::to_string(event));
  }
}

}  // namespace

nlohmann::json stream_lanes(const std::vector<stream::Span>& spans,
                            const std::vector<std::string>& stream_names, int process_id,
                            const std::string& process_name, double origin_seconds) {
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"ts", 0.0},
                    {"pid", process_id},
                    {"tid", 0},
                    {"args", {{"name", process_name}}}});
  for (std::size_t id = 0; id < stream_names.size(); ++id)
    events.push_back(
        {{"name", "thread_name"},
         {"ph", "M"},
         {"ts", 0.0},
         {"pid", process_id},
         {"tid", id},
         {"args", {{"name", "stream " + std::to_string(id) + ": " + stream_names[id]}}}});
  for (const stream::Span& span : spans)
    events.push_back({{"name", span.name},
                      {"cat", "stream"},
                      {"ph", "X"},
                      {"ts", (span.start - origin_seconds) * 1e6},
                      {"dur", (span.end - span.start) * 1e6},
                      {"pid", process_id},
                      {"tid", span.stream}});
  return events;
}

json chrome_trace(const Recording& recording) {
  json events = json::array();
  events.push_back(metadata("process_name", 0,
                            "vramlab" + (recording.device.empty() ? "" : " " + recording.device)));
  std::set<std::int32_t> threads = {0};
  for (const Span& span : recording.spans) threads.insert(span.thread);
  for (const std::int32_t thread : threads) {
    events.push_back(metadata("thread_name", thread,
                              thread == 0 ? "training" : "thread " + std::to_string(thread)));
  }

  for (const Span& span : recording.spans) {
    json args = {{"module", span.module}, {"phase", memory::training_phase_name(span.phase)}};
    // A kernel's work, as torch.profiler's with_flops puts "flops" in a kernel's args.
    if (span.kind == SpanKind::kernel) {
      args["flops"] = span.flops;
      args["bytes"] = span.bytes;
    }
    events.push_back({{"name", span.name},
                      {"cat", span_kind_name(span.kind)},
                      {"ph", "X"},
                      {"ts", microseconds(span.start_ns)},
                      {"dur", microseconds(std::max<std::int64_t>(0, span.end_ns - span.start_ns))},
                      {"pid", kProcessId},
                      {"tid", span.thread},
                      {"args", std::move(args)}});
  }

  // The stream clock's lanes: a process of their own, as their seconds are the clock's (Note [The
  // stream clock]), one thread per stream, so a copy that overlaps compute shows beside it.
  if (!recording.stream_spans.empty())
    for (nlohmann::json& e :
         stream_lanes(recording.stream_spans, recording.stream_names, kStreamsProcessId,
                      "device streams (the stream clock's time)"))
      events.push_back(std::move(e));

  // Counters: the state before the first event at time 0, then one sample per event that changed
  // it. Times never go back (a counter track must not), and nothing precedes the recording.
  const std::size_t device = detail::recording_trace_device(recording.snapshot);
  const snapshot::SnapshotTrace trace(
      recording.snapshot, snapshot::SnapshotTraceOptions{
                              .device = device, .segments_of_device_only = true, .strict = false});
  snapshot::ReplayState state = snapshot::ReplayState::initial(trace);
  require_signed(state.allocated_bytes, 0);
  CategoryBytes by_category{};
  for (const auto& [address, block] : state.blocks)
    by_category[category_of(block)] += static_cast<std::int64_t>(block.size_bytes);
  double last_ts = 0.0;
  events.push_back(allocated_sample(last_ts, by_category));
  events.push_back(reserved_sample(last_ts, state.reserved_bytes));
  for (std::size_t i = 0; i < trace.events().size(); ++i) {
    const snapshot::ReplayState::Change change = state.apply(trace, i);
    if (!change.added && !change.removed && !change.reserved) continue;
    require_signed(state.allocated_bytes, i);
    const json& entry = *trace.events()[i].entry;
    const auto time = entry.find("time_ns");
    if (time == entry.end() || !time->is_number_integer()) {
      throw UsageError("recording's snapshot field 'device_traces[" + std::to_string(device) +
                       "][" + std::to_string(i) +
                       "].time_ns' must be an integer (the profiler writes it on every entry)");
    }
    last_ts = std::max(last_ts, microseconds(time->get<std::int64_t>() - recording.origin_ns));
    if (change.removed)
      by_category[category_of(*change.removed)] -=
          static_cast<std::int64_t>(change.removed->size_bytes);
    if (change.added)
      by_category[category_of(*change.added)] +=
          static_cast<std::int64_t>(change.added->size_bytes);
    if (change.added || change.removed) events.push_back(allocated_sample(last_ts, by_category));
    if (change.reserved) events.push_back(reserved_sample(last_ts, state.reserved_bytes));
  }

  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"generator", "vramlab"},
            {"device", recording.device},
            {"seconds", recording.seconds},
            {"origin_ns", recording.origin_ns}}}};
}

}  // namespace vramlab::profile
