/// \file
/// \brief Sequences of varying length, step by step: the lengths a text loader without packing
/// hands a training loop (each batch as long as its longest document), and their bucketing
/// (padding each length up to a multiple), the usual cure for what varying lengths do to a
/// caching allocator: every length allocates activations of its own sizes, and blocks cached
/// for one length fit the next one badly (lesson 08's fragmentation scenario).
#pragma once

#include <cstdint>

namespace vramlab::train {

/// How each step's T is drawn (`vramlab train --vary-seq MIN --bucket-seq N`).
struct SequenceLengths {
  int64_t min = 0;     ///< shortest T; 0: every step has the run's T (no variation)
  int64_t max = 0;     ///< longest T (the run's --seq)
  int64_t bucket = 1;  ///< each drawn T is padded up to a multiple of this (at most max)
  uint64_t seed = 1;   ///< the draws' stream (the run's seed)

  /// \return whether the lengths vary (min > 0).
  [[nodiscard]] bool varies() const { return min > 0; }
  /// \throws vramlab::UsageError naming the flag: min outside [1, max] when set, bucket < 1.
  void validate() const;
  /// \param step 1-based. \return step's T: uniform in [min, max] from (seed, step), padded up to
  /// a multiple of bucket and capped at max; max itself when the lengths do not vary.
  [[nodiscard]] int64_t length(int64_t step) const;
};

}  // namespace vramlab::train
