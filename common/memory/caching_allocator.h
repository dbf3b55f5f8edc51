/// \file
/// \brief The caching allocator: PyTorch CUDACachingAllocator semantics over any Backing.
///
/// Requests round up to 512 B (round_size); ≤ 1 MiB goes to the small pool (2 MiB segments), larger
/// to the large pool (20 MiB segments below 10 MiB, else rounded up to 2 MiB). A request takes the
/// best-fitting free block of its own stream, splits it (should_split) and merges back with free
/// neighbours when freed. Memory goes back to the device only through empty_cache(), the flush
/// before an out-of-memory, garbage collection, or max_split_size's release of oversize blocks.
///
/// Streams: a block freed after record_stream() stays "active_pending_free" until the work of
/// those streams is done, and until the next malloc, empty_cache or snapshot processes the
/// completed events. With a stream clock (set_clock: nn::Runtime sets its own), free() records a
/// stream::Event on each such stream, complete once the host's time reaches it, as PyTorch records
/// a cudaEvent; without one, the work completes when synchronize() or synchronize_stream() is
/// called.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/memory/alloc_config.h"
#include "common/memory/allocator_lock.h"
#include "common/memory/backing.h"
#include "common/memory/block.h"
#include "common/memory/history.h"
#include "common/memory/memory_category.h"
#include "common/memory/memory_stats.h"
#include "common/memory/oom_error.h"
#include "common/stream/clock.h"
#include "common/stream/event.h"

namespace vramlab::memory {

/// Smallest block and rounding unit (kMinBlockSize).
inline constexpr std::size_t kMinBlockSize = 512;
/// Largest request served by the small pool (kSmallSize).
inline constexpr std::size_t kSmallSize = 1ULL << 20;
/// Small-pool segment size (kSmallBuffer).
inline constexpr std::size_t kSmallBuffer = 2ULL << 20;
/// Requests below this get a kLargeBuffer segment (kMinLargeAlloc).
inline constexpr std::size_t kMinLargeAlloc = 10ULL << 20;
/// Large-pool segment size for requests below kMinLargeAlloc (kLargeBuffer).
inline constexpr std::size_t kLargeBuffer = 20ULL << 20;
/// Larger requests round their segment up to a multiple of this (kRoundLarge).
inline constexpr std::size_t kRoundLarge = 2ULL << 20;
/// Requests of this size or more fail at once ("more than 1EB").
inline constexpr std::uint64_t kOneExaByte = 1ULL << 60;

/// Rounds \p bytes up to the next of \p divisions equal steps between two powers of two (powers of
/// two stay unchanged).
/// \param bytes the size.  \param divisions a power of two ≥ 2.  \return the rounded size.
std::size_t roundup_power2_next_division(std::size_t bytes, std::size_t divisions);

/// PyTorch's round_size: at least 512 B, a multiple of 512 B, or the next power-of-two division
/// when roundup_power2_divisions applies to the size. Inline: every malloc calls it.
/// \param bytes the request.  \param config the settings.  \return the rounded size.
inline std::size_t round_size(std::size_t bytes, const AllocatorConfig& config) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = config.divisions_for(bytes);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) {
    return roundup_power2_next_division(bytes, divisions);
  }
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

/// PyTorch's get_allocation_size: the segment size for a rounded request.
/// \param rounded_bytes the output of round_size.  \return 2 MiB, 20 MiB or a multiple of 2 MiB.
std::size_t get_allocation_size(std::size_t rounded_bytes);

/// The caching allocator of one device.
///
/// Thread-safe: every public member takes the allocator's lock (AllocatorLock: skipped while the
/// process has a single thread).
class CachingAllocator {
 public:
  /// \param backing where segments come from.
  /// \param device_label what the out-of-memory message calls the device: "CUDA" for a real GPU,
  ///        the device string (e.g. "sim:a100-40g") otherwise.
  /// \param device_index the "GPU N" of messages and the summary's device ID.
  /// \param config the settings (see alloc_config.h).
  CachingAllocator(std::unique_ptr<Backing> backing, std::string device_label,
                   std::int64_t device_index, const AllocatorConfig& config = {});
  /// Returns every segment to the backing (live blocks are abandoned with them).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Allocates \p bytes on \p stream.
  /// \param bytes the request; 0 returns nullptr and changes nothing.
  /// \param stream once freed, the block is reused only by requests on this stream.
  /// \param category counted in category_stats() and written to snapshots.
  /// \param name the tensor's name, shown in snapshots and out-of-memory errors.
  /// \return the block; its `address` is the memory.
  /// \throws OutOfMemoryError when the device cannot provide the memory even after flushing the
  ///         cache, or when \p bytes ≥ 1 EiB.
  Block* malloc(std::size_t bytes, StreamId stream = 0,
                MemoryCategory category = MemoryCategory::other, std::string_view name = {});
  /// Called with each OutOfMemoryError malloc() raises, after the allocator's lock is released and
  /// before the error propagates, so the allocator's state is the failure's (what
  /// torch._C._cuda_attach_out_of_memory_observer gives PyTorch's OOM-snapshot recipe).
  using OutOfMemoryObserver = std::function<void(const OutOfMemoryError&)>;
  /// Replaces the observer (an empty one removes it). Not while another thread allocates.
  /// \param observer it must not allocate from this allocator.
  void attach_out_of_memory_observer(OutOfMemoryObserver observer);
  /// Frees a block returned by malloc (nullptr is ignored). The block returns to the cache at once,
  /// or once the events of the streams given to record_stream complete.
  void free(Block* block);
  /// Marks \p block as used by \p stream (torch.Tensor.record_stream): when freed, it is not reused
  /// until that stream's work has completed. A no-op for the block's own stream.
  /// \param block an allocated block.  \param stream the other stream.
  /// \throws vramlab::UsageError when a clock is set and has no stream \p stream.
  void record_stream(Block* block, StreamId stream);
  /// Orders record_stream()'s frees by \p clock's events from now on (file comment); nullptr: by
  /// synchronize() alone. Set it before any record_stream(); the clock must outlive the allocator.
  void set_clock(stream::Clock* clock);
  /// Completes the work of every stream (torch.cuda.synchronize()); with a clock, the host waits
  /// for every stream of it.
  void synchronize();
  /// Completes the work of one stream (torch.cuda.Stream.synchronize()); with a clock, the host
  /// waits for that stream.
  void synchronize_stream(StreamId stream);
  /// Waits for pending frees, then returns every cached whole segment to the device
  /// (torch.cuda.empty_cache()).
  void empty_cache();
  /// Limits this process to \p fraction of the device (set_per_process_memory_fraction).
  /// \param fraction in [0, 1].
  /// \throws vramlab::UsageError naming \p fraction when it is outside [0, 1].
  void set_memory_fraction(double fraction);
  /// Replaces the settings; blocks already cached keep their place.
  void set_config(const AllocatorConfig& config);
  /// \return a copy, taken under the lock (set_config may change them from another thread).
  AllocatorConfig config() const;

  /// \return a copy taken under the lock, with complete "all" rows (with_aggregate_sums).
  DeviceStats stats() const;
  /// \return torch.cuda.memory_stats(): sorted (key, value) pairs.
  std::vector<std::pair<std::string, std::int64_t>> memory_stats() const;
  /// \return current and peak allocated bytes per memory category.
  CategoryStats category_stats() const;
  /// Sets every peak (also the per-category peaks) to its current value.
  void reset_peak_stats();
  /// Zeroes the allocated/freed totals and the num_* counters.
  void reset_accumulated_stats();
  /// \param abbreviated keep only the "all" rows.
  /// \return torch.cuda.memory_summary()'s table.
  std::string memory_summary(bool abbreviated = false) const;

  /// Starts or stops recording (torch.cuda.memory._record_memory_history). Every block carries
  /// its module path and training phase whatever the mode; snapshots show them as frames while
  /// recording.
  /// \param mode off, state (labels of live blocks) or all (plus the trace).
  /// \param max_entries the trace ring buffer's size (the oldest entries are dropped).
  /// \param cpp_stacks also capture each allocation's C++ call stack (stacks="cpp"; ignored when
  ///        \p mode is off). See call_stack.h for its cost.
  void record_history(RecordMode mode, std::size_t max_entries = SIZE_MAX, bool cpp_stacks = false);
  /// What record_history() was last given (what a profiler restores when it stops).
  struct HistorySettings {
    RecordMode mode = RecordMode::off;   ///< the recording mode
    std::size_t max_entries = SIZE_MAX;  ///< the trace ring buffer's size
    bool cpp_stacks = false;             ///< whether C++ call stacks are captured
  };
  /// \return the settings of the last record_history() call (off, SIZE_MAX, false before any).
  HistorySettings history_settings() const;
  /// \return the recorded trace, oldest first.
  std::vector<TraceEntry> trace() const;
  /// Takes a snapshot in PyTorch's torch.cuda.memory._snapshot() schema (see snapshot.cpp), with
  /// vramlab's extension keys (common/profile/recording.h): "category", "module", "phase",
  /// "tensor" on each block and trace entry, "time_ns" on trace entries, and "frames" (a label
  /// frame, then the C++ frames) while recording.
  /// \return {"segments": [...], "device_traces": [[...]], "allocator_settings": {...}}.
  nlohmann::json snapshot();

  /// \return the backing's total bytes, ignoring set_memory_fraction.
  std::uint64_t capacity_bytes() const;
  /// \return the device's free bytes (capacity minus everything reserved on it).
  std::uint64_t free_bytes() const;
  /// \return every allocated block, largest first.
  std::vector<LiveBlockInfo> live_blocks() const;
  /// \return true when block addresses are host memory the program may touch.
  bool host_accessible() const;

  /// Fault injection (tests of out-of-memory recovery): the \p k-th malloc from now (1 = the next;
  /// every request of at least one byte counts, whether the cache or the device would serve it)
  /// fails as on a device with no free memory. That malloc takes the real path of a full device:
  /// no cached block is used, every segment request is refused, the cache is released and the
  /// allocation retried (num_alloc_retries), then throw_out_of_memory raises PyTorch's error
  /// (num_ooms, an "oom" trace entry). Fires once; 0 disarms. Costs nothing on the cached path
  /// while disarmed: see Note [Injected out-of-memory].
  /// \param k the malloc to fail, counted from the next one; 0 disarms.
  void inject_out_of_memory(std::uint64_t k);
  /// \return the mallocs still to go before the injected failure (1: the next fails), 0 when none
  /// is armed (never armed, disarmed, or fired).
  std::uint64_t injected_out_of_memory_countdown() const;

  /// Checks the allocator's invariants in O(blocks): segments tile exactly, no two free neighbours
  /// are left unmerged, the pools hold exactly the free blocks, no live blocks overlap, every
  /// stat's current value equals the sum recomputed from the blocks, reserved ≥ active ≥ allocated
  /// and active ≥ requested (and allocated ≥ requested when no free is pending). \throws
  /// std::logic_error describing the first violation.
  void check_invariants() const;

 private:
  struct AllocParams;
  // The labels of a trace entry no request or block owns (segment_free, segment_unmap, snapshot).
  struct NoLabels {
    MemoryCategory category = MemoryCategory::other;
    std::uint32_t module_id = 0;
    TrainingPhase phase = TrainingPhase::none;
    StackId stack_id = 0;
    std::string_view name;
  };
  struct PendingEvent {
    StreamId stream;
    Block* block;
    bool completed;
    stream::Event event;  // recorded at free on clock_ (never recorded without one)
  };

  // The Notes named in comments ("See Note [Name]") are at the end of caching_allocator.cpp.

  // malloc() under the lock, its stack captured before it.
  Block* malloc_locked(std::size_t bytes, StreamId stream, MemoryCategory category,
                       std::string_view name, StackId stack_id);
  // A request's parameters, labelled with the current module and phase (malloc, and an injected
  // failure: see Note [Injected out-of-memory]).
  AllocParams request_params(std::size_t bytes, StreamId stream, MemoryCategory category,
                             std::string_view name, StackId stack_id);
  // PyTorch's DeviceCachingAllocator members, in the order malloc and free call them.
  bool get_free_block(AllocParams& params);
  bool alloc_block(AllocParams& params, bool is_retry);
  bool should_split(const Block* block, std::size_t size) const;
  Block* alloc_found_block(const AllocParams& params, bool split_remainder);
  void free_block(Block* block);
  // Merges the free block \p src into its neighbour \p dst and returns the bytes it added, or 0
  // when \p src cannot merge. \p dst_entry: see Note [Pool entries reused in place].
  std::size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool,
                               BlockPool::Set::iterator* dst_entry = nullptr);
  void insert_events(Block* block);
  void process_events();
  void synchronize_and_free_events();
  bool release_available_cached_blocks(const AllocParams& params);
  bool release_cached_blocks();
  void release_blocks(BlockPool& pool);
  void release_block(Block* block);
  void garbage_collect_cached_blocks();
  [[noreturn, gnu::cold, gnu::noinline]] void throw_more_than_exabyte(std::size_t bytes);
  // malloc's checks of requests of at least cold_request_bytes_: see Note [Injected out-of-memory].
  [[gnu::cold, gnu::noinline]] void check_cold_request(std::size_t bytes, StreamId stream,
                                                       MemoryCategory category,
                                                       std::string_view name, StackId stack_id);
  [[noreturn, gnu::cold, gnu::noinline]] void fail_as_full_device(AllocParams& params);
  [[noreturn]] void throw_out_of_memory(const AllocParams& params);

  Block* new_block();
  void delete_block(Block* block);
  void insert_into_blocks(Block* block);
  // \p grew: \p block is larger than the key \p entry held (merged), else smaller (split).
  void insert_into_blocks_at(BlockPool::Set::iterator entry, Block* block, bool grew);
  void erase_from_blocks(Block* block);
  void pool_insert(BlockPool::Set& set, Block* block);
  void pool_erase(BlockPool::Set& set, Block* block);
  static std::size_t stat_type_of(const BlockPool& pool);

  Block* try_allocate_expandable_block(AllocParams& params);
  Block* find_expandable_block(AllocParams& params);
  bool map_block(Block* to_map, std::size_t size, const AllocParams* params);
  void unmap_block(Block* block);
  void release_expandable_segment(Block* block);

  // Counts the event; stores it only while recording everything (kept inline: the hot path).
  // \p labels: the block's (or the request's) category, module, phase, stack and name.
  template <typename Labels>
  void record_trace(TraceAction action, std::uint64_t address, std::size_t size, StreamId stream,
                    const Labels& labels) {
    ++event_counter_;
    if (record_mode_ == RecordMode::all && max_trace_entries_ > 0) {
      store_trace_entry(action, address, size, stream, labels.category, labels.module_id,
                        labels.phase, labels.stack_id, labels.name);
    }
  }
  void store_trace_entry(TraceAction action, std::uint64_t address, std::size_t size,
                         StreamId stream, MemoryCategory category, std::uint32_t module_id,
                         TrainingPhase phase, StackId stack_id, std::string_view name);
  std::vector<LiveBlockInfo> live_blocks_locked() const;
  std::vector<const Block*> all_blocks_locked() const;

  mutable std::mutex mutex_;
  std::unique_ptr<Backing> backing_;
  std::string device_label_;
  std::int64_t device_index_;
  AllocatorConfig config_;
  DeviceStats stats_;  // See Note [Pool-kept statistics]
  CategoryStats category_stats_;
  BlockPool small_blocks_;
  BlockPool large_blocks_;
  std::vector<PendingEvent> events_;
  stream::Clock* clock_ = nullptr;  // set_clock
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
  std::deque<Block> block_storage_;
  Block* spare_blocks_ = nullptr;                       // See Note [Spare blocks]
  std::vector<BlockPool::Set::node_type> spare_nodes_;  // See Note [Pool entries reused in place]
  std::uint64_t total_allocated_memory_ = 0;
  bool memory_fraction_set_ = false;
  std::uint64_t allowed_memory_maximum_ = 0;
  RecordMode record_mode_ = RecordMode::off;
  // Read by malloc before it takes the lock (see Note [Stacks captured outside the lock]).
  std::atomic<bool> record_stacks_{false};
  std::size_t max_trace_entries_ = SIZE_MAX;
  HistorySettings history_settings_;
  OutOfMemoryObserver oom_observer_;  // attach_out_of_memory_observer()'s, or empty
  std::vector<TraceEntry> trace_;
  std::size_t trace_next_ = 0;
  std::int64_t event_counter_ = 0;
  // See Note [Injected out-of-memory]
  std::size_t cold_request_bytes_ = kOneExaByte;
  std::uint64_t injected_oom_countdown_ = 0;
  bool refuse_device_memory_ = false;
};

}  // namespace vramlab::memory
