// Known-wrong variant of exercise 07.1 (kept for `vramlab verify`, never linked into a lesson):
// ends an allocation at its free_requested entry, so a block whose free is still pending
// (reserved for another stream) no longer counts while later allocations pile up on it.
// The exercise's tests must fail for it.
#include <algorithm>
#include <map>
#include <string>

#include "common/platform/errors.h"
#include "lessons/07-profiling/api/top_at_peak.h"

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

PeakAllocation allocation_from(const json& entry, const char* address_key, const char* size_key,
                               std::int64_t alloc_event) {
  PeakAllocation a;
  a.address = static_cast<std::uint64_t>(integer_at(entry, address_key));
  a.bytes = integer_at(entry, size_key);
  if (a.bytes < 0) throw UsageError("a negative size: " + entry.dump());
  a.module = text_at(entry, "module");
  a.phase = text_at(entry, "phase");
  a.tensor = text_at(entry, "tensor");
  a.alloc_event = alloc_event;
  return a;
}

std::string action_of(const json& entry) {
  return text_at(entry, "action");
}

}  // namespace

TopAtPeak top_at_peak(const json& snapshot, std::size_t k) {
  const json& segments = array_at(snapshot, "segments");
  const json& traces = array_at(snapshot, "device_traces");
  static const json kNoTrace = json::array();
  const json& trace = traces.empty() ? kNoTrace : traces.at(0);
  if (!trace.is_array()) throw UsageError("device_traces[0] is not an array");

  // Pass 1: which allocations were live before the first entry. An address maps to the alloc
  // entry that is open there; a free_completed with none open was allocated before the trace.
  std::map<std::uint64_t, PeakAllocation> open;
  std::map<std::uint64_t, PeakAllocation> before;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const json& e = trace[i];
    const std::string action = action_of(e);
    if (action == "alloc") {
      PeakAllocation a = allocation_from(e, "addr", "size", static_cast<std::int64_t>(i));
      open[a.address] = a;
    } else if (action == "free_requested") {
      const auto address = static_cast<std::uint64_t>(integer_at(e, "addr"));
      if (open.erase(address) == 0) before[address] = allocation_from(e, "addr", "size", -1);
    }
  }
  for (const json& segment : segments)
    for (const json& block : array_at(segment, "blocks")) {
      if (text_at(block, "state") == "inactive") continue;
      const auto address = static_cast<std::uint64_t>(integer_at(block, "address"));
      if (open.count(address) == 0)
        before[address] = allocation_from(block, "address", "requested_size", -1);
    }

  // Pass 2: live bytes before the first entry and after each one; the first largest wins.
  std::map<std::uint64_t, PeakAllocation> live = before;
  std::int64_t live_bytes = 0;
  for (const auto& [address, a] : live) live_bytes += a.bytes;
  TopAtPeak result;
  result.peak_bytes = live_bytes;
  result.peak_event = -1;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const json& e = trace[i];
    const std::string action = action_of(e);
    if (action == "alloc") {
      PeakAllocation a = allocation_from(e, "addr", "size", static_cast<std::int64_t>(i));
      live_bytes += a.bytes;
      live[a.address] = a;
    } else if (action == "free_requested") {
      const auto it = live.find(static_cast<std::uint64_t>(integer_at(e, "addr")));
      if (it != live.end()) {
        live_bytes -= it->second.bytes;
        live.erase(it);
      }
    }
    if (live_bytes > result.peak_bytes) {
      result.peak_bytes = live_bytes;
      result.peak_event = static_cast<std::int64_t>(i);
    }
  }

  // Pass 3: the live set at the peak, replayed up to and including its entry.
  live = before;
  for (std::int64_t i = 0; i <= result.peak_event; ++i) {
    const json& e = trace[static_cast<std::size_t>(i)];
    const std::string action = action_of(e);
    if (action == "alloc") {
      PeakAllocation a = allocation_from(e, "addr", "size", i);
      live[a.address] = a;
    } else if (action == "free_requested") {
      live.erase(static_cast<std::uint64_t>(integer_at(e, "addr")));
    }
  }
  for (const auto& [address, a] : live) result.top.push_back(a);
  std::sort(result.top.begin(), result.top.end(),
            [](const PeakAllocation& x, const PeakAllocation& y) {
              return x.bytes != y.bytes ? x.bytes > y.bytes : x.address < y.address;
            });
  if (result.top.size() > k) result.top.resize(k);
  return result;
}

}  // namespace vramlab::lesson07
