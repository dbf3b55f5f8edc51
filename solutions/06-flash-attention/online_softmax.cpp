// Reference solution of exercise 06.1: the online softmax of one row
// (lessons/06-flash-attention/api/online_softmax.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/06-flash-attention/api/online_softmax.h"

namespace vramlab::lesson06 {

//! [reference]
SoftmaxStats online_softmax_step(SoftmaxStats running, std::span<const float> block) {
  float new_max = running.max;
  for (const float s : block) new_max = std::max(new_max, s);
  // Nothing but −inf so far: exp(−inf − (−inf)) would be NaN, and there is nothing to add.
  if (new_max == -std::numeric_limits<float>::infinity()) return SoftmaxStats{new_max, 0.0f};
  // The old terms were exp(s − m_old); measured from the new max they are exp(s − m_new), that
  // is exp(m_old − m_new) ≤ 1 times as large (0 when m_old is −inf and ℓ was 0).
  float sum = running.sum * std::exp(running.max - new_max);
  for (const float s : block) sum += std::exp(s - new_max);  // every term ≤ 1: no overflow
  return SoftmaxStats{new_max, sum};
}

OnlineSoftmax online_softmax(std::span<const float> scores, int64_t block_size) {
  if (block_size < 1)
    throw UsageError("online_softmax: block_size must be >= 1, got " + std::to_string(block_size));
  const auto n = static_cast<int64_t>(scores.size());
  OnlineSoftmax result;
  SoftmaxStats stats;
  for (int64_t start = 0; start < n; start += block_size) {
    const int64_t length = std::min(block_size, n - start);  // the last block may be shorter
    stats = online_softmax_step(
        stats, scores.subspan(static_cast<size_t>(start), static_cast<size_t>(length)));
    result.after_block.push_back(stats);
  }
  result.lse =
      stats.sum > 0.0f ? stats.max + std::log(stats.sum) : -std::numeric_limits<float>::infinity();
  return result;
}
//! [reference]

}  // namespace vramlab::lesson06
