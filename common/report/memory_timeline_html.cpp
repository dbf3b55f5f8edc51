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
#include "common/report/snapshot_replay.h"

namespace vramlab::report {
namespace {

using nlohmann::json;

struct Event {
  SnapshotAction action;
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

// The replay (common/report/snapshot_replay.h) plus the interned strings and per-event columns the
// page draws from.
struct Model {
  explicit Model(const json& snapshot) : trace(snapshot, SnapshotTraceOptions{}) {}

  SnapshotTrace trace;
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint32_t> string_index{{"", 0}};
  std::vector<Event> events;
  std::map<uint64_t, LiveBlock> initial_blocks;

  uint32_t intern(const std::string& text) {
    const auto [it, inserted] = string_index.emplace(text, static_cast<uint32_t>(strings.size()));
    if (inserted) strings.push_back(text);
    return it->second;
  }
};

const json* optional_field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

uint64_t optional_unsigned(const json& object, const char* key) {
  const json* value = optional_field(object, key);
  if (value == nullptr || !value->is_number_integer()) return 0;
  if (!value->is_number_unsigned() && value->get<int64_t>() < 0) return 0;
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

Model build_model(const json& snapshot) {
  Model model(snapshot);
  model.events.reserve(model.trace.events().size());
  for (const SnapshotEvent& replayed : model.trace.events()) {
    Event event{replayed.action,
                replayed.address,
                replayed.size_bytes,
                category_index(*replayed.entry),
                0,
                0};
    std::tie(event.label, event.name) = frame_strings(*replayed.entry, model);
    model.events.push_back(event);
  }
  for (const auto& [address, block] : model.trace.initial_blocks()) {
    const auto [label, name] = frame_strings(*block.description, model);
    model.initial_blocks[address] = {block.size_bytes, category_index(*block.description), label,
                                     name};
  }
  return model;
}

MemoryTimelineSummary summarize(const Model& model) {
  MemoryTimelineSummary summary;
  summary.event_count = model.events.size();
  summary.inconsistent_event_count = model.trace.inconsistent_event_count();
  const size_t category_count = category_order().size();
  std::vector<uint64_t> by_category(category_count, 0);
  for (const auto& [address, block] : model.initial_blocks)
    by_category[block.category] += block.size_bytes;
  ReplayState state = ReplayState::initial(model.trace);
  summary.initial_allocated_bytes = state.allocated_bytes;
  summary.initial_reserved_bytes = state.reserved_bytes;
  summary.peak_allocated_bytes = state.allocated_bytes;
  summary.peak_reserved_bytes = state.reserved_bytes;
  std::vector<uint64_t> by_category_at_peak = by_category;

  const auto category_of = [&](const ReplayBlock& block) {
    return block.alloc_event >= 0 ? model.events[static_cast<size_t>(block.alloc_event)].category
                                  : category_index(*block.description);
  };
  for (size_t i = 0; i < model.events.size(); ++i) {
    const ReplayState::Change change = state.apply(model.trace, i);
    if (change.removed) by_category[category_of(*change.removed)] -= change.removed->size_bytes;
    if (change.added) by_category[category_of(*change.added)] += change.added->size_bytes;
    switch (model.events[i].action) {
      case SnapshotAction::alloc:
        ++summary.alloc_count;
        break;
      case SnapshotAction::free_completed:
        ++summary.free_count;
        break;
      case SnapshotAction::segment_alloc:
      case SnapshotAction::segment_map:
        ++summary.segment_alloc_count;
        break;
      case SnapshotAction::segment_free:
      case SnapshotAction::segment_unmap:
        ++summary.segment_free_count;
        break;
      case SnapshotAction::oom:
        ++summary.oom_count;
        break;
      case SnapshotAction::free_requested:
      case SnapshotAction::snapshot:
      case SnapshotAction::other:
        break;
    }
    if (state.allocated_bytes > summary.peak_allocated_bytes) {
      summary.peak_allocated_bytes = state.allocated_bytes;
      summary.peak_allocated_event = static_cast<int64_t>(i);
      by_category_at_peak = by_category;
    }
    if (state.reserved_bytes > summary.peak_reserved_bytes) {
      summary.peak_reserved_bytes = state.reserved_bytes;
      summary.peak_reserved_event = static_cast<int64_t>(i);
    }
  }
  summary.final_allocated_bytes = state.allocated_bytes;
  summary.final_reserved_bytes = state.reserved_bytes;
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
  for (const auto& [address, bytes] : model.trace.initial_segments())
    initial_segments.push_back({address, bytes});
  const json* settings = optional_field(snapshot, "allocator_settings");
  return {{"title", title},
          {"categories", categories},
          {"colours", colours},
          {"actions", kSnapshotActionNames},
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
