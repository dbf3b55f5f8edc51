// Snapshot analysis: the peak, what was live there and who owns it, and what grew between two
// snapshots, on top of the one snapshot replay (common/snapshot/snapshot_replay.h).
#include "common/snapshot/snapshot_analysis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "common/snapshot/snapshot_replay.h"

namespace vramlab::snapshot {
namespace {

using nlohmann::json;
using snapshot::ReplayBlock;
using snapshot::ReplayState;
using snapshot::SnapshotTrace;
using snapshot::SnapshotTraceOptions;

std::string string_field(const json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t as_bytes(std::uint64_t bytes) {
  if (bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw UsageError("snapshot holds " + std::to_string(bytes) +
                     " bytes in one place, more than a signed 64-bit count");
  }
  return static_cast<std::int64_t>(bytes);
}

// vramlab's entries carry module, phase and tensor, and their frames[0] is a label frame; PyTorch's
// have none of these keys and every frame is a real one.
bool has_extension_keys(const json& object) {
  return object.is_object() &&
         (object.contains("module") || object.contains("phase") || object.contains("tensor"));
}

std::vector<memory::StackFrame> frames_of(const json& object) {
  std::vector<memory::StackFrame> frames;
  if (!object.is_object()) return frames;
  const auto it = object.find("frames");
  if (it == object.end() || !it->is_array()) return frames;
  const std::size_t first = has_extension_keys(object) ? 1 : 0;
  for (std::size_t i = first; i < it->size(); ++i) {
    const json& frame = (*it)[i];
    if (!frame.is_object()) continue;
    memory::StackFrame out;
    out.function = string_field(frame, "name");
    out.file = string_field(frame, "filename");
    const auto line = frame.find("line");
    if (line != frame.end() && line->is_number_integer()) out.line = line->get<std::int64_t>();
    frames.push_back(std::move(out));
  }
  return frames;
}

Allocation describe(std::uint64_t address, const ReplayBlock& block) {
  Allocation allocation;
  allocation.address = address;
  allocation.bytes = as_bytes(block.size_bytes);
  allocation.alloc_event = block.alloc_event;
  const json& description = *block.description;
  allocation.tensor = string_field(description, "tensor");
  allocation.module = string_field(description, "module");
  allocation.phase = string_field(description, "phase");
  allocation.category = string_field(description, "category");
  allocation.frames = frames_of(description);
  const auto state = description.find("state");
  allocation.pending_free = state != description.end() && state->is_string() &&
                            (*state == "active_pending_free" || *state == "active_awaiting_free");
  return allocation;
}

// "vramlab::nn::Mlp::backward(vramlab::nn::Runtime&, ...) const" → "vramlab::nn::Mlp::backward":
// demangled C++ signatures make stack keys unreadable, and the qualified name already says which
// function it is. The argument list is the last balanced "(...)"; what follows it (const, &, a
// trailing return type) goes with it. Names without one (Python frames, "??") are kept.
std::string without_arguments(const std::string& function) {
  const std::size_t close = function.rfind(')');
  if (close == std::string::npos) return function;
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (function[i] == ')') ++depth;
    if (function[i] == '(' && --depth == 0) {
      std::string name = function.substr(0, i);
      // "operator()" without arguments after it is a name, not a call.
      return name.empty() || name.ends_with("operator") ? function : name;
    }
  }
  return function;
}

std::string stack_key(const std::vector<memory::StackFrame>& frames) {
  if (frames.empty()) return "(no stack)";
  std::string key;
  for (std::size_t i = 0; i < std::min(frames.size(), kStackKeyFrames); ++i) {
    if (i > 0) key += " ← ";
    key += frames[i].function.empty() ? "?" : without_arguments(frames[i].function);
  }
  return key;
}

void sort_largest_first(std::vector<Allocation>& allocations) {
  std::sort(allocations.begin(), allocations.end(), [](const Allocation& a, const Allocation& b) {
    return std::tie(b.bytes, a.alloc_event, a.address) <
           std::tie(a.bytes, b.alloc_event, b.address);
  });
}

template <typename KeyOf>
std::vector<ByteGroup> group_by(const std::vector<Allocation>& allocations, KeyOf key_of) {
  std::map<std::string, ByteGroup> groups;
  for (const Allocation& allocation : allocations) {
    std::string key = key_of(allocation);
    if (key.empty()) key = "(none)";
    ByteGroup& group = groups[key];
    group.key = key;
    group.bytes += allocation.bytes;  // the live set's total fits (checked by the replay)
    ++group.count;
  }
  std::vector<ByteGroup> out;
  out.reserve(groups.size());
  for (auto& [key, group] : groups) out.push_back(std::move(group));
  std::stable_sort(out.begin(), out.end(),
                   [](const ByteGroup& a, const ByteGroup& b) { return a.bytes > b.bytes; });
  return out;
}

void require_segments(const json& snapshot) {
  if (!snapshot.is_object()) {
    throw UsageError(std::string("snapshot must be a JSON object, got ") + snapshot.type_name());
  }
  if (!snapshot.contains("segments")) throw UsageError("snapshot has no 'segments' field");
}

}  // namespace

PeakReport analyse_peak(const json& snapshot, std::size_t device) {
  const SnapshotTrace trace(
      snapshot,
      SnapshotTraceOptions{.device = device, .segments_of_device_only = true, .strict = true});
  const ReplayState initial = ReplayState::initial(trace);
  PeakReport report;
  std::uint64_t peak = initial.allocated_bytes;
  {
    ReplayState state = initial;
    for (std::size_t i = 0; i < trace.events().size(); ++i) {
      state.apply(trace, i);
      if (state.allocated_bytes > peak) {
        peak = state.allocated_bytes;
        report.peak_event = static_cast<std::int64_t>(i);
      }
    }
  }
  report.peak_bytes = as_bytes(peak);

  // Replay again up to the peak: cheaper than copying the live set at every new maximum.
  ReplayState at_peak = initial;
  for (std::int64_t i = 0; i <= report.peak_event; ++i) {
    const ReplayState::Change change = at_peak.apply(trace, static_cast<std::size_t>(i));
    if (i == report.peak_event && change.added) {
      report.peak_owner =
          describe(trace.events()[static_cast<std::size_t>(i)].address, *change.added);
    }
  }
  report.live_at_peak.reserve(at_peak.blocks.size());
  for (const auto& [address, block] : at_peak.blocks)
    report.live_at_peak.push_back(describe(address, block));
  sort_largest_first(report.live_at_peak);
  report.by_module = group_by(report.live_at_peak, [](const Allocation& a) { return a.module; });
  report.by_phase = group_by(report.live_at_peak, [](const Allocation& a) { return a.phase; });
  report.by_category =
      group_by(report.live_at_peak, [](const Allocation& a) { return a.category; });
  report.by_stack =
      group_by(report.live_at_peak, [](const Allocation& a) { return stack_key(a.frames); });
  return report;
}

std::vector<Allocation> live_allocations(const json& snapshot) {
  require_segments(snapshot);
  // Each device's final blocks, replayed through its own trace so that the ones allocated during
  // the trace know their alloc event.
  std::set<std::uint64_t> devices = {0};
  if (const auto traces = snapshot.find("device_traces");
      traces != snapshot.end() && traces->is_array()) {
    for (std::size_t d = 0; d < traces->size(); ++d) devices.insert(d);
  }
  const json& segments = snapshot["segments"];
  if (segments.is_array()) {
    for (std::size_t s = 0; s < segments.size(); ++s)
      devices.insert(snapshot::segment_device(segments[s], "segments[" + std::to_string(s) + "]"));
  }
  std::vector<Allocation> live;
  std::uint64_t total = 0;
  for (const std::uint64_t device : devices) {
    if (device > std::numeric_limits<std::size_t>::max()) continue;
    const SnapshotTrace trace(snapshot,
                              SnapshotTraceOptions{.device = static_cast<std::size_t>(device),
                                                   .segments_of_device_only = true,
                                                   .strict = false});
    ReplayState state = ReplayState::initial(trace);
    for (std::size_t i = 0; i < trace.events().size(); ++i) state.apply(trace, i);
    for (const auto& [address, block] : trace.final_blocks()) {
      const auto replayed = state.blocks.find(address);
      const bool same =
          replayed != state.blocks.end() && replayed->second.size_bytes == block.size_bytes;
      ReplayBlock described = block;
      if (same) described.alloc_event = replayed->second.alloc_event;
      if (__builtin_add_overflow(total, block.size_bytes, &total) ||
          total > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw UsageError("snapshot's live bytes overflow a signed 64-bit count");
      }
      live.push_back(describe(address, described));
    }
  }
  sort_largest_first(live);
  return live;
}

std::vector<Growth> compare_snapshots(const json& before, const json& after) {
  using Owner = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Owner, Growth> owners;
  const auto add = [&](const std::vector<Allocation>& live, bool is_after) {
    for (const Allocation& allocation : live) {
      if (allocation.pending_free) continue;
      std::string stack = stack_key(allocation.frames);
      Growth& growth = owners[{allocation.module, allocation.tensor, allocation.category, stack}];
      growth.module = allocation.module;
      growth.tensor = allocation.tensor;
      growth.category = allocation.category;
      growth.stack = std::move(stack);
      (is_after ? growth.count_after : growth.count_before) += 1;
      (is_after ? growth.bytes_after : growth.bytes_before) += allocation.bytes;
    }
  };
  add(live_allocations(before), false);
  add(live_allocations(after), true);
  std::vector<Growth> changed;
  for (auto& [owner, growth] : owners) {
    if (growth.bytes_before != growth.bytes_after || growth.count_before != growth.count_after)
      changed.push_back(std::move(growth));
  }
  // Both totals fit in int64 (live_allocations checks), so their difference does too.
  std::stable_sort(changed.begin(), changed.end(), [](const Growth& a, const Growth& b) {
    const std::int64_t grow_a = a.bytes_after - a.bytes_before;
    const std::int64_t grow_b = b.bytes_after - b.bytes_before;
    if (grow_a != grow_b) return grow_a > grow_b;
    return a.count_after - a.count_before > b.count_after - b.count_before;
  });
  return changed;
}

}  // namespace vramlab::snapshot
