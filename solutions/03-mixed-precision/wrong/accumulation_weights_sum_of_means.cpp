// Known-wrong variant of exercise 03.3 (kept for `vramlab verify`, never linked into a lesson):
// weights every mean loss by 1, adding the means: the gradient is K times too large where the
// micro-batches are equal, and skewed where they are not.
// The exercise's tests must fail for it.
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/03-mixed-precision/api/accumulation_weights.h"

namespace vramlab::lesson03 {

std::vector<double> accumulation_loss_weights(const std::vector<int64_t>& tokens) {
  if (tokens.empty()) throw UsageError("no micro-batches: the token counts are empty");
  int64_t total = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t n = tokens[i];
    if (n < 0)
      throw UsageError("micro-batch " + std::to_string(i) + " has a negative token count " +
                       std::to_string(n));
    if (n > std::numeric_limits<int64_t>::max() - total)
      throw UsageError("the token counts overflow int64 at micro-batch " + std::to_string(i) +
                       " (" + std::to_string(n) + " tokens)");
    total += n;
  }
  if (total == 0) throw UsageError("the micro-batches hold 0 tokens in total: no mean loss");
  // The mistake: the means added, weight 1.
  std::vector<double> weights;
  weights.reserve(tokens.size());
  for (const int64_t n : tokens) weights.push_back(n > 0 ? 1.0 : 0.0);
  return weights;
}

std::vector<int64_t> split_micro_batches(int64_t sequences, int64_t micro_batches) {
  if (sequences < 1)
    throw UsageError("a batch needs at least 1 sequence, got " + std::to_string(sequences));
  if (micro_batches < 1)
    throw UsageError("gradient accumulation needs at least 1 micro-batch, got " +
                     std::to_string(micro_batches));
  if (micro_batches > sequences)
    throw UsageError(std::to_string(micro_batches) + " micro-batches for " +
                     std::to_string(sequences) + " sequences would leave one empty");
  const int64_t base = sequences / micro_batches, larger = sequences % micro_batches;
  std::vector<int64_t> sizes(static_cast<size_t>(micro_batches), base);
  for (int64_t i = 0; i < larger; ++i) ++sizes[static_cast<size_t>(i)];
  return sizes;
}

}  // namespace vramlab::lesson03
