// A million random operations (alloc, free, empty_cache, record_stream, stream sync, sync, stat
// resets) against a simple independent model of what must hold; the allocator's own invariant
// check (O(blocks)) runs after every operation, out-of-memory errors included.
//   build/tests/bin/test_allocator_randomized
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <set>

#include "tests/memory/allocator_test_util.h"
#include "tests/sanitized_build.h"

namespace vramlab::memory {
namespace {

using testing::kMiB;

// The sanitizers run the allocator about 20x slower: a twentieth of the operations there.
constexpr std::int64_t kOperationScale = test_build::kSanitized ? 20 : 1;

/// torch's stat rules applied directly to "all" and to the block's pool (the allocator keeps "all"
/// as the pools' sum plus its own peak; this model does not).
struct StatModel {
  std::array<Stat, 3> stats;  // indexed by StatType
  void increase(std::size_t pool_type, std::int64_t amount) {
    for (std::size_t type : {static_cast<std::size_t>(kAggregate), pool_type}) {
      stats[type].increase(amount);
    }
  }
  void decrease(std::size_t pool_type, std::int64_t amount) {
    for (std::size_t type : {static_cast<std::size_t>(kAggregate), pool_type}) {
      stats[type].decrease(amount);
    }
  }
  void reset_peak() {
    for (Stat& stat : stats) stat.peak = stat.current;
  }
  void reset_accumulated() {
    for (Stat& stat : stats) stat.allocated = stat.freed = 0;
  }
  void expect_equal(const StatArray& actual, const char* name) const {
    for (std::size_t type = 0; type < 3; ++type) {
      const Stat& want = stats[type];
      const Stat& got = actual[type];
      EXPECT_TRUE(want.current == got.current && want.peak == got.peak &&
                  want.allocated == got.allocated && want.freed == got.freed)
          << name << "[" << type << "] current/peak/allocated/freed: expected " << want.current
          << "/" << want.peak << "/" << want.allocated << "/" << want.freed << ", got "
          << got.current << "/" << got.peak << "/" << got.allocated << "/" << got.freed;
    }
  }
};

/// What the caller knows: its live allocations. Checks that need nothing from the allocator's
/// internals: no two live allocations overlap, each is at least its rounded request, counts and
/// requested bytes match, and the allocation and allocated_bytes stats (which change only when
/// the caller allocates or frees) follow torch's rules in every field.
class Model {
 public:
  void add(Block* block, std::size_t requested, const AllocatorConfig& config) {
    ASSERT_EQ(block->address % kMinBlockSize, 0u);
    ASSERT_GE(block->size, round_size(requested, config));
    auto next = by_address_.lower_bound(block->address);
    if (next != by_address_.end()) {
      ASSERT_LE(block->address + block->size, next->first) << "overlaps the next live block";
    }
    if (next != by_address_.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second->size, block->address) << "overlaps the previous one";
    }
    by_address_.emplace(block->address, block);
    live_.push_back({block, requested});
    requested_bytes_ += static_cast<std::int64_t>(requested);
    allocation_.increase(pool_type(block), 1);
    allocated_bytes_.increase(pool_type(block), static_cast<std::int64_t>(block->size));
  }
  std::pair<Block*, std::size_t> take(std::size_t index) {
    auto entry = live_[index];
    live_[index] = live_.back();
    live_.pop_back();
    by_address_.erase(entry.first->address);
    requested_bytes_ -= static_cast<std::int64_t>(entry.second);
    allocation_.decrease(pool_type(entry.first), 1);
    allocated_bytes_.decrease(pool_type(entry.first), static_cast<std::int64_t>(entry.first->size));
    return entry;
  }
  void reset_peak() {
    allocation_.reset_peak();
    allocated_bytes_.reset_peak();
  }
  void reset_accumulated() {
    allocation_.reset_accumulated();
    allocated_bytes_.reset_accumulated();
  }
  void expect_stats(const DeviceStats& stats) const {
    allocation_.expect_equal(stats.allocation, "allocation");
    allocated_bytes_.expect_equal(stats.allocated_bytes, "allocated_bytes");
  }
  std::size_t size() const { return live_.size(); }
  Block* block(std::size_t index) const { return live_[index].first; }
  std::int64_t requested_bytes() const { return requested_bytes_; }

 private:
  static std::size_t pool_type(const Block* block) {
    return block->pool->is_small ? kSmallPool : kLargePool;
  }

  std::vector<std::pair<Block*, std::size_t>> live_;
  std::map<std::uint64_t, Block*> by_address_;
  std::int64_t requested_bytes_ = 0;
  StatModel allocation_;
  StatModel allocated_bytes_;
};

struct RunResult {
  std::int64_t ooms = 0;
  std::int64_t retries = 0;
};

RunResult run_random_operations(std::uint64_t seed, std::int64_t operations,
                                const std::string& conf) {
  auto allocator = testing::make_meta_allocator(256 * kMiB, conf);
  const AllocatorConfig config = allocator->config();
  std::mt19937_64 rng(seed);
  Model model;
  bool pending_frees = false;             // a free may still wait on another stream's event
  std::set<Block*> used_by_other_stream;  // live blocks given to record_stream
  auto random_size = [&]() -> std::size_t {
    const std::uint64_t kind = rng() % 100;
    if (kind < 60) return 1 + rng() % (64 * 1024);     // small pool
    if (kind < 75) return 1 + rng() % kMiB;            // small pool up to its 1 MiB limit
    if (kind < 97) return kMiB + rng() % (24 * kMiB);  // large pool, 20 MiB segments and more
    return 40 * kMiB + rng() % (120 * kMiB);           // big enough to force flushes and OOMs
  };
  for (std::int64_t op = 0; op < operations; ++op) {
    const std::uint64_t choice = rng() % 1000;
    const StreamId stream = static_cast<StreamId>(rng() % 3);
    if (choice < 480 && model.size() < 48) {
      const std::size_t size = random_size();
      try {
        Block* block = allocator->malloc(size, stream);
        model.add(block, size, config);
      } catch (const OutOfMemoryError&) {
      }
    } else if (choice < 900 && model.size() > 0) {
      auto [block, requested] = model.take(rng() % model.size());
      if (rng() % 8 == 0) {
        allocator->record_stream(block, (block->stream + 1 + static_cast<StreamId>(rng() % 2)) % 3);
        used_by_other_stream.insert(block);
      }
      if (used_by_other_stream.erase(block) > 0) pending_frees = true;
      allocator->free(block);
    } else if (choice < 905) {
      allocator->empty_cache();
      pending_frees = false;
    } else if (choice < 950 && model.size() > 0) {
      Block* block = model.block(rng() % model.size());
      allocator->record_stream(block, stream);
      if (stream != block->stream) used_by_other_stream.insert(block);
    } else if (choice < 975) {
      allocator->synchronize_stream(stream);
    } else if (choice < 980) {
      allocator->reset_peak_stats();
      model.reset_peak();
    } else if (choice < 985) {
      allocator->reset_accumulated_stats();
      model.reset_accumulated();
    } else {
      allocator->synchronize();
    }
    if (::testing::Test::HasFatalFailure()) return {};
    allocator->check_invariants();
    const DeviceStats stats = allocator->stats();
    EXPECT_EQ(stats.allocation[kAggregate].current, static_cast<std::int64_t>(model.size()));
    model.expect_stats(stats);
    if (!pending_frees) {
      EXPECT_EQ(stats.requested_bytes[kAggregate].current, model.requested_bytes());
    } else {
      EXPECT_GE(stats.requested_bytes[kAggregate].current, model.requested_bytes());
    }
    EXPECT_LE(stats.reserved_bytes[kAggregate].current, static_cast<std::int64_t>(256 * kMiB));
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "after operation " << op << " (seed " << seed << ")";
      return {};
    }
  }
  const DeviceStats stats = allocator->stats();
  return {stats.num_ooms, stats.num_alloc_retries};
}

TEST(RandomizedAllocator, AMillionOperationsKeepEveryInvariant) {
  const RunResult result = run_random_operations(20261121, 1000000 / kOperationScale, "");
  // The workload is meant to exercise the flush-and-retry path and real out-of-memory errors.
  EXPECT_GT(result.retries, 0);
  EXPECT_GT(result.ooms, 0);
}

TEST(RandomizedAllocator, WithMaxSplitSizeAndPowerOfTwoRounding) {
  const RunResult result = run_random_operations(
      7, 200000 / kOperationScale, "max_split_size_mb:32,roundup_power2_divisions:[1:4,32:2,>:1]");
  EXPECT_GT(result.ooms, 0);
}

TEST(RandomizedAllocator, WithExpandableSegments) {
  run_random_operations(99, 200000 / kOperationScale, "expandable_segments:True");
}

}  // namespace
}  // namespace vramlab::memory
