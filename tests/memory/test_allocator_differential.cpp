// Allocator differential fuzzing (issue 20): millions of random operations — allocations of every
// size class (below 512 B, the 512 B and 1 MiB boundaries, the small pool, the large pool's 20 MiB
// and rounded segments, oversize blocks, requests larger than the device), frees, four streams
// with record_stream and per-stream and whole-device syncs, empty_cache, set_config changes
// (max_split_size_mb, roundup_power2_divisions, expandable_segments switched on and off) and
// out-of-memory errors on small devices — against a simple independent model of what the
// statistics must be: per pool (small, large, all) the allocation and active counts, the
// allocated, active and requested bytes with torch's current/peak/allocated/freed rules, the
// number of out-of-memory errors, and what must hold of reserved memory. The allocator's own
// check_invariants() runs after every operation. The test prints the operations and the time.
//   build/tests/bin/test_allocator_differential
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kMiB;

#if defined(VRAMLAB_SANITIZE) || !defined(NDEBUG)
constexpr std::int64_t kOperationScale = 20;  // sanitizer and Debug builds are ~20x slower
#else
constexpr std::int64_t kOperationScale = 1;
#endif

constexpr StreamId kStreams = 4;

/// torch's increase_stat / decrease_stat and the resets, written again here from their definition
/// (c10/core/Allocator.h, Stat): the model must not share code with what it checks.
struct ModelStat {
  std::int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void increase(std::int64_t amount) {
    current += amount;
    peak = std::max(peak, current);
    allocated += amount;
  }
  void decrease(std::int64_t amount) {
    current -= amount;
    freed += amount;
  }
};

/// One statistic for "all", "small_pool" and "large_pool"; the pool is decided by the block size
/// (a block of at most 1 MiB lives in the small pool: PyTorch's kSmallSize rule).
struct PoolStats {
  std::array<ModelStat, 3> by_type;  // indexed by StatType
  void increase(bool small, std::int64_t amount) {
    by_type[kAggregate].increase(amount);
    by_type[small ? kSmallPool : kLargePool].increase(amount);
  }
  void decrease(bool small, std::int64_t amount) {
    by_type[kAggregate].decrease(amount);
    by_type[small ? kSmallPool : kLargePool].decrease(amount);
  }
  void reset_peak() {
    for (ModelStat& stat : by_type) stat.peak = stat.current;
  }
  void reset_accumulated() {
    for (ModelStat& stat : by_type) stat.allocated = stat.freed = 0;
  }
};

/// What a caller of the allocator knows, and nothing of its internals.
struct Allocation {
  std::size_t requested = 0;
  std::size_t size = 0;  // the block's size, taken once at malloc
  bool small = false;
  std::set<StreamId> used_by;  // record_stream's other streams
};

class Model {
 public:
  PoolStats allocation, active, allocated_bytes, active_bytes, requested_bytes;
  std::int64_t ooms = 0;
  std::int64_t sync_all_streams = 0;  // empty_cache and every flush before a retry
  std::map<Block*, Allocation> live;
  /// The live blocks in the order of their allocation (a random pick from a map keyed by address
  /// would depend on where the heap put the Blocks, and a seed would not replay a failure).
  std::vector<Block*> order;
  /// Freed blocks that wait for other streams: the streams still to sync, per block.
  std::map<Block*, std::pair<Allocation, std::set<StreamId>>> pending;

  void on_malloc(Block* block, std::size_t requested) {
    Allocation a{requested, block->size, block->size <= kSmallSize, {}};
    live.emplace(block, a);
    order.push_back(block);
    count_in(a);
  }
  /// free(): the allocation ends now; active and requested end when the other streams are done.
  void on_free(Block* block) {
    const auto it = live.find(block);
    const Allocation a = it->second;
    live.erase(it);
    *std::find(order.begin(), order.end(), block) = order.back();
    order.pop_back();
    allocation.decrease(a.small, 1);
    allocated_bytes.decrease(a.small, static_cast<std::int64_t>(a.size));
    if (a.used_by.empty()) {
      count_out_active(a);
    } else {
      pending.emplace(block, std::make_pair(a, a.used_by));
    }
  }
  void on_sync(StreamId stream) {
    for (auto& [block, entry] : pending) entry.second.erase(stream);
  }
  void on_sync_all() {
    for (auto& [block, entry] : pending) entry.second.clear();
  }
  /// malloc() first frees the pending blocks whose streams are all done.
  void process_completed() {
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second.second.empty()) {
        count_out_active(it->second.first);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  /// empty_cache() and the flush before a retry wait for every stream and free every pending block.
  void free_all_pending() {
    on_sync_all();
    process_completed();
  }
  void reset_peak() {
    for (PoolStats* s : all()) s->reset_peak();
  }
  void reset_accumulated() {
    for (PoolStats* s : all()) s->reset_accumulated();
    ooms = 0;
    sync_all_streams = 0;
  }

 private:
  std::array<PoolStats*, 5> all() {
    return {&allocation, &active, &allocated_bytes, &active_bytes, &requested_bytes};
  }
  void count_in(const Allocation& a) {
    allocation.increase(a.small, 1);
    active.increase(a.small, 1);
    allocated_bytes.increase(a.small, static_cast<std::int64_t>(a.size));
    active_bytes.increase(a.small, static_cast<std::int64_t>(a.size));
    requested_bytes.increase(a.small, static_cast<std::int64_t>(a.requested));
  }
  void count_out_active(const Allocation& a) {
    active.decrease(a.small, 1);
    active_bytes.decrease(a.small, static_cast<std::int64_t>(a.size));
    requested_bytes.decrease(a.small, static_cast<std::int64_t>(a.requested));
  }
};

const char* kTypeNames[] = {"all", "small_pool", "large_pool"};

void expect_same(const PoolStats& want, const StatArray& got, const char* name) {
  for (std::size_t type = 0; type < 3; ++type) {
    const ModelStat& w = want.by_type[type];
    const Stat& g = got[type];
    EXPECT_TRUE(w.current == g.current && w.peak == g.peak && w.allocated == g.allocated &&
                w.freed == g.freed)
        << name << "." << kTypeNames[type] << " current/peak/allocated/freed: model " << w.current
        << "/" << w.peak << "/" << w.allocated << "/" << w.freed << ", allocator " << g.current
        << "/" << g.peak << "/" << g.allocated << "/" << g.freed;
  }
}

/// The configurations set_config switches between (PYTORCH_CUDA_ALLOC_CONF strings).
const std::vector<std::string> kConfigs = {
    "",
    "max_split_size_mb:24",
    "max_split_size_mb:40,max_non_split_rounding_mb:30",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:[1:8,4:2,>:1]",
    "expandable_segments:True",
    "expandable_segments:True,roundup_power2_divisions:2",
};

struct Totals {
  std::int64_t operations = 0, mallocs = 0, frees = 0, ooms = 0, config_changes = 0,
               empty_caches = 0, retries = 0;
};

/// The size of one request: every size class, its boundaries, and some beyond the device.
std::size_t random_size(std::mt19937_64& rng, std::uint64_t capacity) {
  const std::uint64_t kind = rng() % 1000;
  if (kind < 150) return 1 + rng() % 511;                        // below the 512 B minimum
  if (kind < 170) return 512 * (1 + rng() % 4) + rng() % 3 - 1;  // around 512 B multiples
  if (kind < 450) return 1 + rng() % (256 * 1024);               // the small pool
  if (kind < 500) return kSmallSize - 2 + rng() % 5;             // around the 1 MiB boundary
  if (kind < 800) return kSmallSize + rng() % (9 * kMiB);        // large pool, 20 MiB segments
  if (kind < 960) return 10 * kMiB + rng() % (20 * kMiB);        // rounded-to-2 MiB segments
  if (kind < 995) return 24 * kMiB + rng() % (40 * kMiB);        // oversize, flushes
  return capacity - kMiB + rng() % (4 * kMiB);                   // around the whole device
}

Totals run(std::uint64_t seed, std::int64_t operations, std::uint64_t capacity) {
  auto allocator = testing::make_meta_allocator(capacity);
  std::mt19937_64 rng(seed);
  Model model;
  Totals totals;
  AllocatorConfig config = allocator->config();
  for (std::int64_t op = 0; op < operations; ++op) {
    const std::uint64_t choice = rng() % 1000;
    const auto stream = static_cast<StreamId>(rng() % kStreams);
    std::string what;
    if (choice < 450 && model.live.size() < 64) {
      const std::size_t size = random_size(rng, capacity);
      what = "malloc " + std::to_string(size) + " on stream " + std::to_string(stream);
      model.process_completed();
      const DeviceStats before = allocator->stats();
      const std::int64_t syncs_before = before.num_sync_all_streams;
      try {
        Block* block = allocator->malloc(size, stream);
        ++totals.mallocs;
        EXPECT_GE(block->size, round_size(size, config)) << what;
        // A malloc flushes the cache at most once, before its one retry.
        const std::int64_t flushes = allocator->stats().num_sync_all_streams - syncs_before;
        EXPECT_TRUE(flushes == 0 || flushes == 1) << what << ": " << flushes << " flushes";
        if (flushes != 0) {
          model.free_all_pending();
          ++model.sync_all_streams;
        }
        model.on_malloc(block, size);
        totals.retries += allocator->stats().num_alloc_retries - before.num_alloc_retries;
      } catch (const OutOfMemoryError& error) {
        ++model.ooms;
        ++totals.ooms;
        model.free_all_pending();  // an out-of-memory error comes after the flush
        ++model.sync_all_streams;
        const DeviceStats after = allocator->stats();
        EXPECT_EQ(after.num_sync_all_streams, syncs_before + 1) << what << ": no flush before OOM";
        // What must be true of reserved memory at an OOM: the flush gave back every cached
        // segment it could, and the request still did not fit beside what is left.
        if (!config.expandable_segments) {
          const auto needed = get_allocation_size(round_size(size, config));
          EXPECT_GT(static_cast<std::uint64_t>(after.reserved_bytes[kAggregate].current) + needed,
                    capacity)
              << what << ": out of memory with " << after.reserved_bytes[kAggregate].current
              << " B reserved of " << capacity << " for a " << needed << " B segment";
        }
        EXPECT_NE(std::string(error.what()).find("out of memory"), std::string::npos);
      }
    } else if (choice < 850 && !model.live.empty()) {
      auto it = model.live.find(model.order[rng() % model.order.size()]);
      Block* block = it->first;
      if (rng() % 6 == 0) {
        const auto other =
            static_cast<StreamId>((block->stream + 1 + rng() % (kStreams - 1)) % kStreams);
        allocator->record_stream(block, other);
        it->second.used_by.insert(other);
      }
      what = "free";
      allocator->free(block);
      model.on_free(block);
      ++totals.frees;
    } else if (choice < 900 && !model.live.empty()) {
      auto it = model.live.find(model.order[rng() % model.order.size()]);
      what = "record_stream " + std::to_string(stream);
      allocator->record_stream(it->first, stream);
      if (stream != it->first->stream) it->second.used_by.insert(stream);
    } else if (choice < 940) {
      what = "synchronize_stream " + std::to_string(stream);
      allocator->synchronize_stream(stream);
      model.on_sync(stream);
    } else if (choice < 950) {
      what = "synchronize";
      allocator->synchronize();
      model.on_sync_all();
    } else if (choice < 958) {
      what = "empty_cache";
      allocator->empty_cache();
      model.free_all_pending();
      ++model.sync_all_streams;
      ++totals.empty_caches;
      const DeviceStats after = allocator->stats();
      if (model.live.empty()) {
        EXPECT_EQ(after.reserved_bytes[kAggregate].current, 0) << "empty_cache with nothing live";
      }
      if (!config.expandable_segments) {
        // Every segment left holds a live block (a fully free one would have been released).
        for (std::size_t type = 0; type < 3; ++type)
          EXPECT_LE(after.segment[type].current, after.active[type].current)
              << kTypeNames[type] << " segments after empty_cache";
      }
    } else if (choice < 970) {
      const std::string& text = kConfigs[rng() % kConfigs.size()];
      what = "set_config " + text;
      config = parse_alloc_conf(text);
      allocator->set_config(config);
      ++totals.config_changes;
    } else if (choice < 985) {
      what = "reset_peak_stats";
      allocator->reset_peak_stats();
      model.reset_peak();
    } else {
      what = "reset_accumulated_stats";
      allocator->reset_accumulated_stats();
      model.reset_accumulated();
    }
    ++totals.operations;
    allocator->check_invariants();
    const DeviceStats stats = allocator->stats();
    expect_same(model.allocation, stats.allocation, "allocation");
    expect_same(model.active, stats.active, "active");
    expect_same(model.allocated_bytes, stats.allocated_bytes, "allocated_bytes");
    expect_same(model.active_bytes, stats.active_bytes, "active_bytes");
    expect_same(model.requested_bytes, stats.requested_bytes, "requested_bytes");
    EXPECT_EQ(stats.num_ooms, model.ooms);
    EXPECT_EQ(stats.num_sync_all_streams, model.sync_all_streams);
    for (std::size_t type = 0; type < 3; ++type) {
      const std::int64_t reserved = stats.reserved_bytes[type].current;
      EXPECT_GE(reserved, stats.active_bytes[type].current) << kTypeNames[type];
      EXPECT_EQ(reserved % static_cast<std::int64_t>(kSmallBuffer), 0)
          << kTypeNames[type] << " reserved is not whole 2 MiB segments or pages: " << reserved;
    }
    EXPECT_EQ(stats.reserved_bytes[kAggregate].current,
              stats.reserved_bytes[kSmallPool].current + stats.reserved_bytes[kLargePool].current);
    EXPECT_LE(static_cast<std::uint64_t>(stats.reserved_bytes[kAggregate].current), capacity);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "after operation " << op << " (" << what << "), seed " << seed
                    << ", capacity " << capacity;
      return totals;
    }
  }
  return totals;
}

TEST(AllocatorDifferential, MillionsOfRandomOperationsMatchTheModel) {
  const auto start = std::chrono::steady_clock::now();
  Totals all;
  // Small devices, so flushes and out-of-memory errors are frequent; odd capacities too.
  const std::uint64_t capacities[] = {64 * kMiB, 96 * kMiB, 130 * kMiB};
  std::uint64_t seed = 20261124;
  for (int round = 0; round < 6; ++round) {
    const Totals t = run(seed++, 400000 / kOperationScale, capacities[round % 3]);
    if (::testing::Test::HasFailure()) return;
    all.operations += t.operations;
    all.mallocs += t.mallocs;
    all.frees += t.frees;
    all.ooms += t.ooms;
    all.config_changes += t.config_changes;
    all.empty_caches += t.empty_caches;
    all.retries += t.retries;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "differential run: %lld operations (%lld mallocs, %lld frees, %lld out-of-memory errors, "
      "%lld flush-and-retry, %lld set_config, %lld empty_cache) in %.2f s\n",
      static_cast<long long>(all.operations), static_cast<long long>(all.mallocs),
      static_cast<long long>(all.frees), static_cast<long long>(all.ooms),
      static_cast<long long>(all.retries), static_cast<long long>(all.config_changes),
      static_cast<long long>(all.empty_caches), seconds);
  // The workload must reach what it is there to check.
  EXPECT_GT(all.ooms, 0);
  EXPECT_GT(all.retries, 0);
  EXPECT_GT(all.config_changes, 0);
}

}  // namespace
}  // namespace vramlab::memory
