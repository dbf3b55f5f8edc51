// Snapshot replay: parses one device's trace, undoes it from the final segments to the state before
// its first event, and applies it forwards. Every number is checked, so any JSON either replays or
// gives a UsageError naming the field (these files come from users and from fuzzing).
#include "common/snapshot/snapshot_replay.h"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "common/snapshot/detail/snapshot_fields.h"

namespace vramlab::snapshot {

using nlohmann::json;

namespace detail {

const json* optional_field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool to_unsigned(const json& value, std::uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<std::uint64_t>();
    return true;
  }
  if (value.is_number_integer()) {
    const auto signed_value = value.get<std::int64_t>();
    if (signed_value < 0) return false;
    out = static_cast<std::uint64_t>(signed_value);
    return true;
  }
  if (value.is_number_float()) {
    const double number = value.get<double>();
    // 2^64 is exactly representable; anything at or above it (or NaN, or a fraction) is not a size.
    if (!(number >= 0.0) || number >= 18446744073709551616.0 || std::floor(number) != number)
      return false;
    out = static_cast<std::uint64_t>(number);
    return true;
  }
  return false;
}

std::uint64_t optional_unsigned(const json& object, const char* key) {
  const json* value = optional_field(object, key);
  std::uint64_t out = 0;
  if (value == nullptr || !to_unsigned(*value, out)) return 0;
  return out;
}

}  // namespace detail

namespace {

using detail::optional_field;
using detail::optional_unsigned;
using detail::to_unsigned;

std::uint64_t required_unsigned(const json& object, const char* key, const std::string& where) {
  const json* value = optional_field(object, key);
  std::uint64_t out = 0;
  if (value == nullptr || !to_unsigned(*value, out)) {
    throw UsageError("snapshot field '" + where + "." + key +
                     "' must be a non-negative integer, got " +
                     (value == nullptr ? std::string("nothing") : value->dump()));
  }
  return out;
}

const json& array_field(const json& object, const char* key, const std::string& where,
                        const json& empty, bool required) {
  const json* value = optional_field(object, key);
  if (value == nullptr) {
    if (required) throw UsageError("snapshot has no '" + where + "' field");
    return empty;
  }
  if (!value->is_array()) {
    throw UsageError("snapshot field '" + where + "' must be an array, got " + value->type_name());
  }
  return *value;
}

SnapshotAction parse_action(std::string_view name) {
  for (std::size_t i = 0; i + 1 < kSnapshotActionNames.size(); ++i) {
    if (name == kSnapshotActionNames[i]) return static_cast<SnapshotAction>(i);
  }
  return SnapshotAction::other;
}

bool is_active(const json& block) {
  const json* state = optional_field(block, "state");
  return state != nullptr && state->is_string() &&
         (*state == "active_allocated" || *state == "active_pending_free" ||
          *state == "active_awaiting_free");
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw UsageError("snapshot's live or reserved bytes overflow 64 bits (a size of " +
                     std::to_string(b) + " bytes on top of " + std::to_string(a) + ")");
  }
  return sum;
}

std::uint64_t total_of(const ReplaySegments& segments) {
  std::uint64_t total = 0;
  for (const auto& [address, bytes] : segments) total = checked_add(total, bytes);
  return total;
}

void apply_segment_map(ReplaySegments& segments, std::uint64_t address, std::uint64_t size_bytes) {
  // Expandable segments grow by mapping pages right after their end.
  for (auto& [segment_address, segment_bytes] : segments) {
    if (segment_address + segment_bytes == address) {
      segment_bytes = checked_add(segment_bytes, size_bytes);
      return;
    }
  }
  segments[address] = size_bytes;
}

void apply_segment_unmap(ReplaySegments& segments, std::uint64_t address,
                         std::uint64_t size_bytes) {
  const auto exact = segments.find(address);
  if (exact != segments.end() && exact->second <= size_bytes) {
    segments.erase(exact);
    return;
  }
  for (auto& [segment_address, segment_bytes] : segments) {
    if (segment_address < address && segment_bytes > size_bytes &&
        segment_address + segment_bytes == address + size_bytes) {
      segment_bytes -= size_bytes;
      return;
    }
  }
}

}  // namespace

std::uint64_t segment_device(const json& segment, const std::string& where) {
  const json* device = optional_field(segment, "device");
  std::uint64_t index = 0;
  if (device != nullptr && !to_unsigned(*device, index)) {
    throw UsageError("snapshot field '" + where + ".device' must be a device index, got " +
                     device->dump());
  }
  return index;
}

SnapshotTrace::SnapshotTrace(const json& snapshot, SnapshotTraceOptions options) {
  if (!snapshot.is_object()) {
    throw UsageError(std::string("snapshot must be a JSON object, got ") + snapshot.type_name());
  }
  const json empty = json::array();
  const json& segments = array_field(snapshot, "segments", "segments", empty, options.strict);
  ReplayBlocks blocks;
  ReplaySegments segment_bytes;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::string where = "segments[" + std::to_string(s) + "]";
    const json& segment = segments[s];
    if (!segment.is_object()) throw UsageError("snapshot field '" + where + "' must be an object");
    if (options.segments_of_device_only &&
        segment_device(segment, where) != static_cast<std::uint64_t>(options.device)) {
      continue;
    }
    segment_bytes[required_unsigned(segment, "address", where)] =
        required_unsigned(segment, "total_size", where);
    const json& segment_blocks = array_field(segment, "blocks", where + ".blocks", empty, false);
    for (std::size_t b = 0; b < segment_blocks.size(); ++b) {
      const json& block = segment_blocks[b];
      if (!is_active(block)) continue;
      const std::string block_where = where + ".blocks[" + std::to_string(b) + "]";
      const std::uint64_t requested = optional_unsigned(block, "requested_size");
      const std::uint64_t size =
          requested > 0 ? requested : required_unsigned(block, "size", block_where);
      blocks[required_unsigned(block, "address", block_where)] = {size, -1, &block};
    }
  }
  final_blocks_ = blocks;

  const json& traces =
      array_field(snapshot, "device_traces", "device_traces", empty, options.strict);
  if (options.strict && options.device >= traces.size()) {
    throw UsageError("snapshot has no trace for device " + std::to_string(options.device) +
                     ": 'device_traces' has " + std::to_string(traces.size()) + " entries");
  }
  const json& trace = options.device < traces.size() ? traces[options.device] : empty;
  const std::string trace_where = "device_traces[" + std::to_string(options.device) + "]";
  if (!trace.is_array()) {
    throw UsageError("snapshot field '" + trace_where + "' must be an array, got " +
                     trace.type_name());
  }
  events_.reserve(trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const json& entry = trace[i];
    const std::string where = trace_where + "[" + std::to_string(i) + "]";
    const json* action_field = optional_field(entry, "action");
    if (action_field == nullptr || !action_field->is_string()) {
      throw UsageError("snapshot field '" + where + ".action' must be a string");
    }
    SnapshotEvent event;
    event.action = parse_action(action_field->get_ref<const std::string&>());
    event.size_bytes = optional_unsigned(entry, "size");
    event.entry = &entry;
    switch (event.action) {
      case SnapshotAction::alloc:
      case SnapshotAction::free_requested:
      case SnapshotAction::free_completed:
      case SnapshotAction::segment_alloc:
      case SnapshotAction::segment_free:
      case SnapshotAction::segment_map:
      case SnapshotAction::segment_unmap:
        event.address = required_unsigned(entry, "addr", where);
        event.size_bytes = required_unsigned(entry, "size", where);
        break;
      case SnapshotAction::oom:
        event.address = optional_unsigned(entry, "device_free");
        break;
      case SnapshotAction::snapshot:
      case SnapshotAction::other:
        break;
    }
    events_.push_back(event);
  }

  // Undo the trace from the final state back to the state before its first event.
  for (std::size_t i = events_.size(); i-- > 0;) {
    const SnapshotEvent& event = events_[i];
    switch (event.action) {
      case SnapshotAction::alloc:
        if (blocks.erase(event.address) == 0) ++inconsistent_event_count_;
        break;
      case SnapshotAction::free_completed:
        if (!blocks.emplace(event.address, ReplayBlock{event.size_bytes, -1, event.entry}).second)
          ++inconsistent_event_count_;
        break;
      case SnapshotAction::segment_alloc:
        if (segment_bytes.erase(event.address) == 0) ++inconsistent_event_count_;
        break;
      case SnapshotAction::segment_free:
        segment_bytes[event.address] = event.size_bytes;
        break;
      case SnapshotAction::segment_map:
        apply_segment_unmap(segment_bytes, event.address, event.size_bytes);
        break;
      case SnapshotAction::segment_unmap:
        apply_segment_map(segment_bytes, event.address, event.size_bytes);
        break;
      case SnapshotAction::free_requested:
      case SnapshotAction::oom:
      case SnapshotAction::snapshot:
      case SnapshotAction::other:
        break;
    }
  }
  initial_blocks_ = std::move(blocks);
  initial_segments_ = std::move(segment_bytes);
}

ReplayState ReplayState::initial(const SnapshotTrace& trace) {
  ReplayState state;
  state.blocks = trace.initial_blocks();
  state.segments = trace.initial_segments();
  for (const auto& [address, block] : state.blocks)
    state.allocated_bytes = checked_add(state.allocated_bytes, block.size_bytes);
  state.reserved_bytes = total_of(state.segments);
  return state;
}

ReplayState::Change ReplayState::apply(const SnapshotTrace& trace, std::size_t index) {
  const SnapshotEvent& event = trace.events().at(index);
  Change change;
  switch (event.action) {
    case SnapshotAction::alloc: {
      // An alloc over a live address (a lost free) replaces the block rather than counting both.
      const ReplayBlock block{event.size_bytes, static_cast<std::int64_t>(index), event.entry};
      auto [it, inserted] = blocks.try_emplace(event.address, block);
      if (!inserted) {
        allocated_bytes -= it->second.size_bytes;
        change.removed = it->second;
        it->second = block;
      }
      allocated_bytes = checked_add(allocated_bytes, block.size_bytes);
      change.added = block;
      break;
    }
    case SnapshotAction::free_completed: {
      const auto it = blocks.find(event.address);
      if (it != blocks.end()) {
        allocated_bytes -= it->second.size_bytes;
        change.removed = it->second;
        blocks.erase(it);
      }
      break;
    }
    case SnapshotAction::segment_alloc:
      segments[event.address] = event.size_bytes;
      change.reserved = true;
      break;
    case SnapshotAction::segment_free:
      segments.erase(event.address);
      change.reserved = true;
      break;
    case SnapshotAction::segment_map:
      apply_segment_map(segments, event.address, event.size_bytes);
      change.reserved = true;
      break;
    case SnapshotAction::segment_unmap:
      apply_segment_unmap(segments, event.address, event.size_bytes);
      change.reserved = true;
      break;
    case SnapshotAction::free_requested:
    case SnapshotAction::oom:
    case SnapshotAction::snapshot:
    case SnapshotAction::other:
      break;
  }
  if (change.reserved) reserved_bytes = total_of(segments);
  return change;
}

}  // namespace vramlab::snapshot
