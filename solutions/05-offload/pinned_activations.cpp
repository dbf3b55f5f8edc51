// Exercise 05.3 — reference: the host memory activation offload pins.
#include "lessons/05-offload/api/pinned_activations.h"

#include <bit>
#include <cstdint>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::lesson05 {

//! [reference]
int64_t pinned_activation_bytes(const OffloadedActivations& forward) {
  for (const SavedTensor& t : forward.layer)
    if (t.bytes < 1)
      throw UsageError("tensor '" + t.name + "': bytes must be >= 1, got " +
                       std::to_string(t.bytes));
  const auto& schedule = forward.schedule;
  const auto full = [&](size_t b) { return schedule[b].recompute == BlockRecompute::full; };
  int64_t pinned = 0;
  for (size_t b = 0; b < schedule.size(); ++b) {
    if (full(b) && !schedule[b].span_start && (b == 0 || !full(b - 1)))
      throw UsageError("block " + std::to_string(b) +
                       " recomputes in full after a block that does not: span_start must be set");
    const bool span_last = b + 1 == schedule.size() || !full(b + 1) || schedule[b + 1].span_start;
    for (const SavedTensor& t : forward.layer) {
      if (t.statistics) continue;  // stays on the device
      const bool kept = schedule[b].recompute == BlockRecompute::none ||
                        (schedule[b].recompute == BlockRecompute::selective && t.name != "att") ||
                        (full(b) && span_last && t.name == "residual3");
      // One pinned block per request, rounded up to a power of two.
      if (kept) pinned += static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(t.bytes)));
    }
  }
  return pinned;
}
//! [reference]

}  // namespace vramlab::lesson05
