// Sequences of varying length, step by step (see sequence_lengths.h).
#include "common/train/sequence_lengths.h"

#include <algorithm>
#include <string>

#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"

namespace vramlab::train {

void SequenceLengths::validate() const {
  if (varies() && (min < 1 || min > max))
    throw UsageError("--vary-seq " + std::to_string(min) + " must be in [1, --seq " +
                     std::to_string(max) + "]");
  if (bucket < 1) throw UsageError("--bucket-seq must be >= 1, got " + std::to_string(bucket));
}

int64_t SequenceLengths::length(int64_t step) const {
  if (!varies()) return max;
  const auto span = static_cast<uint64_t>(max - min + 1);
  // Two 32-bit draws make a 64-bit one; its remainder's bias is below span / 2^64.
  const uint64_t bits =
      (static_cast<uint64_t>(stochastic_bits(seed, 2 * static_cast<uint64_t>(step))) << 32) |
      stochastic_bits(seed, 2 * static_cast<uint64_t>(step) + 1);
  const int64_t drawn = min + static_cast<int64_t>(bits % span);
  return std::min(max, (drawn + bucket - 1) / bucket * bucket);
}

}  // namespace vramlab::train
