// Known-wrong variant of exercise 06.1 (kept for `vramlab verify`, never linked into a lesson):
// loops over n / block_size whole blocks, dropping the shorter last block.
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/06-flash-attention/api/online_softmax.h"

namespace vramlab::lesson06 {

SoftmaxStats online_softmax_step(SoftmaxStats running, std::span<const float> block) {
  float new_max = running.max;
  for (const float s : block) new_max = std::max(new_max, s);
  if (new_max == -std::numeric_limits<float>::infinity()) return SoftmaxStats{new_max, 0.0f};
  float sum = running.sum * std::exp(running.max - new_max);
  for (const float s : block) sum += std::exp(s - new_max);
  return SoftmaxStats{new_max, sum};
}

OnlineSoftmax online_softmax(std::span<const float> scores, int64_t block_size) {
  if (block_size < 1)
    throw UsageError("online_softmax: block_size must be >= 1, got " + std::to_string(block_size));
  const auto n = static_cast<int64_t>(scores.size());
  OnlineSoftmax result;
  SoftmaxStats stats;
  for (int64_t start = 0; start + block_size <= n; start += block_size) {
    const int64_t length = std::min(block_size, n - start);
    stats = online_softmax_step(
        stats, scores.subspan(static_cast<size_t>(start), static_cast<size_t>(length)));
    result.after_block.push_back(stats);
  }
  result.lse =
      stats.sum > 0.0f ? stats.max + std::log(stats.sum) : -std::numeric_limits<float>::infinity();
  return result;
}

}  // namespace vramlab::lesson06
