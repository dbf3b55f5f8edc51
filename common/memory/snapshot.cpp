// The allocator snapshot in torch.cuda.memory._snapshot()'s schema
// (torch/csrc/cuda/memory_snapshot.cpp), plus vramlab's extension keys that PyTorch's viewers
// ignore (the contract is common/profile/recording.h): "category", "module", "phase" and "tensor"
// on every block and trace entry, "time_ns" on trace entries, and while recording "frames": a
// label frame, then the allocation's C++ frames in PyTorch's {filename, line, name}.
#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/memory/caching_allocator.h"

namespace vramlab::memory {
namespace {

using nlohmann::json;

// The frames of one allocation. Viewers that show only frames (memory_viz, the HTML timeline's
// hover) name the owner from the first one: the module path as the file name, the tensor name
// as the function name. Stacks are resolved once per snapshot (\p stacks caches them).
json frames_for(const std::string& module, const std::string& tensor, StackId stack_id,
                std::unordered_map<StackId, json>& stacks) {
  json frames = json::array();
  if (module.empty() && tensor.empty() && stack_id == 0) return frames;
  frames.push_back({{"filename", module}, {"line", 0}, {"name", tensor}});
  if (stack_id == 0) return frames;
  auto [it, inserted] = stacks.try_emplace(stack_id);
  if (inserted) {
    it->second = json::array();
    for (const StackFrame& frame : resolve_call_stack(stack_id)) {
      it->second.push_back(
          {{"filename", frame.file}, {"line", frame.line}, {"name", frame.function}});
    }
  }
  for (const json& frame : it->second) frames.push_back(frame);
  return frames;
}

}  // namespace

json CachingAllocator::snapshot() {
  AllocatorLock lock(mutex_);
  const bool with_frames = record_mode_ != RecordMode::off;
  std::vector<const Block*> blocks = all_blocks_locked();
  std::int64_t total_active = 0;
  for (const Block* block : blocks) {
    if (block->allocated || block->event_count > 0) {
      total_active += static_cast<std::int64_t>(block->size);
    }
  }
  record_trace(TraceAction::snapshot, 0, static_cast<std::size_t>(total_active), 0, NoLabels{});
  std::unordered_map<StackId, json> stacks;

  json segments = json::array();
  for (const Block* head : blocks) {
    // A segment starts at a block without a predecessor; an expandable segment shows one segment
    // per contiguous mapped range.
    const bool starts_segment =
        head->expandable == nullptr
            ? head->prev == nullptr
            : head->mapped && (head->prev == nullptr || !head->prev->mapped);
    if (!starts_segment) continue;
    json segment_blocks = json::array();
    std::int64_t total = 0;
    std::int64_t allocated = 0;
    std::int64_t active = 0;
    std::int64_t requested = 0;
    for (const Block* b = head; b != nullptr && b->mapped; b = b->next) {
      const auto size = static_cast<std::int64_t>(b->size);
      const bool is_active = b->allocated || b->event_count > 0;
      total += size;
      if (b->allocated) allocated += size;
      if (is_active) {
        active += size;
        requested += static_cast<std::int64_t>(b->requested_size);
      }
      json block = {
          {"address", b->address},
          {"size", size},
          {"requested_size", is_active ? b->requested_size : 0},
          {"state",
           b->allocated ? "active_allocated" : (is_active ? "active_pending_free" : "inactive")},
          {"category", is_active ? category_name(b->category) : "other"},
          {"module", is_active ? module_path(b->module_id) : std::string()},
          {"phase", training_phase_name(is_active ? b->phase : TrainingPhase::none)},
          {"tensor", is_active ? b->name : std::string()},
      };
      block["frames"] = with_frames && is_active
                            ? frames_for(module_path(b->module_id), b->name, b->stack_id, stacks)
                            : json::array();
      segment_blocks.push_back(std::move(block));
    }
    segments.push_back({
        {"device", device_index_},
        {"address", head->address},
        {"total_size", total},
        {"allocated_size", allocated},
        {"active_size", active},
        {"requested_size", requested},
        {"stream", head->stream},
        {"segment_type", head->pool->is_small ? "small" : "large"},
        {"segment_pool_id", json::array({0, 0})},
        {"is_expandable", head->expandable != nullptr},
        {"frames", json::array()},
        {"blocks", std::move(segment_blocks)},
    });
  }

  json trace_entries = json::array();
  for (std::size_t i = 0; i < trace_.size(); ++i) {
    const TraceEntry& entry = trace_[(trace_next_ + i) % trace_.size()];
    json item = {
        {"action", trace_action_name(entry.action)},
        {entry.action == TraceAction::oom ? "device_free" : "addr", entry.address},
        {"size", entry.size},
        {"stream", entry.stream},
        {"time_us", entry.time_us},
        {"time_ns", entry.time_ns},
        {"category", category_name(entry.category)},
        {"module", entry.module},
        {"phase", training_phase_name(entry.phase)},
        {"tensor", entry.name},
        {"frames", frames_for(entry.module, entry.name, entry.stack, stacks)},
    };
    trace_entries.push_back(std::move(item));
  }
  json device_traces = json::array();
  for (std::int64_t device = 0; device < device_index_; ++device) {
    device_traces.push_back(json::array());
  }
  device_traces.push_back(std::move(trace_entries));

  json roundup = json::object();
  std::uint64_t interval_mb = 1;
  for (std::size_t divisions : config_.roundup_power2_divisions) {
    roundup[std::to_string(interval_mb)] = divisions;
    interval_mb *= 2;
  }
  const bool unlimited = config_.max_split_size_bytes == std::numeric_limits<std::size_t>::max();
  json settings = {
      {"PYTORCH_CUDA_ALLOC_CONF", config_.text},
      {"max_split_size",
       unlimited ? std::int64_t{-1} : static_cast<std::int64_t>(config_.max_split_size_bytes)},
      {"garbage_collection_threshold", config_.garbage_collection_threshold},
      {"expandable_segments", config_.expandable_segments},
      {"pinned_num_register_threads", config_.pinned_num_register_threads},
      {"release_lock_on_malloc", config_.release_lock_on_cudamalloc},
      {"pinned_use_host_register", config_.pinned_use_cuda_host_register},
      {"roundup_power2_divisions", std::move(roundup)},
  };
  return json{{"segments", std::move(segments)},
              {"device_traces", std::move(device_traces)},
              {"allocator_settings", std::move(settings)}};
}

}  // namespace vramlab::memory
