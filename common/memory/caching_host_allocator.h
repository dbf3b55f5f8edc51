/// \file
/// \brief Host memory beside a device: PyTorch's pinned-memory caching allocator
/// (at::CachingHostAllocator, behind `tensor.pin_memory()` and `torch.empty(..., pin_memory=True)`)
/// and plain pageable memory, both taken from the process's host-RAM budget (host_memory.h).
/// Note [Pinned host memory] in caching_host_allocator.cpp.
///
/// Pinned: every request rounds up to the next power of two (a 4.9 GiB request takes an 8 GiB
/// block) and a freed block waits in the free list of its size for the next request of the same
/// rounded size; blocks are never split or merged. A block that a stream used (record_stream) is
/// reused only once the events recorded on those streams at free time have completed
/// (process_events). empty_host_cache() returns the free blocks to the system.
///
/// Pageable: what PyTorch does for a CPU tensor without pin_memory: its CPU allocator
/// (c10::alloc_cpu: posix_memalign, 64-byte aligned) takes exactly the bytes asked for and free()
/// gives them straight back, with no rounding, no cache and no stream bookkeeping, since a copy
/// from pageable memory to a GPU is synchronous to the host (the driver stages it through a pinned
/// buffer of its own), so no stream can still be reading the memory once the copy call returns.
/// Here a pageable block is likewise mapped per request and unmapped at free().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/memory/backing.h"
#include "common/memory/memory_category.h"
#include "common/memory/memory_stats.h"
#include "common/stream/clock.h"
#include "common/stream/event.h"

namespace vramlab::memory {

/// Which host memory a CachingHostAllocator hands out.
enum class HostMemoryKind : unsigned char {
  pageable,  ///< plain host memory: exact sizes, never cached (PyTorch's CPU allocator)
  pinned,    ///< page-locked memory for asynchronous copies: power-of-two blocks, cached
};

/// What stands behind a CachingHostAllocator's blocks.
enum class HostMemoryBacking : unsigned char {
  ram,  ///< this machine's RAM, taken from the process's host-RAM budget
  /// addresses only, no memory (make_meta_backing), for the host beside a meta device: the
  /// blocks and their statistics are as with RAM, so a 70B model's pinned bytes can be counted
  /// on a laptop, and nothing may read or write them.
  meta,
};

/// One block of host memory, owned by its CachingHostAllocator (PyTorch's HostBlock).
struct HostBlock {
  std::uint64_t address = 0;       ///< page-aligned host memory the program may touch
  std::size_t size = 0;            ///< the block: the power of two (pinned) or the request
  std::size_t requested_size = 0;  ///< what the caller asked for
  MemoryCategory category = MemoryCategory::other;  ///< counted in category_stats()
  std::string name;                                 ///< the tensor's name, for reports
  bool allocated = false;       ///< held by a caller (false: cached, or waiting on events)
  std::size_t event_count = 0;  ///< events still pending since free()
  std::vector<stream::StreamId> streams;  ///< streams given to record_stream since allocate()

  /// \return address as a pointer.
  void* ptr() const { return reinterpret_cast<void*>(address); }
};

/// A timing statistic (c10's DurationStat): calls and their microseconds.
struct DurationStat {
  std::int64_t count = 0;  ///< calls since the last reset_accumulated
  std::int64_t total = 0;  ///< microseconds summed since the last reset_accumulated
  std::int64_t max = 0;    ///< longest call since the last reset_peak
  std::int64_t min = 0;    ///< shortest call since the last reset_peak (0: none yet)

  /// Counts one call of \p microseconds.
  void increase(std::int64_t microseconds);
  /// \return total / count, 0 without calls (PyTorch's "avg").
  std::int64_t average() const { return count == 0 ? 0 : total / count; }
};

/// torch.cuda.host_memory_stats(): PyTorch's HostStats, with its update rules.
struct HostStats {
  Stat active_requests;  ///< blocks held by callers or waiting on events (a cache hit counts)
  Stat active_bytes;     ///< bytes of those blocks (block sizes)
  Stat allocations;      ///< blocks taken from the system: active and cached
  Stat allocated_bytes;  ///< bytes of those blocks: active and cached
  DurationStat host_alloc_time;     ///< microseconds spent getting blocks from the system
  DurationStat host_free_time;      ///< microseconds spent returning blocks to the system
  std::int64_t num_host_alloc = 0;  ///< blocks taken from the system (allocations.allocated)
  std::int64_t num_host_free = 0;   ///< blocks returned to the system (allocations.freed)

  /// \return torch._C._cuda_hostMemoryStats()'s nested dictionary (what
  /// torch.cuda.host_memory_stats_as_nested_dict returns; host_memory_stats() flattens it to
  /// "allocations.current"): {"active_requests": {"current", "peak", "allocated", "freed"}, ...,
  /// "host_alloc_time": {"total", "max", "min", "count", "avg"}, "num_host_alloc": n, ...}.
  nlohmann::json to_json() const;
};

/// PyTorch's CachingHostAllocator over this machine's RAM, with the device's stream clock for
/// its events; or, with HostMemoryKind::pageable, plain uncached host memory.
///
/// Not thread-safe: like the stream::Clock whose events it records, one thread uses it.
class CachingHostAllocator {
 public:
  /// \param clock the device's streams: events are recorded and queried on it; it must outlive
  ///        the allocator.
  /// \param kind pinned (cached power-of-two blocks) or pageable (exact, uncached).
  /// \throws vramlab::UsageError when `VRAMLAB_HOST_MEMORY_LIMIT` is set to something that is not
  ///         a size (resolve_host_memory_limit).
  /// \param backing RAM, or addresses only beside a meta device (HostMemoryBacking).
  explicit CachingHostAllocator(stream::Clock& clock, HostMemoryKind kind = HostMemoryKind::pinned,
                                HostMemoryBacking backing = HostMemoryBacking::ram);
  /// Returns every block to the system and its bytes to the host budget (live blocks too).
  ~CachingHostAllocator();
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  /// Processes completed events (process_events), then takes a cached block of the rounded size
  /// or, failing that, a new one from the system.
  /// \param bytes the request; 0 returns nullptr and changes nothing.
  /// \param category counted in category_stats().
  /// \param name the tensor's name, kept on the block.
  /// \return the block; its `address` is the memory (committed by the OS when first touched).
  /// \throws HostMemoryError (host_memory.h) naming the bytes when the host-RAM budget refuses
  ///         the block (the rounded size for pinned memory); nothing is taken and the stats and
  ///         cache are as process_events left them.
  /// \throws vramlab::UsageError when a pinned request exceeds 2^63 bytes (no power of two holds
  ///         it).
  HostBlock* allocate(std::size_t bytes, MemoryCategory category = MemoryCategory::other,
                      std::string_view name = {});
  /// Frees a block returned by allocate (nullptr is ignored). A pinned block goes back to its free
  /// list at once, or, when streams used it (record_stream), once the event recorded now on each
  /// of them has completed. A pageable block goes back to the system at once.
  /// \throws std::logic_error when \p block is not allocated by this allocator (double free).
  void free(HostBlock* block);
  /// Marks \p block as used by work on \p stream (PyTorch's record_event, through
  /// Tensor.record_stream or a non_blocking copy): when freed, a pinned block waits for that work.
  /// A pageable block keeps the streams but does not wait (see the file comment).
  /// \throws vramlab::UsageError for a stream the clock does not have.
  /// \throws std::logic_error when \p block is not allocated by this allocator.
  void record_stream(HostBlock* block, stream::StreamId stream);
  /// Returns to their free lists the blocks whose events have all completed, oldest event first,
  /// stopping at the first event still pending (as PyTorch does). allocate() calls it first.
  void process_events();
  /// Processes events, then returns every cached block to the system
  /// (PyTorch's CachingHostAllocator_emptyCache). Blocks held by callers or waiting on events stay.
  void empty_host_cache();

  /// \return the statistics now (torch.cuda.host_memory_stats()).
  HostStats host_memory_stats() const { return stats_; }
  /// \return block bytes and requested bytes per category, counted from allocate() to free().
  CategoryStats category_stats() const { return category_stats_; }
  /// Sets every peak to its current value; timing max and min to 0 (also per category).
  void reset_peak_host_memory_stats();
  /// Zeroes the allocated/freed totals, num_host_alloc/free and the timing totals (also per
  /// category).
  void reset_accumulated_host_memory_stats();

  /// Makes the \p k-th allocate() from now (1: the next) refuse as a full host would: the
  /// HostMemoryError of the host budget, naming the request; nothing is taken. Fires once; 0
  /// disarms. For the tests that fail every allocation of a step in turn.
  void inject_refusal(std::uint64_t k) { refuse_countdown_ = k; }

  /// \return pinned or pageable.
  HostMemoryKind kind() const { return kind_; }
  /// \return the clock whose streams the events are recorded on.
  stream::Clock& clock() const { return clock_; }

 private:
  // One free list per power of two, 2^0 to 2^63 (PyTorch's MAX_SIZE_INDEX).
  static constexpr std::size_t kFreeListCount = 64;
  HostBlock& checked_allocated(HostBlock* block, const char* caller);
  HostBlock* allocate_from_system(std::size_t block_bytes);
  void release_to_system(HostBlock* block);
  void return_to_free_list(HostBlock* block);

  stream::Clock& clock_;
  HostMemoryKind kind_;
  std::unique_ptr<Backing> backing_;  // make_host_backing: mmap plus the host budget
  std::unordered_map<const HostBlock*, std::unique_ptr<HostBlock>> blocks_;  // every block
  std::array<std::vector<HostBlock*>, kFreeListCount> free_lists_;  // LIFO per power of two
  std::list<std::pair<stream::Event, HostBlock*>>
      events_;  // newest at the front (splice: no throw)
  HostStats stats_;
  CategoryStats category_stats_;
  std::uint64_t refuse_countdown_ = 0;  // inject_refusal(): allocations to go, 0 when disarmed
};

}  // namespace vramlab::memory
