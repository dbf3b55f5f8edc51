// Memory timeline page: parses a PyTorch-schema snapshot into compact columns, reconstructs the
// state before the first event by undoing the trace, replays it forward for the summary, and
// embeds the model into the page template (common/report/detail/memory_timeline_page.h).
#include "common/report/memory_timeline_html.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/report/category_colours.h"
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
  uint32_t label;  // index into Model::strings
  uint32_t name;   // index into Model::strings
};

struct LiveBlock {
  uint64_t size_bytes;
  uint8_t category;
  uint32_t label;
  uint32_t name;
};

using BlockMap = std::map<uint64_t, LiveBlock>;   // address -> live allocation
using SegmentMap = std::map<uint64_t, uint64_t>;  // address -> reserved bytes

struct Model {
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint32_t> string_index{{"", 0}};
  std::vector<Event> events;
  BlockMap initial_blocks;
  SegmentMap initial_segments;
  size_t inconsistent_event_count = 0;

  uint32_t intern(const std::string& text) {
    const auto [it, inserted] = string_index.emplace(text, static_cast<uint32_t>(strings.size()));
    if (inserted) strings.push_back(text);
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

// Label ("filename" or "filename:line") and tensor name from frames[0].
std::pair<uint32_t, uint32_t> frame_strings(const json& object, Model& model) {
  const json* frames = optional_field(object, "frames");
  if (frames == nullptr || !frames->is_array() || frames->empty() || !(*frames)[0].is_object())
    return {0, 0};
  const json& frame = (*frames)[0];
  std::string label;
  if (const json* filename = optional_field(frame, "filename");
      filename != nullptr && filename->is_string()) {
    label = filename->get<std::string>();
  }
  if (const uint64_t line = optional_unsigned(frame, "line"); line > 0) {
    label += ':';
    label += std::to_string(line);
  }
  std::string name;
  if (const json* value = optional_field(frame, "name"); value != nullptr && value->is_string()) {
    name = value->get<std::string>();
  }
  return {model.intern(label), model.intern(name)};
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
      const auto [label, name] = frame_strings(block, model);
      blocks[required_unsigned(block, "address", block_where)] = {size, category_index(block),
                                                                  label, name};
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
    Event event{action, 0, optional_unsigned(entry, "size"), category_index(entry), 0, 0};
    std::tie(event.label, event.name) = frame_strings(entry, model);
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
        if (!blocks
                 .emplace(event.address,
                          LiveBlock{event.size_bytes, event.category, event.label, event.name})
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
            event.address, LiveBlock{event.size_bytes, event.category, event.label, event.name});
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
  std::vector<uint32_t> labels;
  std::vector<uint32_t> names;
  for (const Event& event : model.events) {
    actions.push_back(static_cast<uint8_t>(event.action));
    addresses.push_back(event.address);
    sizes.push_back(event.size_bytes);
    event_categories.push_back(event.category);
    labels.push_back(event.label);
    names.push_back(event.name);
  }
  json initial_blocks = json::array();
  for (const auto& [address, block] : model.initial_blocks) {
    initial_blocks.push_back({address, block.size_bytes, block.category, block.label, block.name});
  }
  json initial_segments = json::array();
  for (const auto& [address, bytes] : model.initial_segments)
    initial_segments.push_back({address, bytes});
  const json* settings = optional_field(snapshot, "allocator_settings");
  return {{"title", title},
          {"categories", categories},
          {"colours", colours},
          {"actions", kActionNames},
          {"strings", model.strings},
          {"events",
           {{"action", actions},
            {"addr", addresses},
            {"size", sizes},
            {"category", event_categories},
            {"label", labels},
            {"name", names}}},
          {"initial_blocks", initial_blocks},
          {"initial_segments", initial_segments},
          {"summary", summary_json(summary)},
          {"allocator_settings", settings != nullptr ? *settings : json::object()}};
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON that is safe inside <script>: '<', '>' and '&' only occur inside JSON strings, where
// \u003c, \u003e and \u0026 mean the same characters.
std::string script_safe_json(const json& value) {
  const std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
    }
  }
  return out;
}

// Substitutes the two placeholders in one pass over the template, so a title or snapshot string
// that happens to contain a placeholder is never substituted again.
std::string fill_template(std::string_view page, std::string_view title_html,
                          std::string_view data_json) {
  std::string out;
  out.reserve(page.size() + title_html.size() + data_json.size());
  size_t at = 0;
  while (at < page.size()) {
    const size_t next = page.find("@@", at);
    if (next == std::string_view::npos) break;
    out.append(page.substr(at, next - at));
    if (page.substr(next).starts_with("@@TITLE@@")) {
      out.append(title_html);
      at = next + 9;
    } else if (page.substr(next).starts_with("@@DATA@@")) {
      out.append(data_json);
      at = next + 8;
    } else {
      out.append("@@");
      at = next + 2;
    }
  }
  out.append(page.substr(std::min(at, page.size())));
  return out;
}

}  // namespace

MemoryTimelineSummary summarize_memory_timeline(const nlohmann::json& snapshot) {
  return summarize(build_model(snapshot));
}

std::string render_memory_timeline_html(const nlohmann::json& snapshot, const std::string& title) {
  const Model model = build_model(snapshot);
  const MemoryTimelineSummary summary = summarize(model);
  return fill_template(detail::memory_timeline_page_template(), html_escape(title),
                       script_safe_json(page_model(model, summary, snapshot, title)));
}

}  // namespace vramlab::report
