// Hand-built snapshots for the profile tests: an allocation history (some of it before recording
// began) turned into torch.cuda.memory._snapshot()'s dictionary, with vramlab's extension keys or,
// for PyTorch's own snapshots, without them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vramlab::profile::testing {

/// Who made an allocation.
struct Owner {
  std::string module;
  std::string phase;
  std::string tensor;
  std::string category = "activation";
  std::vector<std::string> functions;  ///< C++ frames' functions, innermost first
};

/// Builds one device's snapshot from allocations and frees, in order.
class SnapshotBuilder {
 public:
  /// \param vramlab_keys write module, phase, tensor and the label frame (else PyTorch's schema).
  /// \param device the device index written to segments; its trace is device_traces[device].
  explicit SnapshotBuilder(bool vramlab_keys = true, std::size_t device = 0)
      : vramlab_keys_(vramlab_keys), device_(device) {}

  /// Recording starts: allocations before this are live before the trace (or freed in it).
  void start_recording() { recording_ = true; }

  void alloc(std::uint64_t address, std::uint64_t bytes, const Owner& owner,
             std::int64_t time_ns = -1) {
    live_[address] = {bytes, owner, false};
    if (recording_) trace_.push_back(entry("alloc", address, bytes, owner, time_ns));
  }

  void free(std::uint64_t address, std::int64_t time_ns = -1) {
    const Live block = live_.at(address);
    live_.erase(address);
    if (recording_) {
      trace_.push_back(entry("free_requested", address, block.bytes, block.owner, time_ns));
      trace_.push_back(entry("free_completed", address, block.bytes, block.owner, time_ns));
    }
  }

  /// The program frees the block but a stream still uses it: free_requested only, and the block
  /// stays in the segments as active_pending_free.
  void free_request(std::uint64_t address, std::int64_t time_ns = -1) {
    Live& block = live_.at(address);
    block.pending_free = true;
    if (recording_)
      trace_.push_back(entry("free_requested", address, block.bytes, block.owner, time_ns));
  }

  /// Appends a raw trace entry (for inconsistent histories).
  void raw(nlohmann::json entry) { trace_.push_back(std::move(entry)); }

  [[nodiscard]] nlohmann::json entry(const char* action, std::uint64_t address, std::uint64_t bytes,
                                     const Owner& owner, std::int64_t time_ns) const {
    nlohmann::json item = {
        {"action", action}, {"addr", address},          {"size", bytes},
        {"stream", 0},      {"time_us", trace_.size()}, {"frames", frames(owner)}};
    if (vramlab_keys_) {
      item["category"] = owner.category;
      item["module"] = owner.module;
      item["phase"] = owner.phase;
      item["tensor"] = owner.tensor;
    }
    if (time_ns >= 0) item["time_ns"] = time_ns;
    return item;
  }

  /// The snapshot: one segment per live block (its exact size), the trace as device_traces[device].
  [[nodiscard]] nlohmann::json snapshot() const {
    nlohmann::json segments = nlohmann::json::array();
    for (const auto& [address, block] : live_) {
      nlohmann::json item = {
          {"address", address},
          {"size", block.bytes},
          {"requested_size", block.bytes},
          {"state", block.pending_free ? "active_pending_free" : "active_allocated"},
          {"frames", frames(block.owner)}};
      if (vramlab_keys_) {
        item["category"] = block.owner.category;
        item["module"] = block.owner.module;
        item["phase"] = block.owner.phase;
        item["tensor"] = block.owner.tensor;
      }
      segments.push_back({{"device", device_},
                          {"address", address},
                          {"total_size", block.bytes},
                          {"stream", 0},
                          {"segment_type", "large"},
                          {"blocks", nlohmann::json::array({item})}});
    }
    nlohmann::json traces = nlohmann::json::array();
    for (std::size_t d = 0; d < device_; ++d) traces.push_back(nlohmann::json::array());
    traces.push_back(trace_);
    return {{"segments", segments}, {"device_traces", traces}};
  }

 private:
  struct Live {
    std::uint64_t bytes;
    Owner owner;
    bool pending_free = false;
  };

  [[nodiscard]] nlohmann::json frames(const Owner& owner) const {
    nlohmann::json out = nlohmann::json::array();
    if (vramlab_keys_)
      out.push_back({{"filename", owner.module}, {"line", 0}, {"name", owner.tensor}});
    for (std::size_t i = 0; i < owner.functions.size(); ++i) {
      out.push_back({{"filename", "src/" + owner.functions[i] + ".cpp"},
                     {"line", 10 + i},
                     {"name", owner.functions[i]}});
    }
    return out;
  }

  bool vramlab_keys_;
  std::size_t device_;
  bool recording_ = false;
  std::map<std::uint64_t, Live> live_;
  nlohmann::json trace_ = nlohmann::json::array();
};

}  // namespace vramlab::profile::testing
