// memory_stats() keys and the resets.
#include "common/memory/memory_stats.h"

#include <algorithm>

namespace vramlab::memory {
namespace {

constexpr const char* kStatTypeNames[3] = {"all", "small_pool", "large_pool"};

void reset_stat_peak(Stat& stat) {
  stat.peak = stat.current;
}
void reset_stat_accumulated(Stat& stat) {
  stat.allocated = 0;
  stat.freed = 0;
}

template <typename Function>
void for_each_stat_array(DeviceStats& stats, Function&& function) {
  for (StatArray* array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
                           &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                           &stats.inactive_split_bytes, &stats.requested_bytes}) {
    function(*array);
  }
}

template <typename Function>
void for_each_stat(DeviceStats& stats, Function&& function) {
  for_each_stat_array(stats, [&](StatArray& array) {
    for (Stat& stat : array) function(stat);
  });
  function(stats.oversize_allocations);
  function(stats.oversize_segments);
}

void add_stat(std::vector<std::pair<std::string, std::int64_t>>& out, const std::string& prefix,
              const Stat& stat) {
  out.emplace_back(prefix + ".current", stat.current);
  out.emplace_back(prefix + ".peak", stat.peak);
  out.emplace_back(prefix + ".allocated", stat.allocated);
  out.emplace_back(prefix + ".freed", stat.freed);
}

}  // namespace

void DeviceStats::reset_peak() {
  for_each_stat(*this, reset_stat_peak);
}

void DeviceStats::reset_accumulated() {
  for_each_stat(*this, reset_stat_accumulated);
  num_alloc_retries = 0;
  num_ooms = 0;
  num_sync_all_streams = 0;
  num_device_alloc = 0;
  num_device_free = 0;
}

DeviceStats with_aggregate_sums(DeviceStats pool_stats) {
  for_each_stat_array(pool_stats, [](StatArray& array) {
    Stat& all = array[kAggregate];
    const Stat& small = array[kSmallPool];
    const Stat& large = array[kLargePool];
    all.current = small.current + large.current;
    all.allocated = small.allocated + large.allocated;
    all.freed = small.freed + large.freed;
  });
  return pool_stats;
}

void reset_pool_stats_peak(DeviceStats& pool_stats) {
  pool_stats.reset_peak();
  for_each_stat_array(pool_stats, [](StatArray& array) {
    array[kAggregate].peak = array[kSmallPool].current + array[kLargePool].current;
  });
}

std::vector<std::pair<std::string, std::int64_t>> DeviceStats::to_key_values() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  const std::pair<const char*, const StatArray*> arrays[] = {
      {"allocation", &allocation},
      {"segment", &segment},
      {"active", &active},
      {"inactive_split", &inactive_split},
      {"allocated_bytes", &allocated_bytes},
      {"reserved_bytes", &reserved_bytes},
      {"active_bytes", &active_bytes},
      {"inactive_split_bytes", &inactive_split_bytes},
      {"requested_bytes", &requested_bytes},
  };
  for (const auto& [name, array] : arrays) {
    for (std::size_t type = 0; type < 3; ++type) {
      add_stat(out, std::string(name) + "." + kStatTypeNames[type], (*array)[type]);
    }
  }
  add_stat(out, "oversize_allocations", oversize_allocations);
  add_stat(out, "oversize_segments", oversize_segments);
  out.emplace_back("num_alloc_retries", num_alloc_retries);
  out.emplace_back("num_ooms", num_ooms);
  out.emplace_back("num_sync_all_streams", num_sync_all_streams);
  out.emplace_back("num_device_alloc", num_device_alloc);
  out.emplace_back("num_device_free", num_device_free);
  out.emplace_back("max_split_size", max_split_size);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vramlab::memory
