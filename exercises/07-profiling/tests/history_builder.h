// Test helper of lesson 07's exercises: writes a consistent snapshot (and the module spans of a
// recording) event by event, and knows the answers because it is the program that made the
// history: what was live before recording began, the live bytes after every entry, the peak, the
// live set there, and which module scope was innermost at every free. It never reads the JSON it
// writes, so the tests' expectations do not come from a replay like the one under test.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/memory/history.h"
#include "common/profile/recording.h"

namespace vramlab::lesson07::testing {

/// Who made an allocation.
struct Owner {
  std::string module;
  std::string phase;
  std::string tensor;
};

/// One allocation as the builder knows it.
struct Made {
  std::uint64_t address = 0;
  std::int64_t bytes = 0;
  Owner owner;
  std::int64_t alloc_event = -1;  // −1: made before recording began
  bool free_requested = false;
};

/// Builds a history (see the file comment).
class HistoryBuilder {
 public:
  /// \param origin_ns the recording's origin on the steady clock (trace entries carry
  /// origin_ns + their time on the spans' axis).
  explicit HistoryBuilder(std::int64_t origin_ns = 1'700'000'000'000) : origin_ns_(origin_ns) {}

  // ---- what happens --------------------------------------------------------------------------

  /// Starts writing entries: what is live now was live before the trace.
  void start_recording() {
    recording_ = true;
    peak_bytes_ = live_bytes_;
    peak_event_ = -1;
    peak_live_ = live_;
  }

  /// Enters a module scope (its full dotted path) and opens its span.
  void enter(const std::string& module) {
    tick();
    open_spans_.push_back({module, now_ns_});
  }
  /// Leaves the innermost module scope.
  void exit() {
    tick();
    const auto [module, start] = open_spans_.back();
    open_spans_.pop_back();
    profile::Span span;
    span.kind = profile::SpanKind::module;
    span.name = module;
    span.module = module;
    span.phase = phase_ == "backward"    ? memory::TrainingPhase::backward
                 : phase_ == "optimizer" ? memory::TrainingPhase::optimizer
                                         : memory::TrainingPhase::forward;
    span.start_ns = start;
    span.end_ns = now_ns_;
    span.depth = static_cast<std::int32_t>(open_spans_.size());
    if (recording_) spans_.push_back(span);
  }
  void set_phase(const std::string& phase) { phase_ = phase; }
  [[nodiscard]] const std::string& scope() const {
    static const std::string kNone;
    return open_spans_.empty() ? kNone : open_spans_.back().first;
  }

  /// Allocates \p bytes in the current scope, at \p address (0: a fresh address).
  /// \return the address.
  std::uint64_t alloc(std::int64_t bytes, const std::string& tensor, std::uint64_t address = 0) {
    if (address == 0) address = fresh_address(bytes);
    Made made{address, bytes, {scope(), phase_, tensor}, -1, false};
    if (recording_) {
      made.alloc_event = static_cast<std::int64_t>(trace_.size());
      push_entry("alloc", made);
      allocated_in_trace_.push_back(made);
      scope_net_[scope()] += bytes;
    }
    live_[address] = made;
    live_bytes_ += bytes;
    after_entry();
    return address;
  }
  /// The caller frees the block (it stays live until free_complete).
  void free_request(std::uint64_t address) {
    Made& made = live_.at(address);
    made.free_requested = true;
    if (recording_) {
      push_entry("free_requested", made);
      scope_net_[scope()] -= made.bytes;
      if (made.owner.module != scope()) freed_by_others_[made.owner.module] += made.bytes;
      free_scopes_.insert(scope());
    }
    after_entry();
  }
  /// The block goes back to the cache.
  void free_complete(std::uint64_t address) {
    const Made made = live_.at(address);
    if (recording_) push_entry("free_completed", made);
    live_.erase(address);
    live_bytes_ -= made.bytes;
    freed_addresses_.push_back(address);
    cached_[address] = made.bytes;
    after_entry();
  }
  void free(std::uint64_t address) {
    free_request(address);
    free_complete(address);
  }
  /// An entry that changes nothing live: segment_alloc, segment_free, segment_map,
  /// segment_unmap, oom or snapshot.
  void noise(const std::string& action, std::int64_t size) {
    if (recording_) {
      tick();
      nlohmann::json e = {{"action", action},
                          {"size", size},
                          {"stream", 0},
                          {"time_us", static_cast<std::int64_t>(trace_.size())},
                          {"time_ns", origin_ns_ + now_ns_},
                          {"frames", nlohmann::json::array()}};
      if (action == "oom")
        e["device_free"] = 123456;
      else
        e["addr"] = 0x7f0000000000ULL + static_cast<std::uint64_t>(trace_.size()) * 4096;
      trace_.push_back(std::move(e));
    }
    after_entry();
  }

  /// A cached address, for reuse (0 when none).
  std::uint64_t reusable_address(std::mt19937_64& rng) const {
    std::vector<std::uint64_t> free;
    for (const auto& [address, size] : cached_)
      if (live_.count(address) == 0) free.push_back(address);
    if (free.empty()) return 0;
    return free[std::uniform_int_distribution<std::size_t>(0, free.size() - 1)(rng)];
  }

  // ---- the answers ---------------------------------------------------------------------------

  [[nodiscard]] std::int64_t peak_bytes() const { return peak_bytes_; }
  [[nodiscard]] std::int64_t peak_event() const { return peak_event_; }
  [[nodiscard]] const std::map<std::uint64_t, Made>& live_at_peak() const { return peak_live_; }
  [[nodiscard]] const std::map<std::uint64_t, Made>& live() const { return live_; }
  [[nodiscard]] const std::vector<Made>& allocated_in_trace() const { return allocated_in_trace_; }
  [[nodiscard]] const std::map<std::string, std::int64_t>& scope_net() const { return scope_net_; }
  [[nodiscard]] const std::map<std::string, std::int64_t>& freed_by_others() const {
    return freed_by_others_;
  }
  [[nodiscard]] const std::set<std::string>& free_scopes() const { return free_scopes_; }
  [[nodiscard]] std::size_t entries() const { return trace_.size(); }

  // ---- the files -----------------------------------------------------------------------------

  /// The snapshot now: live blocks (active_allocated, or active_pending_free once the caller
  /// freed them) and cached ones (inactive), in \p segment_count segments in a shuffled order.
  [[nodiscard]] nlohmann::json snapshot(std::mt19937_64& rng, int segment_count = 3) const {
    std::vector<nlohmann::json> blocks;
    for (const auto& [address, made] : live_) {
      nlohmann::json b = {
          {"address", address},
          {"size", round_up(made.bytes)},
          {"requested_size", made.bytes},
          {"state", made.free_requested ? "active_pending_free" : "active_allocated"},
          {"category", "activation"},
          {"module", made.owner.module},
          {"phase", made.owner.phase},
          {"tensor", made.owner.tensor},
          {"frames", label_frames(made.owner)}};
      blocks.push_back(std::move(b));
    }
    for (const auto& [address, size] : cached_) {
      if (live_.count(address) != 0) continue;
      blocks.push_back({{"address", address},
                        {"size", round_up(size)},
                        {"requested_size", 0},
                        {"state", "inactive"},
                        {"category", "other"},
                        {"frames", nlohmann::json::array()}});
    }
    std::shuffle(blocks.begin(), blocks.end(), rng);
    nlohmann::json segments = nlohmann::json::array();
    for (int s = 0; s < segment_count; ++s) {
      nlohmann::json segment_blocks = nlohmann::json::array();
      for (std::size_t i = static_cast<std::size_t>(s); i < blocks.size();
           i += static_cast<std::size_t>(segment_count))
        segment_blocks.push_back(blocks[i]);
      segments.push_back({{"device", 0},
                          {"address", 0x7e0000000000ULL + static_cast<std::uint64_t>(s) * 4096},
                          {"total_size", 0},
                          {"stream", 0},
                          {"segment_type", "large"},
                          {"is_expandable", s == 1},
                          {"frames", nlohmann::json::array()},
                          {"blocks", std::move(segment_blocks)}});
    }
    return {{"segments", std::move(segments)},
            {"device_traces", nlohmann::json::array({trace_})},
            {"allocator_settings", nlohmann::json::object()}};
  }

  /// The recording: the snapshot and the module spans closed while recording.
  [[nodiscard]] profile::Recording recording(std::mt19937_64& rng) const {
    profile::Recording r;
    r.snapshot = snapshot(rng);
    r.spans = spans_;
    std::sort(r.spans.begin(), r.spans.end(), [](const profile::Span& a, const profile::Span& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
    });
    r.origin_ns = origin_ns_;
    r.device = "sim:test";
    return r;
  }

 private:
  static std::int64_t round_up(std::int64_t bytes) { return (bytes + 511) / 512 * 512; }

  static nlohmann::json label_frames(const Owner& owner) {
    return nlohmann::json::array(
        {{{"filename", owner.module}, {"line", 0}, {"name", owner.tensor}},
         {{"filename", "common/nn/module.cpp"}, {"line", 42}, {"name", "vramlab::nn::forward"}}});
  }

  std::uint64_t fresh_address(std::int64_t bytes) {
    const std::uint64_t address = next_address_;
    next_address_ += static_cast<std::uint64_t>(round_up(std::max<std::int64_t>(bytes, 1)));
    return address;
  }

  void tick() { now_ns_ += 10; }

  void push_entry(const char* action, const Made& made) {
    tick();
    trace_.push_back({{"action", action},
                      {"addr", made.address},
                      {"size", made.bytes},
                      {"stream", 0},
                      {"time_us", static_cast<std::int64_t>(trace_.size())},
                      {"time_ns", origin_ns_ + now_ns_},
                      {"category", "activation"},
                      {"module", made.owner.module},
                      {"phase", made.owner.phase},
                      {"tensor", made.owner.tensor},
                      {"frames", label_frames(made.owner)}});
  }

  void after_entry() {
    if (!recording_) return;
    if (live_bytes_ > peak_bytes_) {
      peak_bytes_ = live_bytes_;
      peak_event_ = static_cast<std::int64_t>(trace_.size()) - 1;
      peak_live_ = live_;
    }
  }

  std::int64_t origin_ns_;
  std::int64_t now_ns_ = 0;
  bool recording_ = false;
  std::string phase_ = "forward";
  std::uint64_t next_address_ = 0x7f1000000000ULL;
  std::vector<std::pair<std::string, std::int64_t>> open_spans_;
  std::vector<profile::Span> spans_;
  nlohmann::json trace_ = nlohmann::json::array();
  std::map<std::uint64_t, Made> live_;
  std::map<std::uint64_t, std::int64_t> cached_;
  std::vector<std::uint64_t> freed_addresses_;
  std::int64_t live_bytes_ = 0;
  std::int64_t peak_bytes_ = 0;
  std::int64_t peak_event_ = -1;
  std::map<std::uint64_t, Made> peak_live_;
  std::vector<Made> allocated_in_trace_;
  std::map<std::string, std::int64_t> scope_net_;
  std::map<std::string, std::int64_t> freed_by_others_;
  std::set<std::string> free_scopes_;
};

/// A random history: \p before_trace events before recording starts (their allocations are live
/// before the trace, or are freed in it), then \p events entries with nested module scopes, pending
/// frees (free_requested now, free_completed later), reused addresses, equal sizes (ties at the
/// peak) and entries that change nothing live. Sizes are uniform in [1, max_bytes], or one of a few
/// shared values.
inline HistoryBuilder random_history(std::mt19937_64& rng, int before_trace, int events,
                                     std::int64_t max_bytes) {
  static const std::vector<std::string> kTop = {"transformer.wte", "blocks.0", "blocks.1",
                                                "lm_head", "loss"};
  static const std::vector<std::string> kChild = {"attn", "mlp", "ln_1"};
  static const std::vector<std::string> kNoise = {"segment_alloc", "segment_free", "segment_map",
                                                  "segment_unmap", "oom",          "snapshot"};
  static const std::vector<std::string> kPhases = {"forward", "backward", "optimizer"};
  HistoryBuilder h;
  std::uniform_int_distribution<std::int64_t> size(1, max_bytes);
  const std::vector<std::int64_t> shared = {512, 4096, max_bytes / 3 + 1};
  std::uniform_int_distribution<int> pick(0, 99);
  int tensor_index = 0;
  auto some = [&](const auto& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
  };
  auto live_where = [&](bool requested) {
    std::vector<std::uint64_t> addresses;
    for (const auto& [address, made] : h.live())
      if (made.free_requested == requested) addresses.push_back(address);
    return addresses;
  };
  for (int i = 0; i < before_trace + events; ++i) {
    if (i == before_trace) h.start_recording();
    const int roll = pick(rng);
    if (roll < 8) {
      if (h.scope().empty()) {
        h.enter(some(kTop));
      } else if (h.scope().find('.') == std::string::npos ||
                 (h.scope().starts_with("blocks.") && h.scope().size() <= 8)) {
        std::string path = h.scope();  // (not scope() + "." + …: GCC 12's -Wrestrict misfires)
        path += '.';
        path += some(kChild);
        h.enter(path);
      } else {
        h.exit();
      }
    } else if (roll < 13) {
      if (!h.scope().empty()) h.exit();
    } else if (roll < 16) {
      h.set_phase(some(kPhases));
    } else if (roll < 50) {
      const std::int64_t bytes = pick(rng) < 30 ? some(shared) : size(rng);
      const std::uint64_t reuse = pick(rng) < 40 ? h.reusable_address(rng) : 0;
      std::string tensor = "t";
      tensor += std::to_string(tensor_index++);
      h.alloc(bytes, tensor, reuse);
    } else if (roll < 68) {
      const auto addresses = live_where(false);
      if (!addresses.empty()) {
        const std::uint64_t address = some(addresses);
        if (pick(rng) < 50)
          h.free(address);
        else
          h.free_request(address);
      }
    } else if (roll < 85) {
      const auto addresses = live_where(true);
      if (!addresses.empty()) h.free_complete(some(addresses));
    } else {
      h.noise(some(kNoise), size(rng));
    }
  }
  if (before_trace + events == before_trace) h.start_recording();
  while (!h.scope().empty()) h.exit();
  return h;
}

}  // namespace vramlab::lesson07::testing
