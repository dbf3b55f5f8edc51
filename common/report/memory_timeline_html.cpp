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

#include <nlohmann/json.hpp>

#include "common/report/category_colours.h"
#include "common/report/detail/html_page.h"
#include "common/report/detail/memory_timeline_page.h"
#include "common/report/xml_escape.h"
#include "common/snapshot/detail/snapshot_fields.h"
#include "common/snapshot/snapshot_replay.h"

namespace vramlab::report {

using snapshot::kSnapshotActionNames;
using snapshot::ReplayBlock;
using snapshot::ReplayState;
using snapshot::SnapshotAction;
using snapshot::SnapshotEvent;
using snapshot::SnapshotTrace;
using snapshot::SnapshotTraceOptions;
namespace {

using nlohmann::json;
using snapshot::detail::optional_field;
using snapshot::detail::optional_unsigned;

struct Event {
  SnapshotAction action;
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

// The replay (common/snapshot/snapshot_replay.h) plus the interned strings and per-event columns
// the page draws from.
struct Model {
  explicit Model(const json& snapshot) : trace(snapshot, SnapshotTraceOptions{}) {}

  SnapshotTrace trace;
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint32_t> string_index{{"", 0}};
  std::vector<Frame> frames;
  std::map<Frame, uint32_t> frame_index;
  std::vector<std::vector<uint32_t>> stacks{{}};  // frame indices, innermost first; 0 = none
  std::map<std::vector<uint32_t>, uint32_t> stack_index{{{}, 0}};
  std::vector<Owner> owners{Owner{}};  // 0 = nothing known
  std::map<Owner, uint32_t> owner_index{{Owner{}, 0}};
  std::vector<Event> events;
  std::map<uint64_t, LiveBlock> initial_blocks;

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

Model build_model(const json& snapshot) {
  Model model(snapshot);
  model.events.reserve(model.trace.events().size());
  for (const SnapshotEvent& replayed : model.trace.events()) {
    model.events.push_back(Event{replayed.action, replayed.address, replayed.size_bytes,
                                 category_index(*replayed.entry),
                                 owner_of(*replayed.entry, model)});
  }
  for (const auto& [address, block] : model.trace.initial_blocks()) {
    model.initial_blocks[address] = {block.size_bytes, category_index(*block.description),
                                     owner_of(*block.description, model)};
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
  for (const auto& [address, bytes] : model.trace.initial_segments())
    initial_segments.push_back({address, bytes});
  const json* settings = optional_field(snapshot, "allocator_settings");
  return {{"title", title},
          {"categories", categories},
          {"colours", colours},
          {"actions", kSnapshotActionNames},
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
      detail::memory_timeline_page_template(), xml_escape(title),
      detail::script_safe_json(page_model(model, summary, snapshot, title)));
}

}  // namespace vramlab::report
