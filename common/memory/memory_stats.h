/// \file
/// \brief The allocator's statistics, with torch.cuda.memory_stats()'s keys and update rules.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/memory/memory_category.h"

namespace vramlab::memory {

/// One statistic: inc adds to current and allocated and raises peak; dec lowers current and adds to
/// freed (PyTorch's increase_stat / decrease_stat).
struct Stat {
  std::int64_t current = 0;    ///< value now
  std::int64_t peak = 0;       ///< highest current since the last reset_peak
  std::int64_t allocated = 0;  ///< sum of increases since the last reset_accumulated
  std::int64_t freed = 0;      ///< sum of decreases since the last reset_accumulated

  /// \param amount non-negative (bytes or a count, as the stat is).
  void increase(std::int64_t amount) {
    current += amount;
    if (current > peak) peak = current;
    allocated += amount;
  }
  /// \param amount non-negative; peak stays.
  void decrease(std::int64_t amount) {
    current -= amount;
    freed += amount;
  }
};

/// Which pools a statistic is kept for: all, small_pool, large_pool.
enum StatType : std::size_t {
  kAggregate = 0,  ///< "all"
  kSmallPool = 1,  ///< "small_pool"
  kLargePool = 2,  ///< "large_pool"
};

/// A statistic per StatType.
using StatArray = std::array<Stat, 3>;

/// Every counter of one device's caching allocator.
struct DeviceStats {
  StatArray allocation;                   ///< number of allocated blocks
  StatArray segment;                      ///< number of segments (cudaMalloc'd)
  StatArray active;                       ///< allocated blocks plus blocks waiting on stream events
  StatArray inactive_split;               ///< free blocks inside split segments
  StatArray allocated_bytes;              ///< bytes of allocated blocks (rounded sizes)
  StatArray reserved_bytes;               ///< bytes of segments
  StatArray active_bytes;                 ///< bytes of active blocks
  StatArray inactive_split_bytes;         ///< bytes of inactive split blocks ("non-releasable")
  StatArray requested_bytes;              ///< bytes the callers asked for
  Stat oversize_allocations;              ///< allocated blocks ≥ max_split_size
  Stat oversize_segments;                 ///< segments ≥ max_split_size
  std::int64_t num_alloc_retries = 0;     ///< cudaMalloc retries after flushing the cache
  std::int64_t num_ooms = 0;              ///< out-of-memory errors thrown
  std::int64_t num_sync_all_streams = 0;  ///< synchronize_and_free_events calls
  std::int64_t num_device_alloc = 0;      ///< cudaMalloc + cuMemMap calls
  std::int64_t num_device_free = 0;       ///< cudaFree + cuMemUnmap calls
  std::int64_t max_split_size = -1;       ///< the setting, −1 when unlimited

  /// Sets every peak to its current value (torch.cuda.reset_peak_memory_stats).
  void reset_peak();
  /// Zeroes the allocated/freed totals and the num_* counters
  /// (torch.cuda.reset_accumulated_memory_stats).
  void reset_accumulated();
  /// \return the (key, value) pairs of torch.cuda.memory_stats(), sorted by key, e.g.
  ///         ("allocated_bytes.all.current", 512).
  std::vector<std::pair<std::string, std::int64_t>> to_key_values() const;
};

/// Adds \p amount to the pool statistic \p stats[\p type] and raises the "all" peak to the pools'
/// sum (see with_aggregate_sums).
/// \param stats one StatArray of DeviceStats.
/// \param type kSmallPool or kLargePool.
/// \param amount non-negative.
inline void increase_pool_stat(StatArray& stats, std::size_t type, std::int64_t amount) {
  stats[type].increase(amount);
  const std::int64_t all = stats[kSmallPool].current + stats[kLargePool].current;
  if (all > stats[kAggregate].peak) stats[kAggregate].peak = all;
}

/// Subtracts \p amount from the pool statistic \p stats[\p type] (see with_aggregate_sums).
/// \param stats one StatArray of DeviceStats.
/// \param type kSmallPool or kLargePool.
/// \param amount non-negative.
inline void decrease_pool_stat(StatArray& stats, std::size_t type, std::int64_t amount) {
  stats[type].decrease(amount);
}

/// Completes statistics kept per pool. Every StatArray's "all" entry holds only its peak (the peak
/// of a sum is not the sum of the peaks); its current, allocated and freed are the pools' sums.
/// \param pool_stats statistics kept with increase_pool_stat and decrease_pool_stat.
/// \return the same statistics with every "all" entry complete.
DeviceStats with_aggregate_sums(DeviceStats pool_stats);

/// Sets every peak of statistics kept per pool to its current value; an "all" peak becomes the
/// pools' current sum (DeviceStats::reset_peak would read the unkept "all" current).
/// \param pool_stats statistics kept with increase_pool_stat and decrease_pool_stat.
void reset_pool_stats_peak(DeviceStats& pool_stats);

/// Current and peak bytes per memory category (vramlab's addition to PyTorch's stats).
struct CategoryStats {
  /// Bytes allocated (rounded block sizes) per category, indexed by MemoryCategory.
  std::array<Stat, kMemoryCategoryCount> allocated_bytes;
  /// Bytes the callers asked for per category (PyTorch's requested_bytes, split by category):
  /// what a formula counts, free of the 512-byte rounding (the ZeRO lesson compares each rank's
  /// model states with the formula to the byte).
  std::array<Stat, kMemoryCategoryCount> requested_bytes;

  /// Indexes allocated_bytes by the enum's value, so no cast at call sites.
  const Stat& of(MemoryCategory category) const {
    return allocated_bytes[static_cast<std::size_t>(category)];
  }
  /// Indexes requested_bytes by the enum's value.
  const Stat& requested(MemoryCategory category) const {
    return requested_bytes[static_cast<std::size_t>(category)];
  }
};

}  // namespace vramlab::memory
