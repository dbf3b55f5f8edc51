// Trace action names and the interned per-thread context label stack.
#include "common/memory/history.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace vramlab::memory {
namespace {

// Interned labels: id -> text. A deque keeps references stable while it grows.
struct LabelTable {
  std::mutex mutex;
  std::deque<std::string> labels{std::string()};
  std::unordered_map<std::string, std::uint32_t> ids{{std::string(), 0}};
};

LabelTable& label_table() {
  static LabelTable table;
  return table;
}

std::uint32_t intern(const std::string& label) {
  LabelTable& table = label_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [it, inserted] = table.ids.emplace(label, static_cast<std::uint32_t>(table.labels.size()));
  if (inserted) table.labels.push_back(label);
  return it->second;
}

thread_local std::uint32_t t_context_id = 0;

}  // namespace

std::string_view trace_action_name(TraceAction action) {
  switch (action) {
    case TraceAction::alloc:
      return "alloc";
    case TraceAction::free_requested:
      return "free_requested";
    case TraceAction::free_completed:
      return "free_completed";
    case TraceAction::segment_alloc:
      return "segment_alloc";
    case TraceAction::segment_free:
      return "segment_free";
    case TraceAction::segment_map:
      return "segment_map";
    case TraceAction::segment_unmap:
      return "segment_unmap";
    case TraceAction::oom:
      return "oom";
    case TraceAction::snapshot:
      return "snapshot";
  }
  return "alloc";
}

ContextLabelScope::ContextLabelScope(std::string_view label) : previous_context_id_(t_context_id) {
  const std::string& parent = context_label(previous_context_id_);
  t_context_id = intern(parent.empty() ? std::string(label) : parent + "/" + std::string(label));
}

ContextLabelScope::~ContextLabelScope() {
  t_context_id = previous_context_id_;
}

std::uint32_t current_context_id() {
  return t_context_id;
}

const std::string& context_label(std::uint32_t context_id) {
  LabelTable& table = label_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return table.labels.at(context_id);
}

}  // namespace vramlab::memory
