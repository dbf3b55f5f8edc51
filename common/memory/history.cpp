// Trace action names, training phases, and the per-thread phase and interned module path.
#include "common/memory/history.h"

#include <array>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

// Interned module paths: id -> text. A deque keeps references stable while it grows, so
// module_path() can hand one out after releasing the lock.
struct ModuleTable {
  std::mutex mutex;
  std::deque<std::string> paths{std::string()};
  std::unordered_map<std::string, std::uint32_t> ids{{std::string(), 0}};
};

ModuleTable& module_table() {
  static ModuleTable table;
  return table;
}

// The path of \p name inside \p parent_id, interned.
std::uint32_t intern_child(std::uint32_t parent_id, std::string_view name) {
  ModuleTable& table = module_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  const std::string& parent = table.paths[parent_id];
  std::string path;
  path.reserve(parent.size() + 1 + name.size());
  if (!parent.empty()) path.append(parent).push_back('.');
  path.append(name);
  auto [it, inserted] = table.ids.emplace(std::move(path), 0);
  if (inserted) {
    it->second = static_cast<std::uint32_t>(table.paths.size());
    table.paths.push_back(it->first);
  }
  return it->second;
}

thread_local TrainingPhase t_phase = TrainingPhase::none;
thread_local std::uint32_t t_module_id = 0;
thread_local ScopeListener* t_listener = nullptr;

constexpr std::array kPhases = {TrainingPhase::none,      TrainingPhase::setup,
                                TrainingPhase::forward,   TrainingPhase::backward,
                                TrainingPhase::recompute, TrainingPhase::optimizer,
                                TrainingPhase::evaluation};

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

std::string_view training_phase_name(TrainingPhase phase) {
  switch (phase) {
    case TrainingPhase::none:
      return "none";
    case TrainingPhase::setup:
      return "setup";
    case TrainingPhase::forward:
      return "forward";
    case TrainingPhase::backward:
      return "backward";
    case TrainingPhase::recompute:
      return "recompute";
    case TrainingPhase::optimizer:
      return "optimizer";
    case TrainingPhase::evaluation:
      return "evaluation";
  }
  return "none";
}

TrainingPhase parse_training_phase(std::string_view name) {
  for (const TrainingPhase phase : kPhases) {
    if (training_phase_name(phase) == name) return phase;
  }
  throw UsageError("unknown training phase '" + std::string(name) +
                   "' (expected none, setup, forward, backward, recompute or optimizer)");
}

PhaseScope::PhaseScope(TrainingPhase phase) : previous_(t_phase) {
  t_phase = phase;
  if (t_listener != nullptr) t_listener->phase_changed(phase);
}

PhaseScope::~PhaseScope() {
  t_phase = previous_;
  if (t_listener != nullptr) t_listener->phase_changed(previous_);
}

ModuleScope::ModuleScope(std::string_view name) : previous_module_id_(t_module_id) {
  if (name.empty() || name.front() == '.' || name.back() == '.')
    throw UsageError("module scope name '" + std::string(name) +
                     "' must be one or more dotted levels, e.g. \"blocks.3\" or \"attn\"");
  t_module_id = intern_child(previous_module_id_, name);
  if (t_listener != nullptr) t_listener->module_entered(t_module_id);
}

ModuleScope::~ModuleScope() {
  if (t_listener != nullptr) t_listener->module_exited(t_module_id);
  t_module_id = previous_module_id_;
}

TrainingPhase current_phase() {
  return t_phase;
}

std::uint32_t current_module_id() {
  return t_module_id;
}

const std::string& module_path(std::uint32_t module_id) {
  ModuleTable& table = module_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return table.paths.at(module_id);
}

ScopeListener* set_scope_listener(ScopeListener* listener) {
  ScopeListener* previous = t_listener;
  t_listener = listener;
  return previous;
}

}  // namespace vramlab::memory
