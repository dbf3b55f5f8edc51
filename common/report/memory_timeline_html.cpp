// Memory timeline page: parses a PyTorch-schema snapshot into compact columns, reconstructs the
// state before the first event by undoing the trace, replays it forward for the summary, and
// embeds the model into the page template (common/report/detail/memory_timeline_page.h).
//
// Who made an allocation (its tensor, module, phase and call stack) is interned as an "owner":
// a training step repeats the same few hundred stacks thousands of times, so the page carries one
// table of distinct frames, one of distinct stacks (frame indices) and one of distinct owners, and
// every event refers to its owner by index. That keeps a 10,000-allocation page small.
#include "common/report/memory_timeline_html.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/report/category_colours.h"
#include "common/report/detail/html_page.h"
#include "common/report/detail/memory_timeline_page.h"

namespace vramlab::report {
namespace {

using nlohmann::json;

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
  kSnapshot,
  kOther,
};
constexpr std::array<const char*, 10> kActionNames = {
    "alloc",        "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map",    "segment_unmap",  "oom",
    "snapshot",     "other"};

Action parse_action(std::string_view name) {
  for (size_t i = 0; i + 1 < kActionNames.size(); ++i) {
    if (name == kActionNames[i]) return static_cast<Action>(i);
  }
  return Action::kOther;
}

struct Event {
  Action action;
  uint64_t address;  // "addr"; for oom events "device_free"
  uint64_t size_bytes;
  uint8_t category;
  uint32_t owner;  // index into Model::owners
};

struct LiveBlock {
  uint64_t size_bytes;
  uint8_t category;
  uint32_t owner;
};

// Indices into Model::strings (tensor, module, phase) and Model::stacks (stack).
struct Owner {
  uint32_t tensor = 0;
  uint32_t module = 0;
  uint32_t phase = 0;
  uint32_t stack = 0;
  auto operator<=>(const Owner&) const = default;
};

// One C++ (or Python) frame: indices into Model::strings for the file and the function.
struct Frame {
  uint32_t filename = 0;
  uint64_t line = 0;
  uint32_t name = 0;
  auto operator<=>(const Frame&) const = default;
};

using BlockMap = std::map<uint64_t, LiveBlock>;   // address -> live allocation
using SegmentMap = std::map<uint64_t, uint64_t>;  // address -> reserved bytes

struct Model {
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint32_t> string_index{{"", 0}};
  std::vector<Frame> frames;
  std::map<Frame, uint32_t> frame_index;
  std::vector<std::vector<uint32_t>> stacks{{}};  // frame indices, innermost first; 0 = none
  std::map<std::vector<uint32_t>, uint32_t> stack_index{{{}, 0}};
  std::vector<Owner> owners{Owner{}};  // 0 = nothing known
  std::map<Owner, uint32_t> owner_index{{Owner{}, 0}};
  std::vector<Event> events;
  BlockMap initial_blocks;
  SegmentMap initial_segments;
  size_t inconsistent_event_count = 0;

  uint32_t intern(const std::string& text) {
    const auto [it, inserted] = string_index.emplace(text, static_cast<uint32_t>(strings.size()));
    if (inserted) strings.push_back(text);
    return it->second;
  }

  template <typename Key>
  static uint32_t intern_in(std::vector<Key>& table, std::map<Key, uint32_t>& index, Key key) {
    const auto [it, inserted] = index.emplace(key, static_cast<uint32_t>(table.size()));
    if (inserted) table.push_back(std::move(key));
    return it->second;
  }
};

std::string type_name(const json& value) {
  return value.type_name();
}

const json* optional_field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

uint64_t required_unsigned(const json& object, const char* key, const std::string& where) {
  const json* value = optional_field(object, key);
  if (value == nullptr || !value->is_number() ||
      (value->is_number_integer() && value->get<int64_t>() < 0 && !value->is_number_unsigned())) {
    throw std::invalid_argument("snapshot field '" + where + "." + key +
                                "' must be a non-negative number, got " +
                                (value == nullptr ? std::string("nothing") : value->dump()));
  }
  if (value->is_number_float()) return static_cast<uint64_t>(std::max(0.0, value->get<double>()));
  return value->get<uint64_t>();
}

uint64_t optional_unsigned(const json& object, const char* key) {
  const json* value = optional_field(object, key);
  if (value == nullptr || !value->is_number()) return 0;
  if (value->is_number_float()) return static_cast<uint64_t>(std::max(0.0, value->get<double>()));
  if (value->is_number_integer() && !value->is_number_unsigned() && value->get<int64_t>() < 0)
    return 0;
  return value->get<uint64_t>();
}

uint8_t category_index(const json& object) {
  const json* value = optional_field(object, "category");
  const std::vector<std::string>& order = category_order();
  const auto other = static_cast<uint8_t>(order.size() - 1);
  if (value == nullptr || !value->is_string()) return other;
  std::string lower = value->get<std::string>();
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto it = std::find(order.begin(), order.end(), lower);
  return it == order.end() ? other : static_cast<uint8_t>(it - order.begin());
}

std::string optional_string(const json& object, const char* key) {
  const json* value = optional_field(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The owner of a block or trace entry. Three dialects of "frames":
// - vramlab with the extension keys (module, phase, tensor; common/profile/recording.h):
//   frames[0] is a label frame {filename: module, name: tensor}, the C++ frames follow;
// - older vramlab (category but none of those keys): frames[0] is the only frame,
//   {filename: label stack such as "forward/block3/attention", name: tensor};
// - PyTorch: every frame is a real one (Python and C++), innermost first.
uint32_t owner_of(const json& object, Model& model) {
  const bool extended = optional_field(object, "module") != nullptr ||
                        optional_field(object, "phase") != nullptr ||
                        optional_field(object, "tensor") != nullptr;
  const bool has_label_frame = extended || optional_field(object, "category") != nullptr;
  std::string tensor = optional_string(object, "tensor");
  std::string module = optional_string(object, "module");
  const json* frames = optional_field(object, "frames");
  std::vector<uint32_t> stack;
  if (frames != nullptr && frames->is_array()) {
    size_t first = 0;
    if (has_label_frame && !frames->empty() && (*frames)[0].is_object()) {
      first = 1;
      const json& label_frame = (*frames)[0];
      if (module.empty()) {
        module = optional_string(label_frame, "filename");
        if (const uint64_t line = optional_unsigned(label_frame, "line");
            line > 0 && !module.empty())
          module += ':' + std::to_string(line);
      }
      if (tensor.empty()) tensor = optional_string(label_frame, "name");
    }
    stack.reserve(frames->size() - std::min(first, frames->size()));
    for (size_t f = first; f < frames->size(); ++f) {
      const json& frame = (*frames)[f];
      if (!frame.is_object()) continue;
      const Frame key{model.intern(optional_string(frame, "filename")),
                      optional_unsigned(frame, "line"),
                      model.intern(optional_string(frame, "name"))};
      stack.push_back(Model::intern_in(model.frames, model.frame_index, key));
    }
  }
  Owner owner;
  owner.tensor = model.intern(tensor);
  owner.module = model.intern(module);
  owner.phase = model.intern(optional_string(object, "phase"));
  owner.stack = Model::intern_in(model.stacks, model.stack_index, std::move(stack));
  return Model::intern_in(model.owners, model.owner_index, owner);
}

const json& required_array(const json& object, const char* key, const std::string& where,
                           const json& empty) {
  const json* value = optional_field(object, key);
  if (value == nullptr) return empty;
  if (!value->is_array()) {
    throw std::invalid_argument("snapshot field '" + where + "' must be an array, got " +
                                type_name(*value));
  }
  return *value;
}

void apply_segment_map(SegmentMap& segments, uint64_t address, uint64_t size_bytes) {
  // Expandable segments grow by mapping pages right after their end.
  for (auto& [segment_address, segment_bytes] : segments) {
    if (segment_address + segment_bytes == address) {
      segment_bytes += size_bytes;
      return;
    }
  }
  segments[address] = size_bytes;
}

void apply_segment_unmap(SegmentMap& segments, uint64_t address, uint64_t size_bytes) {
  const auto exact = segments.find(address);
  if (exact != segments.end() && exact->second <= size_bytes) {
    segments.erase(exact);
    return;
  }
  for (auto& [segment_address, segment_bytes] : segments) {
    if (segment_address < address && segment_address + segment_bytes == address + size_bytes) {
      segment_bytes -= size_bytes;
      return;
    }
  }
}

Model build_model(const json& snapshot) {
  if (!snapshot.is_object()) {
    throw std::invalid_argument("snapshot must be a JSON object, got " + type_name(snapshot));
  }
  Model model;
  const json empty = json::array();
  const json& segments = required_array(snapshot, "segments", "segments", empty);
  BlockMap blocks;
  SegmentMap segment_bytes;
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string where = "segments[" + std::to_string(s) + "]";
    const json& segment = segments[s];
    if (!segment.is_object())
      throw std::invalid_argument("snapshot field '" + where + "' must be an object");
    segment_bytes[required_unsigned(segment, "address", where)] =
        required_unsigned(segment, "total_size", where);
    const json& segment_blocks = required_array(segment, "blocks", where + ".blocks", empty);
    for (size_t b = 0; b < segment_blocks.size(); ++b) {
      const json& block = segment_blocks[b];
      const std::string block_where = where + ".blocks[" + std::to_string(b) + "]";
      const json* state = optional_field(block, "state");
      const bool active = state != nullptr && state->is_string() &&
                          (*state == "active_allocated" || *state == "active_pending_free" ||
                           *state == "active_awaiting_free");
      if (!active) continue;
      const uint64_t requested = optional_unsigned(block, "requested_size");
      const uint64_t size =
          requested > 0 ? requested : required_unsigned(block, "size", block_where);
      blocks[required_unsigned(block, "address", block_where)] = {size, category_index(block),
                                                                  owner_of(block, model)};
    }
  }

  const json& traces = required_array(snapshot, "device_traces", "device_traces", empty);
  const json& trace = traces.empty() ? empty : traces[0];
  if (!trace.is_array()) {
    throw std::invalid_argument("snapshot field 'device_traces[0]' must be an array, got " +
                                type_name(trace));
  }
  model.events.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const json& entry = trace[i];
    const std::string where = "device_traces[0][" + std::to_string(i) + "]";
    const json* action_field = optional_field(entry, "action");
    if (action_field == nullptr || !action_field->is_string()) {
      throw std::invalid_argument("snapshot field '" + where + ".action' must be a string");
    }
    const Action action = parse_action(action_field->get_ref<const std::string&>());
    Event event{action, 0, optional_unsigned(entry, "size"), category_index(entry),
                owner_of(entry, model)};
    switch (action) {
      case Action::kAlloc:
      case Action::kFreeRequested:
      case Action::kFreeCompleted:
      case Action::kSegmentAlloc:
      case Action::kSegmentFree:
      case Action::kSegmentMap:
      case Action::kSegmentUnmap:
        event.address = required_unsigned(entry, "addr", where);
        event.size_bytes = required_unsigned(entry, "size", where);
        break;
      case Action::kOom:
        event.address = optional_unsigned(entry, "device_free");
        break;
      case Action::kSnapshot:
      case Action::kOther:
        break;
    }
    model.events.push_back(event);
  }

  // Undo the trace from the final state back to the state before its first event.
  for (size_t i = model.events.size(); i-- > 0;) {
    const Event& event = model.events[i];
    switch (event.action) {
      case Action::kAlloc:
        if (blocks.erase(event.address) == 0) ++model.inconsistent_event_count;
        break;
      case Action::kFreeCompleted:
        if (!blocks.emplace(event.address, LiveBlock{event.size_bytes, event.category, event.owner})
                 .second) {
          ++model.inconsistent_event_count;
        }
        break;
      case Action::kSegmentAlloc:
        if (segment_bytes.erase(event.address) == 0) ++model.inconsistent_event_count;
        break;
      case Action::kSegmentFree:
        segment_bytes[event.address] = event.size_bytes;
        break;
      case Action::kSegmentMap:
        apply_segment_unmap(segment_bytes, event.address, event.size_bytes);
        break;
      case Action::kSegmentUnmap:
        apply_segment_map(segment_bytes, event.address, event.size_bytes);
        break;
      case Action::kFreeRequested:
      case Action::kOom:
      case Action::kSnapshot:
      case Action::kOther:
        break;
    }
  }
  model.initial_blocks = std::move(blocks);
  model.initial_segments = std::move(segment_bytes);
  return model;
}

MemoryTimelineSummary summarize(const Model& model) {
  MemoryTimelineSummary summary;
  summary.event_count = model.events.size();
  summary.inconsistent_event_count = model.inconsistent_event_count;
  const size_t category_count = category_order().size();
  std::vector<uint64_t> by_category(category_count, 0);
  BlockMap blocks = model.initial_blocks;
  SegmentMap segments = model.initial_segments;
  uint64_t allocated = 0;
  uint64_t reserved = 0;
  for (const auto& [address, block] : blocks) {
    allocated += block.size_bytes;
    by_category[block.category] += block.size_bytes;
  }
  for (const auto& [address, bytes] : segments) reserved += bytes;
  summary.initial_allocated_bytes = allocated;
  summary.initial_reserved_bytes = reserved;
  summary.peak_allocated_bytes = allocated;
  summary.peak_reserved_bytes = reserved;
  std::vector<uint64_t> by_category_at_peak = by_category;

  auto reserved_total = [&] {
    uint64_t total = 0;
    for (const auto& [address, bytes] : segments) total += bytes;
    return total;
  };
  for (size_t i = 0; i < model.events.size(); ++i) {
    const Event& event = model.events[i];
    switch (event.action) {
      case Action::kAlloc: {
        ++summary.alloc_count;
        const auto [it, inserted] = blocks.insert_or_assign(
            event.address, LiveBlock{event.size_bytes, event.category, event.owner});
        (void)it;
        (void)inserted;
        allocated += event.size_bytes;
        by_category[event.category] += event.size_bytes;
        break;
      }
      case Action::kFreeCompleted: {
        ++summary.free_count;
        const auto it = blocks.find(event.address);
        if (it != blocks.end()) {
          allocated -= it->second.size_bytes;
          by_category[it->second.category] -= it->second.size_bytes;
          blocks.erase(it);
        }
        break;
      }
      case Action::kSegmentAlloc:
        ++summary.segment_alloc_count;
        segments[event.address] = event.size_bytes;
        reserved = reserved_total();
        break;
      case Action::kSegmentFree:
        ++summary.segment_free_count;
        segments.erase(event.address);
        reserved = reserved_total();
        break;
      case Action::kSegmentMap:
        ++summary.segment_alloc_count;
        apply_segment_map(segments, event.address, event.size_bytes);
        reserved = reserved_total();
        break;
      case Action::kSegmentUnmap:
        ++summary.segment_free_count;
        apply_segment_unmap(segments, event.address, event.size_bytes);
        reserved = reserved_total();
        break;
      case Action::kOom:
        ++summary.oom_count;
        break;
      case Action::kFreeRequested:
      case Action::kSnapshot:
      case Action::kOther:
        break;
    }
    if (allocated > summary.peak_allocated_bytes) {
      summary.peak_allocated_bytes = allocated;
      summary.peak_allocated_event = static_cast<int64_t>(i);
      by_category_at_peak = by_category;
    }
    if (reserved > summary.peak_reserved_bytes) {
      summary.peak_reserved_bytes = reserved;
      summary.peak_reserved_event = static_cast<int64_t>(i);
    }
  }
  summary.final_allocated_bytes = allocated;
  summary.final_reserved_bytes = reserved;
  for (size_t c = 0; c < category_count; ++c) {
    if (by_category_at_peak[c] > 0)
      summary.peak_allocated_bytes_by_category[category_order()[c]] = by_category_at_peak[c];
  }
  return summary;
}

json summary_json(const MemoryTimelineSummary& summary) {
  return {{"event_count", summary.event_count},
          {"initial_allocated_bytes", summary.initial_allocated_bytes},
          {"initial_reserved_bytes", summary.initial_reserved_bytes},
          {"final_allocated_bytes", summary.final_allocated_bytes},
          {"final_reserved_bytes", summary.final_reserved_bytes},
          {"peak_allocated_bytes", summary.peak_allocated_bytes},
          {"peak_allocated_event", summary.peak_allocated_event},
          {"peak_reserved_bytes", summary.peak_reserved_bytes},
          {"peak_reserved_event", summary.peak_reserved_event},
          {"alloc_count", summary.alloc_count},
          {"free_count", summary.free_count},
          {"segment_alloc_count", summary.segment_alloc_count},
          {"segment_free_count", summary.segment_free_count},
          {"oom_count", summary.oom_count},
          {"inconsistent_event_count", summary.inconsistent_event_count},
          {"peak_allocated_bytes_by_category", summary.peak_allocated_bytes_by_category}};
}

json page_model(const Model& model, const MemoryTimelineSummary& summary, const json& snapshot,
                const std::string& title) {
  json categories = json::array();
  json colours = json::array();
  for (const std::string& category : category_order()) {
    categories.push_back(category);
    colours.push_back(category_colour(category));
  }
  // Columns rather than one object per event: 100k events stay a few MB.
  std::vector<uint8_t> actions;
  std::vector<uint64_t> addresses;
  std::vector<uint64_t> sizes;
  std::vector<uint8_t> event_categories;
  std::vector<uint32_t> owners;
  for (const Event& event : model.events) {
    actions.push_back(static_cast<uint8_t>(event.action));
    addresses.push_back(event.address);
    sizes.push_back(event.size_bytes);
    event_categories.push_back(event.category);
    owners.push_back(event.owner);
  }
  json initial_blocks = json::array();
  for (const auto& [address, block] : model.initial_blocks) {
    initial_blocks.push_back({address, block.size_bytes, block.category, block.owner});
  }
  json frames = json::array();
  for (const Frame& frame : model.frames)
    frames.push_back({frame.filename, frame.line, frame.name});
  json owner_table = json::array();
  for (const Owner& owner : model.owners)
    owner_table.push_back({owner.tensor, owner.module, owner.phase, owner.stack});
  json initial_segments = json::array();
  for (const auto& [address, bytes] : model.initial_segments)
    initial_segments.push_back({address, bytes});
  const json* settings = optional_field(snapshot, "allocator_settings");
  return {{"title", title},
          {"categories", categories},
          {"colours", colours},
          {"actions", kActionNames},
          {"strings", model.strings},
          {"frames", frames},
          {"stacks", model.stacks},
          {"owners", owner_table},
          {"events",
           {{"action", actions},
            {"addr", addresses},
            {"size", sizes},
            {"category", event_categories},
            {"owner", owners}}},
          {"initial_blocks", initial_blocks},
          {"initial_segments", initial_segments},
          {"summary", summary_json(summary)},
          {"allocator_settings", settings != nullptr ? *settings : json::object()}};
}

}  // namespace

MemoryTimelineSummary summarize_memory_timeline(const nlohmann::json& snapshot) {
  return summarize(build_model(snapshot));
}

std::string render_memory_timeline_html(const nlohmann::json& snapshot, const std::string& title) {
  const Model model = build_model(snapshot);
  const MemoryTimelineSummary summary = summarize(model);
  return detail::fill_template(
      detail::memory_timeline_page_template(), detail::html_escape(title),
      detail::script_safe_json(page_model(model, summary, snapshot, title)));
}

}  // namespace vramlab::report
