// Known-wrong variant of exercise 02.1 (kept for `vramlab verify`, never linked into a lesson):
// takes k = ⌊√L⌋ layers per span instead of ⌈√L⌉, so a non-square L gets one span too many.
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/sqrt_spans.h"

namespace vramlab::lesson02 {

namespace {

int64_t checked_multiply(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    throw UsageError("activation peak overflows int64 (" + std::to_string(a) + " x " +
                     std::to_string(b) + " bytes)");
  return a * b;
}

int64_t checked_sum(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b)
    throw UsageError("activation peak overflows int64 (" + std::to_string(a) + " + " +
                     std::to_string(b) + " bytes)");
  return a + b;
}

void require_non_negative(int64_t value, const char* what) {
  if (value < 0)
    throw UsageError(std::string(what) + " must be >= 0 bytes, got " + std::to_string(value));
}

void require_layers(int64_t layers) {
  if (layers <= 0)
    throw UsageError("a chain needs at least one layer, got " + std::to_string(layers));
}

}  // namespace

std::vector<int64_t> sqrt_span_starts(int64_t layers) {
  require_layers(layers);
  // The mistake: the square root rounded down.
  const auto k = static_cast<int64_t>(std::sqrt(static_cast<double>(layers)));
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < layers; s += k) {
    starts.push_back(s);
    if (s > layers - k) break;  // s + k would pass L (or overflow)
  }
  return starts;
}

int64_t checkpointed_activation_peak(const ChainShape& chain,
                                     const std::vector<int64_t>& span_starts) {
  const int64_t L = chain.layers, F = chain.layer_bytes, O = chain.output_bytes,
                E = chain.before_bytes, H = chain.head_bytes;
  require_layers(L);
  require_non_negative(F, "layer bytes F");
  require_non_negative(O, "output bytes O");
  require_non_negative(E, "bytes before the first layer E");
  require_non_negative(H, "head bytes H");
  if (O > F)
    throw UsageError("output bytes O = " + std::to_string(O) +
                     " cannot exceed the layer's saved bytes F = " + std::to_string(F));
  if (span_starts.empty()) throw UsageError("no span starts: layer 0 must start one");
  if (span_starts.front() != 0)
    throw UsageError("the first span must start at layer 0, not at " +
                     std::to_string(span_starts.front()));
  for (size_t j = 0; j < span_starts.size(); ++j) {
    const int64_t s = span_starts[j];
    if (s < 0 || s >= L)
      throw UsageError("span start " + std::to_string(s) + " outside [0, " + std::to_string(L) +
                       ")");
    if (j > 0 && s <= span_starts[j - 1])
      throw UsageError("span start " + std::to_string(s) + " does not follow " +
                       std::to_string(span_starts[j - 1]) + " (ascending, no repeats)");
  }

  const auto spans = static_cast<int64_t>(span_starts.size());
  // End of forward: E, one checkpoint per span, and the head on top.
  int64_t peak = checked_sum(checked_sum(E, checked_multiply(spans, O)), H);
  for (int64_t j = 0; j < spans; ++j) {
    const int64_t first = span_starts[static_cast<size_t>(j)];
    const int64_t end = j + 1 < spans ? span_starts[static_cast<size_t>(j + 1)] : L;
    // Below span j lie E and the j checkpoints of the spans before it.
    const int64_t below = checked_sum(E, checked_multiply(j, O));
    // Backward: its own checkpoint released, the whole span re-run, saving F per layer.
    peak = std::max(peak, checked_sum(below, checked_multiply(end - first, F)));
    // Forward: a layer runs beside the previous output of its span (never more than the
    // re-run above when O ≤ F; kept so the timeline is complete).
    peak = std::max(peak, checked_sum(below, checked_sum(F, end - first > 1 ? O : 0)));
  }
  return peak;
}

}  // namespace vramlab::lesson02
