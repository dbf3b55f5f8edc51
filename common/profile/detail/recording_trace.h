// Which of a recording's device traces is its own, shared by the per-op table and the Chrome trace.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>

namespace vramlab::profile::detail {

// A Recording profiles one Runtime, so one device; its allocator pads "device_traces" with empty
// traces for the devices below its own. The recording's trace is the first non-empty one (device
// 0 when every trace is empty or the key is missing).
inline std::size_t recording_trace_device(const nlohmann::json& snapshot) {
  if (!snapshot.is_object()) return 0;
  const auto traces = snapshot.find("device_traces");
  if (traces == snapshot.end() || !traces->is_array()) return 0;
  std::size_t device = 0;
  for (const nlohmann::json& trace : *traces) {
    if (trace.is_array() && !trace.empty()) return device;
    ++device;
  }
  return 0;
}

}  // namespace vramlab::profile::detail
