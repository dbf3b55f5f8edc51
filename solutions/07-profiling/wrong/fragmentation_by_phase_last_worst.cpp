// Known-wrong variant of exercise 07.4 (kept for `vramlab verify`, never linked into a lesson):
// keeps the last entry that reached a phase's worst gap (>=) instead of the first.
// The exercise's tests must fail for it.
#include <algorithm>
#include <map>
#include <string>

#include "common/platform/errors.h"
#include "lessons/07-profiling/api/fragmentation_by_phase.h"

namespace vramlab::lesson07 {

namespace {

using nlohmann::json;

const json& array_at(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_array())
    throw UsageError(std::string("the snapshot has no \"") + key + "\" array");
  return object.at(key);
}

std::int64_t integer_at(const json& entry, const char* key) {
  if (!entry.contains(key) || !entry.at(key).is_number_integer())
    throw UsageError(std::string("an entry without a numeric \"") + key + "\": " + entry.dump());
  return entry.at(key).get<std::int64_t>();
}

std::string text_at(const json& entry, const char* key) {
  return entry.contains(key) && entry.at(key).is_string() ? entry.at(key).get<std::string>() : "";
}

// What an entry adds to allocated and to reserved bytes.
struct Delta {
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
};

Delta delta_of(const json& e) {
  const std::string action = text_at(e, "action");
  if (action == "alloc") return {integer_at(e, "size"), 0};
  if (action == "free_completed") return {-integer_at(e, "size"), 0};
  if (action == "segment_alloc" || action == "segment_map") return {0, integer_at(e, "size")};
  if (action == "segment_free" || action == "segment_unmap") return {0, -integer_at(e, "size")};
  return {};
}

// The innermost phase span holding t (a recompute inside backward is the recompute).
std::string running_phase(const std::vector<profile::Span>& spans, std::int64_t t) {
  const profile::Span* innermost = nullptr;
  for (const profile::Span& s : spans) {
    if (s.kind != profile::SpanKind::phase || t < s.start_ns || t >= s.end_ns) continue;
    if (innermost == nullptr || s.depth > innermost->depth) innermost = &s;
  }
  return innermost == nullptr ? "none" : innermost->name;
}

}  // namespace

std::vector<PhaseGap> fragmentation_by_phase(const profile::Recording& recording) {
  const json& segments = array_at(recording.snapshot, "segments");
  const json& traces = array_at(recording.snapshot, "device_traces");
  static const json kNoTrace = json::array();
  const json& trace = traces.empty() ? kNoTrace : traces.at(0);
  if (!trace.is_array()) throw UsageError("device_traces[0] is not an array");

  // The end state from the segments, then back to the start by undoing what the trace added.
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  for (const json& segment : segments) {
    reserved += integer_at(segment, "total_size");
    for (const json& block : array_at(segment, "blocks"))
      if (text_at(block, "state") != "inactive") allocated += integer_at(block, "requested_size");
  }
  for (const json& e : trace) {
    const Delta d = delta_of(e);
    allocated -= d.allocated;
    reserved -= d.reserved;
  }

  std::map<std::string, PhaseGap> phases;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const json& e = trace[i];
    const Delta d = delta_of(e);
    allocated += d.allocated;
    reserved += d.reserved;
    const std::string phase =
        running_phase(recording.spans, integer_at(e, "time_ns") - recording.origin_ns);
    PhaseGap& p = phases[phase];
    p.phase = phase;
    ++p.entries;
    const std::int64_t gap = reserved - allocated;
    if (p.entries == 1 || gap >= p.gap_bytes) {
      p.gap_bytes = gap;
      p.event = static_cast<std::int64_t>(i);
      p.reserved_bytes = reserved;
      p.allocated_bytes = allocated;
    }
  }
  std::vector<PhaseGap> result;
  for (auto& [name, p] : phases) result.push_back(std::move(p));
  std::sort(result.begin(), result.end(), [](const PhaseGap& x, const PhaseGap& y) {
    return x.gap_bytes != y.gap_bytes ? x.gap_bytes > y.gap_bytes : x.phase < y.phase;
  });
  return result;
}

}  // namespace vramlab::lesson07
