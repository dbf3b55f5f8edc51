// Known-wrong variant of exercise 07.2 (kept for `vramlab verify`, never linked into a lesson):
// reduces allocated_bytes by the frees of the module's allocations, which makes it the live
// bytes at the end rather than torch.profiler's allocated total.
// The exercise's tests must fail for it.
#include <algorithm>
#include <map>
#include <string>

#include "common/platform/errors.h"
#include "lessons/07-profiling/api/module_memory.h"

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

struct Live {
  std::int64_t bytes = 0;
  std::string module;
};

Live live_from(const json& entry, const char* size_key) {
  const std::int64_t bytes = integer_at(entry, size_key);
  if (bytes < 0) throw UsageError("a negative size: " + entry.dump());
  return {bytes, text_at(entry, "module")};
}

// The innermost module span holding time t (spans nest, so the deepest one).
const std::string& running_module(const std::vector<profile::Span>& spans, std::int64_t t) {
  static const std::string kNone;
  const profile::Span* innermost = nullptr;
  for (const profile::Span& s : spans) {
    if (s.kind != profile::SpanKind::module || t < s.start_ns || t >= s.end_ns) continue;
    if (innermost == nullptr || s.depth > innermost->depth) innermost = &s;
  }
  return innermost == nullptr ? kNone : innermost->module;
}

}  // namespace

std::vector<ModuleMemory> memory_per_module(const profile::Recording& recording) {
  const json& snapshot = recording.snapshot;
  const json& segments = array_at(snapshot, "segments");
  const json& traces = array_at(snapshot, "device_traces");
  static const json kNoTrace = json::array();
  const json& trace = traces.empty() ? kNoTrace : traces.at(0);
  if (!trace.is_array()) throw UsageError("device_traces[0] is not an array");

  std::map<std::string, ModuleMemory> rows;
  auto row = [&rows](const std::string& module) -> ModuleMemory& {
    ModuleMemory& r = rows[module];
    r.module = module;
    return r;
  };

  // What was live before the trace (as 07.1), and the two attributions entry by entry.
  std::map<std::uint64_t, Live> open;
  std::map<std::uint64_t, Live> before;
  for (const json& e : trace) {
    const std::string action = text_at(e, "action");
    if (action == "alloc") {
      const Live a = live_from(e, "size");
      open[static_cast<std::uint64_t>(integer_at(e, "addr"))] = a;
      ModuleMemory& owner = row(a.module);
      ++owner.allocations;
      owner.allocated_bytes += a.bytes;
      const std::int64_t t = integer_at(e, "time_ns") - recording.origin_ns;
      row(running_module(recording.spans, t)).scope_net_bytes += a.bytes;
    } else if (action == "free_requested") {
      const Live a = live_from(e, "size");
      const std::int64_t t = integer_at(e, "time_ns") - recording.origin_ns;
      const std::string& running = running_module(recording.spans, t);
      row(running).scope_net_bytes -= a.bytes;
      ModuleMemory& owner = row(a.module);
      owner.allocated_bytes -= a.bytes;
      if (a.module != running) owner.freed_by_others_bytes += a.bytes;
    } else if (action == "free_completed") {
      const auto address = static_cast<std::uint64_t>(integer_at(e, "addr"));
      if (open.erase(address) == 0) before[address] = live_from(e, "size");
    }
  }
  for (const json& segment : segments)
    for (const json& block : array_at(segment, "blocks")) {
      if (text_at(block, "state") == "inactive") continue;
      const auto address = static_cast<std::uint64_t>(integer_at(block, "address"));
      if (open.count(address) == 0) before[address] = live_from(block, "requested_size");
    }

  // The peak (the first largest), then who holds what there: the allocating module.
  std::int64_t live_bytes = 0;
  for (const auto& [address, a] : before) live_bytes += a.bytes;
  std::int64_t peak_bytes = live_bytes;
  std::int64_t peak_event = -1;
  std::map<std::uint64_t, Live> live = before;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const json& e = trace[i];
    const std::string action = text_at(e, "action");
    if (action == "alloc") {
      const Live a = live_from(e, "size");
      live[static_cast<std::uint64_t>(integer_at(e, "addr"))] = a;
      live_bytes += a.bytes;
    } else if (action == "free_completed") {
      const auto it = live.find(static_cast<std::uint64_t>(integer_at(e, "addr")));
      if (it != live.end()) {
        live_bytes -= it->second.bytes;
        live.erase(it);
      }
    }
    if (live_bytes > peak_bytes) {
      peak_bytes = live_bytes;
      peak_event = static_cast<std::int64_t>(i);
    }
  }
  live = before;
  for (std::int64_t i = 0; i <= peak_event; ++i) {
    const json& e = trace[static_cast<std::size_t>(i)];
    const std::string action = text_at(e, "action");
    if (action == "alloc")
      live[static_cast<std::uint64_t>(integer_at(e, "addr"))] = live_from(e, "size");
    else if (action == "free_completed")
      live.erase(static_cast<std::uint64_t>(integer_at(e, "addr")));
  }
  for (const auto& [address, a] : live) row(a.module).live_at_peak_bytes += a.bytes;

  std::vector<ModuleMemory> result;
  for (auto& [module, r] : rows) result.push_back(std::move(r));
  std::sort(result.begin(), result.end(), [](const ModuleMemory& x, const ModuleMemory& y) {
    if (x.live_at_peak_bytes != y.live_at_peak_bytes)
      return x.live_at_peak_bytes > y.live_at_peak_bytes;
    if (x.allocated_bytes != y.allocated_bytes) return x.allocated_bytes > y.allocated_bytes;
    return x.module < y.module;
  });
  return result;
}

}  // namespace vramlab::lesson07
