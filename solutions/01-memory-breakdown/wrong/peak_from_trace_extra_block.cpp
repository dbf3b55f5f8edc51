// Known-wrong variant of exercise 01.3 (kept for `vramlab verify`, never linked into a lesson):
// rounds up by adding a block to n / 512, which over-counts sizes that are already multiples of
// 512 B. The exercise's tests must fail for it.
#include <algorithm>
#include <map>
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/peak_from_trace.h"

namespace vramlab::lesson01 {

PeakReport find_peak(const std::vector<TraceEvent>& trace) {
  std::map<std::string, int64_t> live;  // name -> rounded bytes
  int64_t current_bytes = 0;
  PeakReport report;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& event = trace[i];
    const std::string where = "event " + std::to_string(i) + " ('" + event.name + "')";
    if (event.action == TraceAction::kAlloc) {
      if (event.size_bytes < 0)
        throw UsageError(where + ": negative size " + std::to_string(event.size_bytes));
      if (live.count(event.name) != 0) throw UsageError(where + ": allocated while already live");
      // The mistake: n / 512 + 1 blocks, one too many when 512 divides n.
      const int64_t rounded =
          event.size_bytes == 0
              ? 0
              : (event.size_bytes / kAllocationRoundingBytes + 1) * kAllocationRoundingBytes;
      live[event.name] = rounded;
      current_bytes += rounded;
    } else {
      const auto it = live.find(event.name);
      if (it == live.end()) throw UsageError(where + ": freed but not live");
      current_bytes -= it->second;
      live.erase(it);
    }
    if (current_bytes > report.peak_bytes) {  // strictly higher: keep the first moment
      report.peak_bytes = current_bytes;
      report.peak_event_index = static_cast<int64_t>(i);
      report.live_at_peak.clear();
      for (const auto& [name, bytes] : live)  // the map is sorted by name
        if (bytes > 0) report.live_at_peak.push_back(name);
    }
  }
  return report;
}

}  // namespace vramlab::lesson01
