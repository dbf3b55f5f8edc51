// Known-wrong variant of exercise 02.1 (kept for `vramlab verify`, never linked into a lesson):
// adds the bytes up in int (32 bits), which wraps around at 7B-model sizes, where one layer at
// T = 4096 already saves more than 2 GiB. The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/sqrt_spans.h"

namespace vramlab::lesson02 {

std::vector<int64_t> sqrt_span_starts(int64_t layers) {
  if (layers <= 0)
    throw UsageError("a chain needs at least one layer, got " + std::to_string(layers));
  auto k = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(layers))));
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < layers; s += k) starts.push_back(s);
  return starts;
}

int64_t checkpointed_activation_peak(const ChainShape& chain,
                                     const std::vector<int64_t>& span_starts) {
  if (chain.layers <= 0)
    throw UsageError("a chain needs at least one layer, got " + std::to_string(chain.layers));
  for (int64_t v : {chain.layer_bytes, chain.output_bytes, chain.before_bytes, chain.head_bytes})
    if (v < 0) throw UsageError("sizes must be >= 0 bytes, got " + std::to_string(v));
  if (chain.output_bytes > chain.layer_bytes)
    throw UsageError("output bytes O = " + std::to_string(chain.output_bytes) +
                     " cannot exceed F = " + std::to_string(chain.layer_bytes));
  if (span_starts.empty()) throw UsageError("no span starts: layer 0 must start one");
  if (span_starts.front() != 0)
    throw UsageError("the first span must start at layer 0, not at " +
                     std::to_string(span_starts.front()));
  for (size_t j = 0; j < span_starts.size(); ++j)
    if (span_starts[j] < 0 || span_starts[j] >= chain.layers ||
        (j > 0 && span_starts[j] <= span_starts[j - 1]))
      throw UsageError("bad span start " + std::to_string(span_starts[j]));
  // The mistake: the sizes copied into ints. (Through unsigned, so the wrap-around is defined
  // here; int arithmetic wraps the same way in practice, as undefined behaviour.)
  const auto F = static_cast<unsigned>(chain.layer_bytes),
             O = static_cast<unsigned>(chain.output_bytes),
             E = static_cast<unsigned>(chain.before_bytes),
             H = static_cast<unsigned>(chain.head_bytes);
  const auto spans = static_cast<unsigned>(span_starts.size());
  auto as_int = [](unsigned v) { return static_cast<int64_t>(static_cast<int>(v)); };
  int64_t peak = as_int(E + spans * O + H);
  for (unsigned j = 0; j < spans; ++j) {
    const auto first = static_cast<unsigned>(span_starts[j]);
    const auto end = static_cast<unsigned>(j + 1 < spans ? span_starts[j + 1] : chain.layers);
    peak = std::max(peak, as_int(E + j * O + (end - first) * F));
  }
  return peak;
}

}  // namespace vramlab::lesson02
