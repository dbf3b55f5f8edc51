// The caching allocator: PyTorch's c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator)
// over any Backing (a GPU, host memory, a simulated or a meta device). Names and order follow
// PyTorch's, so a reader can hold the two side by side.
//
// The algorithm
// ~~~~~~~~~~~~~
// - A *segment* is one allocation from the device: 2 MiB for the small pool (requests up to
//   1 MiB), 20 MiB for a large request under 10 MiB, else the request rounded up to 2 MiB
//   (get_allocation_size). A segment is cut into *blocks*, neighbours in a doubly linked list
//   that covers it; each free block sits in its *pool* (small or large), ordered by (stream, size).
// - malloc rounds the request up to a multiple of 512 B (round_size; or to a power-of-two
//   division under roundup_power2_divisions) and takes the smallest free block of its pool on the
//   same stream that fits (get_free_block): a block is never handed to another stream. If the
//   block is larger, it is split and the rest stays free in the pool (should_split,
//   alloc_found_block): in the small pool when at least 512 B remain, in the large pool when more
//   than 1 MiB remains and the block is not oversize.
// - When no free block fits, malloc asks the device for a new segment (alloc_block). If the device
//   refuses, it frees cached memory and asks again: with max_split_size_mb set, first the smallest
//   whole cached segment large enough, else oversize ones, largest first
//   (release_available_cached_blocks); then every whole cached segment of both pools
//   (release_cached_blocks). Only then does it throw the
//   out-of-memory error, in PyTorch's words (throw_out_of_memory).
// - free puts the block back in its pool and merges it with free neighbours (free_block,
//   try_merge_blocks). The segment stays cached for the next malloc: memory returns to the device
//   only through empty_cache, the retry above, garbage collection (garbage_collection_threshold)
//   or the release of oversize blocks (max_split_size_mb).
// - max_split_size_mb: blocks at least that large are never split, a smaller request never takes
//   one, and a larger request takes one only if it wastes less than max_non_split_rounding_mb, so
//   large cached blocks are not cut up by small requests.
// - Streams: a block that another stream used (record_stream) and is then freed waits for an
//   event of that stream (process_events) before it can be reused, since work queued there may
//   still read it.
// - expandable_segments: one address range per stream and pool, mapped page by page as it grows,
//   so a larger request extends the segment instead of leaving a hole below a new one.
//
// Speed: the cached malloc+free pair is the steady state of a training loop; it is kept within 4x
// glibc's malloc+free of the same size (bench_caching_allocator reports the ratio). The tricks that
// buy that are explained once, in the Notes at the end of this file; code that implements one
// says "See Note [Name]".

#include "common/memory/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "common/platform/errors.h"

namespace vramlab::memory {

struct CachingAllocator::AllocParams {
  StreamId stream;
  std::size_t orig_size;   // what the caller asked for
  std::size_t size;        // round_size(orig_size)
  std::size_t alloc_size;  // get_allocation_size(size)
  BlockPool* pool;
  MemoryCategory category;
  std::uint32_t module_id;
  TrainingPhase phase;
  StackId stack_id;
  std::string_view name;
  Block* block = nullptr;      // found by get_free_block or made by alloc_block
  bool block_in_pool = false;  // See Note [Pool entries reused in place]
};

std::size_t roundup_power2_next_division(std::size_t bytes, std::size_t divisions) {
  if (std::has_single_bit(bytes)) return bytes;
  const std::size_t power2_floor = std::bit_floor(bytes);
  const std::size_t division = power2_floor >> (std::bit_width(divisions) - 1);
  if (division == 0) return power2_floor << 1;
  const std::size_t round_floor = bytes & ~(division - 1);
  return round_floor == bytes ? bytes : round_floor + division;
}

std::size_t get_allocation_size(std::size_t rounded_bytes) {
  if (rounded_bytes <= kSmallSize) return kSmallBuffer;
  if (rounded_bytes < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded_bytes + kRoundLarge - 1) / kRoundLarge);
}

CachingAllocator::CachingAllocator(std::unique_ptr<Backing> backing, std::string device_label,
                                   std::int64_t device_index, const AllocatorConfig& config)
    : backing_(std::move(backing)),
      device_label_(std::move(device_label)),
      device_index_(device_index),
      config_(config) {
  small_blocks_.is_small = true;
  stats_.max_split_size = config_.max_split_size_bytes == std::numeric_limits<std::size_t>::max()
                              ? -1
                              : static_cast<std::int64_t>(config_.max_split_size_bytes);
}

CachingAllocator::~CachingAllocator() {
  for (const Block* block : all_blocks_locked()) {
    if (block->expandable != nullptr) {
      // Mapped runs of an expandable segment start and end on page boundaries.
      if (!block->mapped || (block->prev != nullptr && block->prev->mapped)) continue;
      std::size_t run_bytes = 0;
      for (const Block* b = block; b != nullptr && b->mapped; b = b->next) run_bytes += b->size;
      const std::size_t page_bytes = block->expandable->page_bytes;
      for (std::size_t offset = 0; offset < run_bytes; offset += page_bytes) {
        backing_->unmap_pages(block->address + offset, page_bytes);
      }
    } else if (block->prev == nullptr) {
      std::size_t segment_bytes = 0;
      for (const Block* b = block; b != nullptr; b = b->next) segment_bytes += b->size;
      backing_->free_segment(block->address, segment_bytes);
    }
  }
  for (const auto& segment : expandable_segments_) {
    backing_->release_address_range(segment->address, segment->size);
  }
}

// ---- malloc ----

inline CachingAllocator::AllocParams CachingAllocator::request_params(std::size_t bytes,
                                                                      StreamId stream,
                                                                      MemoryCategory category,
                                                                      std::string_view name,
                                                                      StackId stack_id) {
  const std::size_t size = round_size(bytes, config_);
  return AllocParams{.stream = stream,
                     .orig_size = bytes,
                     .size = size,
                     .alloc_size = get_allocation_size(size),
                     .pool = size <= kSmallSize ? &small_blocks_ : &large_blocks_,
                     .category = category,
                     .module_id = current_module_id(),
                     .phase = current_phase(),
                     .stack_id = stack_id,
                     .name = name};
}

Block* CachingAllocator::malloc(std::size_t bytes, StreamId stream, MemoryCategory category,
                                std::string_view name) {
  if (bytes == 0) return nullptr;
  // See Note [Stacks captured outside the lock]
  const StackId stack_id =
      record_stacks_.load(std::memory_order_relaxed) ? capture_call_stack(1) : 0;
  try {
    return malloc_locked(bytes, stream, category, name, stack_id);
  } catch (const OutOfMemoryError& error) {
    // As PyTorch calls its out-of-memory observers: after the lock is released (an observer may
    // take a snapshot), before the error reaches anyone who could free something.
    if (oom_observer_) oom_observer_(error);
    throw;
  }
}

void CachingAllocator::attach_out_of_memory_observer(OutOfMemoryObserver observer) {
  oom_observer_ = std::move(observer);
}

// Inlined into malloc(), its one caller: the hot path keeps a single call (the out-of-memory
// observer's try costs nothing until something throws).
[[gnu::always_inline]] inline Block* CachingAllocator::malloc_locked(std::size_t bytes,
                                                                     StreamId stream,
                                                                     MemoryCategory category,
                                                                     std::string_view name,
                                                                     StackId stack_id) {
  AllocatorLock lock(mutex_);  // See Note [Lock skipped while single-threaded]
  // See Note [Injected out-of-memory]
  if (bytes >= cold_request_bytes_) [[unlikely]]
    check_cold_request(bytes, stream, category, name, stack_id);
  process_events();
  AllocParams params = request_params(bytes, stream, category, name, stack_id);
  bool block_found = get_free_block(params);
  if (!block_found) {
    if (memory_fraction_set_ && config_.garbage_collection_threshold > 0.0) {
      garbage_collect_cached_blocks();
    }
    block_found = alloc_block(params, false) ||
                  (release_available_cached_blocks(params) && alloc_block(params, false)) ||
                  (release_cached_blocks() && alloc_block(params, true));
  }
  if (!block_found) throw_out_of_memory(params);
  const bool split_remainder = should_split(params.block, params.size);
  return alloc_found_block(params, split_remainder);
}

// See Note [Inlined cached path]
[[gnu::always_inline]] inline bool CachingAllocator::get_free_block(AllocParams& params) {
  BlockPool& pool = *params.pool;
  if (memory_fraction_set_ && config_.garbage_collection_threshold > 0.0) {
    ++pool.get_free_blocks_call_count;  // ages cached blocks for garbage collection
  }
  // See Note [Search key]
  auto it = pool.blocks.lower_bound(BlockKey{params.stream, params.size, 0});
  if (it == pool.blocks.end() || (*it)->stream != params.stream) return false;
  if ((*it)->expandable != nullptr) {
    if (config_.expandable_segments) {
      // A block at the end of an expandable segment can grow into the unmapped pages after it, so
      // best fit compares the sizes the blocks can expand to.
      auto expandable_size = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable != nullptr && next != pool.blocks.end() &&
             (*next)->stream == params.stream && expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments were switched off after some were made: use only ordinary blocks.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable != nullptr &&
               (*it)->stream == params.stream);
      if (it == pool.blocks.end() || (*it)->stream != params.stream) return false;
    }
  }
  const std::size_t max_split = config_.max_split_size_bytes;
  // Never hand an oversize block to a small request, nor a much larger one to an oversize request.
  if (params.size < max_split && (*it)->size >= max_split) return false;
  if (params.size >= max_split &&
      (*it)->size >= params.size + config_.max_non_split_rounding_bytes) {
    return false;
  }
  params.block = *it;
  params.block_in_pool = true;  // See Note [Pool entries reused in place]
  return true;
}

bool CachingAllocator::alloc_block(AllocParams& params, bool is_retry) {
  if (is_retry) ++stats_.num_alloc_retries;
  if (refuse_device_memory_) [[unlikely]]
    return false;  // See Note [Injected out-of-memory]
  const std::size_t size = params.alloc_size;
  if (memory_fraction_set_ && total_allocated_memory_ + size > allowed_memory_maximum_) {
    return false;
  }
  if (config_.expandable_segments) {
    params.block = try_allocate_expandable_block(params);
    return params.block != nullptr;
  }
  const std::uint64_t address = backing_->allocate_segment(size);
  if (address == 0) return false;
  total_allocated_memory_ += size;
  Block* block = new_block();
  block->address = address;
  block->size = size;
  block->stream = params.stream;
  block->pool = params.pool;
  const std::size_t type = stat_type_of(*params.pool);
  increase_pool_stat(stats_.segment, type, 1);
  increase_pool_stat(stats_.reserved_bytes, type, static_cast<std::int64_t>(size));
  if (size >= config_.max_split_size_bytes) stats_.oversize_segments.increase(1);
  ++stats_.num_device_alloc;
  record_trace(TraceAction::segment_alloc, address, size, params.stream, params);
  params.block = block;
  return true;
}

bool CachingAllocator::should_split(const Block* block, std::size_t size) const {
  const std::size_t remaining = block->size - size;
  if (block->pool->is_small || config_.expandable_segments) return remaining >= kMinBlockSize;
  return size < config_.max_split_size_bytes && remaining > kSmallSize;
}

// See Note [Inlined cached path]
[[gnu::always_inline]] inline Block* CachingAllocator::alloc_found_block(const AllocParams& params,
                                                                         bool split_remainder) {
  const std::size_t size = params.size;
  const std::size_t type = stat_type_of(*params.pool);
  Block* block = params.block;
  const bool already_split = block->is_split();
  if (split_remainder) {
    // The new block takes the low end; the remainder keeps the high end and returns to the pool.
    Block* remaining = block;
    block = new_block();
    block->address = remaining->address;
    block->size = size;
    block->stream = params.stream;
    block->pool = params.pool;
    block->expandable = remaining->expandable;
    block->prev = remaining->prev;
    if (block->prev != nullptr) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->address += size;
    remaining->size -= size;
    if (params.block_in_pool) {  // See Note [Pool entries reused in place]
      insert_into_blocks_at(remaining->pool_entry, remaining, /*grew=*/false);
    } else {
      insert_into_blocks(remaining);
    }
    if (block->expandable == nullptr) {
      if (already_split) {
        decrease_pool_stat(stats_.inactive_split_bytes, type, static_cast<std::int64_t>(size));
      } else {
        increase_pool_stat(stats_.inactive_split_bytes, type,
                           static_cast<std::int64_t>(remaining->size));
        increase_pool_stat(stats_.inactive_split, type, 1);
      }
    }
  } else {
    if (params.block_in_pool) erase_from_blocks(block);
    if (already_split && block->expandable == nullptr) {
      decrease_pool_stat(stats_.inactive_split_bytes, type, static_cast<std::int64_t>(block->size));
      decrease_pool_stat(stats_.inactive_split, type, 1);
    }
  }
  block->allocated = true;
  block->requested_size = params.orig_size;
  block->category = params.category;
  block->module_id = params.module_id;
  block->phase = params.phase;
  block->stack_id = params.stack_id;
  // See Note [Empty names are not copied]
  if (!params.name.empty() || !block->name.empty()) block->name.assign(params.name);
  const auto block_bytes = static_cast<std::int64_t>(block->size);
  increase_pool_stat(stats_.allocation, type, 1);
  increase_pool_stat(stats_.allocated_bytes, type, block_bytes);
  increase_pool_stat(stats_.active, type, 1);
  increase_pool_stat(stats_.active_bytes, type, block_bytes);
  increase_pool_stat(stats_.requested_bytes, type, static_cast<std::int64_t>(params.orig_size));
  if (block->size >= config_.max_split_size_bytes) stats_.oversize_allocations.increase(1);
  category_stats_.allocated_bytes[static_cast<std::size_t>(params.category)].increase(block_bytes);
  category_stats_.requested_bytes[static_cast<std::size_t>(params.category)].increase(
      static_cast<std::int64_t>(params.orig_size));
  record_trace(TraceAction::alloc, block->address, params.orig_size, block->stream, *block);
  return block;
}

// ---- free ----

void CachingAllocator::free(Block* block) {
  if (block == nullptr) return;
  AllocatorLock lock(mutex_);  // See Note [Lock skipped while single-threaded]
  if (!block->in_use || !block->allocated) {
    throw std::logic_error("CachingAllocator::free: the block is not allocated (double free?)");
  }
  block->allocated = false;
  record_trace(TraceAction::free_requested, block->address, block->requested_size, block->stream,
               *block);
  const std::size_t type = stat_type_of(*block->pool);
  const auto block_bytes = static_cast<std::int64_t>(block->size);
  decrease_pool_stat(stats_.allocation, type, 1);
  decrease_pool_stat(stats_.allocated_bytes, type, block_bytes);
  if (block->size >= config_.max_split_size_bytes) stats_.oversize_allocations.decrease(1);
  category_stats_.allocated_bytes[static_cast<std::size_t>(block->category)].decrease(block_bytes);
  category_stats_.requested_bytes[static_cast<std::size_t>(block->category)].decrease(
      static_cast<std::int64_t>(block->requested_size));
  if (!block->stream_uses.empty()) {
    insert_events(block);
  } else {
    free_block(block);
  }
}

void CachingAllocator::free_block(Block* block) {
  record_trace(TraceAction::free_completed, block->address, block->requested_size, block->stream,
               *block);
  const std::size_t original_size = block->size;
  const std::size_t requested_size = block->requested_size;
  BlockPool& pool = *block->pool;
  BlockPool::Set& set = block->mapped ? pool.blocks : pool.unmapped;
  std::int64_t net_inactive_split_blocks = 0;
  std::int64_t net_inactive_split_bytes = 0;
  auto entry = set.end();  // See Note [Pool entries reused in place]
  for (Block* merge_candidate : {block->prev, block->next}) {
    const std::size_t subsumed_size = try_merge_blocks(block, merge_candidate, pool, &entry);
    if (subsumed_size > 0) {
      net_inactive_split_blocks -= 1;
      net_inactive_split_bytes -= static_cast<std::int64_t>(subsumed_size);
    }
  }
  block->requested_size = 0;
  block->name.clear();
  block->category = MemoryCategory::other;
  block->module_id = 0;
  block->phase = TrainingPhase::none;
  block->stack_id = 0;
  if (entry != set.end()) {
    insert_into_blocks_at(entry, block, /*grew=*/true);
  } else {
    insert_into_blocks(block);
  }
  if (block->is_split()) {
    net_inactive_split_blocks += 1;
    net_inactive_split_bytes += static_cast<std::int64_t>(block->size);
  }
  const std::size_t type = stat_type_of(pool);
  if (block->expandable == nullptr) {
    if (net_inactive_split_blocks > 0) {
      increase_pool_stat(stats_.inactive_split, type, net_inactive_split_blocks);
    } else if (net_inactive_split_blocks < 0) {
      decrease_pool_stat(stats_.inactive_split, type, -net_inactive_split_blocks);
    }
    if (net_inactive_split_bytes > 0) {
      increase_pool_stat(stats_.inactive_split_bytes, type, net_inactive_split_bytes);
    } else if (net_inactive_split_bytes < 0) {
      decrease_pool_stat(stats_.inactive_split_bytes, type, -net_inactive_split_bytes);
    }
  }
  decrease_pool_stat(stats_.active, type, 1);
  decrease_pool_stat(stats_.active_bytes, type, static_cast<std::int64_t>(original_size));
  decrease_pool_stat(stats_.requested_bytes, type, static_cast<std::int64_t>(requested_size));
}

// See Note [Inlined cached path]
[[gnu::always_inline]] inline std::size_t CachingAllocator::try_merge_blocks(
    Block* dst, Block* src, BlockPool& pool, BlockPool::Set::iterator* dst_entry) {
  if (src == nullptr || src->allocated || src->event_count > 0 || !src->stream_uses.empty() ||
      dst->mapped != src->mapped) {
    return 0;
  }
  BlockPool::Set& set = src->mapped ? pool.blocks : pool.unmapped;
  if (dst_entry != nullptr && *dst_entry == set.end()) {
    *dst_entry = src->pool_entry;  // See Note [Pool entries reused in place]
  } else {
    spare_nodes_.push_back(set.extract(src->pool_entry));
  }
  if (dst->prev == src) {  // [src dst]
    dst->address = src->address;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const std::size_t subsumed_size = src->size;
  dst->size += subsumed_size;
  delete_block(src);
  return subsumed_size;
}

// ---- block objects and pool sets ----

Block* CachingAllocator::new_block() {  // See Note [Spare blocks]
  Block* block = nullptr;
  if (spare_blocks_ != nullptr) {
    block = spare_blocks_;
    spare_blocks_ = block->next;
    block->next = nullptr;
  } else {
    block = &block_storage_.emplace_back();
  }
  block->in_use = true;
  return block;
}

void CachingAllocator::delete_block(Block* block) {  // See Note [Spare blocks]
  block->in_use = false;
  block->allocated = false;
  block->prev = nullptr;
  block->stream_uses.clear();
  block->event_count = 0;
  block->expandable = nullptr;
  block->mapped = true;
  block->name.clear();
  block->next = spare_blocks_;
  spare_blocks_ = block;
}

void CachingAllocator::insert_into_blocks(Block* block) {
  block->gc_count_base = block->pool->get_free_blocks_call_count;
  pool_insert(block->mapped ? block->pool->blocks : block->pool->unmapped, block);
}

// See Note [Pool entries reused in place] and Note [Inlined cached path]
[[gnu::always_inline]] inline void CachingAllocator::insert_into_blocks_at(
    BlockPool::Set::iterator entry, Block* block, bool grew) {
  block->gc_count_base = block->pool->get_free_blocks_call_count;
  BlockPool::Set& set = block->mapped ? block->pool->blocks : block->pool->unmapped;
  const BlockComparator before;
  bool in_order = false;
  if (grew) {
    const auto after_entry = std::next(entry);
    in_order = after_entry == set.end() || before(block, *after_entry);
  } else {
    in_order = entry == set.begin() || before(*std::prev(entry), block);
  }
  if (in_order) {
    const_cast<Block*&>(*entry) = block;
    block->pool_entry = entry;
    return;
  }
  spare_nodes_.push_back(set.extract(entry));
  pool_insert(set, block);
}

void CachingAllocator::erase_from_blocks(Block* block) {
  BlockPool::Set& set = block->mapped ? block->pool->blocks : block->pool->unmapped;
  spare_nodes_.push_back(set.extract(block->pool_entry));
}

// See Note [Pool entries reused in place]
void CachingAllocator::pool_insert(BlockPool::Set& set, Block* block) {
  if (!spare_nodes_.empty()) {
    BlockPool::Set::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.value() = block;
    block->pool_entry = set.insert(std::move(node)).position;
  } else {
    block->pool_entry = set.insert(block).first;
  }
}

void CachingAllocator::pool_erase(BlockPool::Set& set, Block* block) {
  auto it = set.find(block);
  if (it != set.end()) spare_nodes_.push_back(set.extract(it));
}

std::size_t CachingAllocator::stat_type_of(const BlockPool& pool) {
  return pool.is_small ? kSmallPool : kLargePool;
}

// ---- streams and events ----

void CachingAllocator::record_stream(Block* block, StreamId stream) {
  AllocatorLock lock(mutex_);
  if (block == nullptr || !block->allocated) {
    throw std::logic_error("CachingAllocator::record_stream: the block is not allocated");
  }
  if (stream == block->stream) return;
  if (clock_ != nullptr) (void)clock_->stream_time(stream);  // refuses an unknown stream now
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
      block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
}

void CachingAllocator::insert_events(Block* block) {
  for (StreamId stream : block->stream_uses) {
    PendingEvent pending{stream, block, false, {}};
    if (clock_ != nullptr) pending.event.record(*clock_, stream);
    events_.push_back(pending);
    ++block->event_count;
  }
  block->stream_uses.clear();
}

void CachingAllocator::set_clock(stream::Clock* clock) {
  AllocatorLock lock(mutex_);
  clock_ = clock;
}

void CachingAllocator::process_events() {
  if (events_.empty()) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    PendingEvent event = events_[i];
    // Without a clock the event was never recorded: only synchronize() completes it.
    if (!event.completed && !(event.event.recorded() && event.event.query())) {
      events_[kept++] = event;
      continue;
    }
    if (--event.block->event_count == 0) free_block(event.block);
  }
  events_.resize(kept);
}

void CachingAllocator::synchronize() {
  AllocatorLock lock(mutex_);
  if (clock_ != nullptr) clock_->synchronize();
  for (PendingEvent& event : events_) event.completed = true;
}

void CachingAllocator::synchronize_stream(StreamId stream) {
  AllocatorLock lock(mutex_);
  if (clock_ != nullptr) clock_->synchronize_stream(stream);
  for (PendingEvent& event : events_) {
    if (event.stream == stream) event.completed = true;
  }
}

void CachingAllocator::synchronize_and_free_events() {
  ++stats_.num_sync_all_streams;
  std::vector<PendingEvent> events;
  events.swap(events_);
  for (PendingEvent& event : events) {
    if (--event.block->event_count == 0) free_block(event.block);
  }
}

// ---- giving memory back to the device ----

void CachingAllocator::empty_cache() {
  AllocatorLock lock(mutex_);
  release_cached_blocks();
}

bool CachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  release_blocks(large_blocks_);
  release_blocks(small_blocks_);
  return true;
}

void CachingAllocator::release_blocks(BlockPool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    ++it;
    if (block->expandable != nullptr) {
      to_unmap.push_back(block);  // unmapping edits the pool: do it after the walk
    } else if (!block->is_split()) {
      release_block(block);
    }
  }
  for (Block* block : to_unmap) {
    unmap_block(block);
    if (!block->mapped && !block->is_split()) release_expandable_segment(block);
  }
}

void CachingAllocator::release_block(Block* block) {
  backing_->free_segment(block->address, block->size);
  total_allocated_memory_ -= block->size;
  const std::size_t type = stat_type_of(*block->pool);
  decrease_pool_stat(stats_.segment, type, 1);
  decrease_pool_stat(stats_.reserved_bytes, type, static_cast<std::int64_t>(block->size));
  if (block->size >= config_.max_split_size_bytes) stats_.oversize_segments.decrease(1);
  ++stats_.num_device_free;
  record_trace(TraceAction::segment_free, block->address, block->size, block->stream, NoLabels{});
  pool_erase(block->pool->blocks, block);
  delete_block(block);
}

bool CachingAllocator::release_available_cached_blocks(const AllocParams& params) {
  const std::size_t max_split = config_.max_split_size_bytes;
  if (max_split == std::numeric_limits<std::size_t>::max()) return false;
  BlockPool& pool = *params.pool;
  const BlockKey key{params.stream, std::max(params.size, max_split), 0};
  auto it = pool.blocks.lower_bound(key);
  // The smallest whole cached segment that is large enough, if there is one on this stream.
  while (it != pool.blocks.end() && (*it)->stream == params.stream &&
         ((*it)->expandable != nullptr || (*it)->is_split())) {
    ++it;
  }
  if (it != pool.blocks.end() && (*it)->stream == params.stream) {
    release_block(*it);
    return true;
  }
  // Otherwise free oversize segments, largest first, until enough is released.
  std::vector<Block*> oversize;
  for (auto rit = pool.blocks.rbegin(); rit != pool.blocks.rend(); ++rit) {
    const Block* b = *rit;
    if (b->stream == params.stream && b->size >= max_split && b->expandable == nullptr &&
        !b->is_split()) {
      oversize.push_back(*rit);
    }
  }
  std::size_t released = 0;
  for (Block* block : oversize) {
    if (released >= key.size) break;
    released += block->size;
    release_block(block);
  }
  return released >= key.size;
}

void CachingAllocator::garbage_collect_cached_blocks() {
  const auto gc_threshold = static_cast<std::uint64_t>(
      config_.garbage_collection_threshold * static_cast<double>(allowed_memory_maximum_));
  if (total_allocated_memory_ <= gc_threshold) return;
  const std::uint64_t target = total_allocated_memory_ - gc_threshold;
  std::uint64_t reclaimed = 0;
  double total_age = 0.0;
  std::size_t freeable = 0;
  for (const Block* block : large_blocks_.blocks) {
    if (!block->is_split() && block->expandable == nullptr) {
      total_age +=
          static_cast<double>(large_blocks_.get_free_blocks_call_count - block->gc_count_base);
      ++freeable;
    }
  }
  bool freed_one = true;
  while (reclaimed < target && freed_one && freeable > 0) {
    // Free the blocks at least as old as the mean age, then recompute the mean.
    const double age_threshold = total_age / static_cast<double>(freeable);
    freed_one = false;
    for (auto it = large_blocks_.blocks.begin(); it != large_blocks_.blocks.end();) {
      Block* block = *it;
      ++it;
      const auto age =
          static_cast<double>(large_blocks_.get_free_blocks_call_count - block->gc_count_base);
      if (!block->is_split() && block->expandable == nullptr && age >= age_threshold) {
        freed_one = true;
        reclaimed += block->size;
        total_age -= age;
        --freeable;
        release_block(block);
      }
    }
  }
}

void CachingAllocator::set_memory_fraction(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    char text[64];
    std::snprintf(text, sizeof(text), "%g", fraction);
    throw UsageError(std::string("invalid memory fraction ") + text + " (expected 0 to 1)");
  }
  AllocatorLock lock(mutex_);
  memory_fraction_set_ = true;
  allowed_memory_maximum_ =
      static_cast<std::uint64_t>(fraction * static_cast<double>(backing_->total_bytes()));
}

void CachingAllocator::set_config(const AllocatorConfig& config) {
  AllocatorLock lock(mutex_);
  config_ = config;
  stats_.max_split_size = config_.max_split_size_bytes == std::numeric_limits<std::size_t>::max()
                              ? -1
                              : static_cast<std::int64_t>(config_.max_split_size_bytes);
}

AllocatorConfig CachingAllocator::config() const {
  AllocatorLock lock(mutex_);
  return config_;
}

// ---- out of memory ----

void CachingAllocator::throw_more_than_exabyte(std::size_t bytes) {
  OutOfMemoryDetails details;
  details.requested_bytes = bytes;
  details.capacity_bytes = backing_->total_bytes();
  details.free_bytes = backing_->free_bytes();
  throw OutOfMemoryError(device_label_ + " out of memory. Tried to allocate more than 1EB memory.",
                         std::move(details));
}

void CachingAllocator::check_cold_request(std::size_t bytes, StreamId stream,
                                          MemoryCategory category, std::string_view name,
                                          StackId stack_id) {
  if (bytes >= kOneExaByte) throw_more_than_exabyte(bytes);
  if (injected_oom_countdown_ == 0 || --injected_oom_countdown_ > 0) return;
  cold_request_bytes_ = kOneExaByte;
  process_events();
  AllocParams params = request_params(bytes, stream, category, name, stack_id);
  fail_as_full_device(params);
}

void CachingAllocator::fail_as_full_device(AllocParams& params) {
  // malloc's path after get_free_block found nothing, with every segment request refused.
  struct Refusal {
    bool& refuse;
    explicit Refusal(bool& flag) : refuse(flag) { refuse = true; }
    ~Refusal() { refuse = false; }
    Refusal(const Refusal&) = delete;
    Refusal& operator=(const Refusal&) = delete;
  } refusal(refuse_device_memory_);
  if (memory_fraction_set_ && config_.garbage_collection_threshold > 0.0) {
    garbage_collect_cached_blocks();
  }
  if (alloc_block(params, false) ||
      (release_available_cached_blocks(params) && alloc_block(params, false)) ||
      (release_cached_blocks() && alloc_block(params, true))) {
    throw std::logic_error("CachingAllocator: a refused device served a segment");
  }
  throw_out_of_memory(params);
}

void CachingAllocator::inject_out_of_memory(std::uint64_t k) {
  AllocatorLock lock(mutex_);  // See Note [Lock skipped while single-threaded]
  injected_oom_countdown_ = k;
  cold_request_bytes_ = k == 0 ? kOneExaByte : 1;
}

std::uint64_t CachingAllocator::injected_out_of_memory_countdown() const {
  AllocatorLock lock(mutex_);
  return injected_oom_countdown_;
}

void CachingAllocator::throw_out_of_memory(const AllocParams& params) {
  // A sim device refused by the host's RAM (not by its capacity) throws HostMemoryError here; an
  // injected refusal is a full device (see Note [Injected out-of-memory]).
  if (!refuse_device_memory_) backing_->raise_refusal_cause(device_label_);
  OutOfMemoryDetails details;
  details.requested_bytes = params.orig_size;
  details.rounded_bytes = params.size;
  details.segment_bytes = params.alloc_size;
  details.capacity_bytes = backing_->total_bytes();
  details.free_bytes = backing_->free_bytes();
  details.allowed_bytes = memory_fraction_set_ ? allowed_memory_maximum_ : 0;
  const DeviceStats stats = with_aggregate_sums(stats_);
  details.allocated_bytes = stats.allocated_bytes[kAggregate].current;
  details.reserved_bytes = stats.reserved_bytes[kAggregate].current;
  details.reserved_unallocated_bytes = details.reserved_bytes - details.allocated_bytes;
  details.largest_live_blocks = live_blocks_locked();
  if (details.largest_live_blocks.size() > 10) details.largest_live_blocks.resize(10);
  ++stats_.num_ooms;
  record_trace(TraceAction::oom, details.free_bytes, params.size, params.stream, params);
  const std::string allowed_info =
      memory_fraction_set_ ? format_size(allowed_memory_maximum_) + " allowed; " : std::string();
  std::string message =
      device_label_ + " out of memory. Tried to allocate " + format_size(params.alloc_size) +
      ". GPU " + std::to_string(device_index_) + " has a total capacity of " +
      format_size(details.capacity_bytes) + " of which " + format_size(details.free_bytes) +
      " is free. " + allowed_info + "Of the allocated memory " +
      format_size(static_cast<std::uint64_t>(details.allocated_bytes)) +
      " is allocated by PyTorch, and " +
      format_size(static_cast<std::uint64_t>(details.reserved_unallocated_bytes)) +
      " is reserved by PyTorch but unallocated. If reserved but unallocated "
      "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
      "True to avoid fragmentation.  See documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
  throw OutOfMemoryError(message, std::move(details));
}

std::string format_size(std::uint64_t bytes) {
  char text[64];
  if (bytes <= 1024) {
    std::snprintf(text, sizeof(text), "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes <= 1048576) {
    std::snprintf(text, sizeof(text), "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= 1073741824ULL) {
    std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return text;
}

// ---- expandable segments ----

Block* CachingAllocator::try_allocate_expandable_block(AllocParams& params) {
  Block* candidate = find_expandable_block(params);
  if (candidate == nullptr) return nullptr;
  const std::size_t size = params.size;
  // candidate is one of: unmapped -> *, free -> unmapped -> *, or a free run long enough.
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), &params)) {
    return nullptr;
  }
  while (candidate->size < size) {
    // candidate is free and mapped, followed by unmapped space: map some and merge.
    Block* next = candidate->next;
    if (!map_block(next, std::min(size - candidate->size, next->size), &params)) return nullptr;
    candidate = next;
  }
  pool_erase(candidate->pool->blocks, candidate);
  return candidate;
}

Block* CachingAllocator::find_expandable_block(AllocParams& params) {
  BlockPool& pool = *params.pool;
  const std::size_t size = params.size;
  auto allocatable = [](const Block* b) {
    return b != nullptr && !b->allocated && b->event_count == 0 && b->stream_uses.empty();
  };
  auto has_room = [&](const Block* b) {
    std::size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  for (auto it = pool.unmapped.lower_bound(BlockKey{params.stream, 0, 0});
       it != pool.unmapped.end() && (*it)->stream == params.stream; ++it) {
    Block* candidate = *it;
    // Start at the free block just before the unmapped range, if any, so they join.
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    if (has_room(candidate)) return candidate;
  }
  const std::size_t page_bytes = pool.is_small ? kSmallBuffer : kLargeBuffer;
  // Address space for 1 1/8 of the device, so pages can be remapped at the end.
  std::size_t space = static_cast<std::size_t>(backing_->total_bytes() / 8 * 9);
  space = (space + page_bytes - 1) / page_bytes * page_bytes;
  const std::uint64_t address = backing_->reserve_address_range(space);
  if (address == 0) return nullptr;
  auto segment = std::make_unique<ExpandableSegment>();
  segment->address = address;
  segment->size = space;
  segment->page_bytes = page_bytes;
  segment->stream = params.stream;
  segment->pool = &pool;
  Block* candidate = new_block();
  candidate->address = address;
  candidate->size = space;
  candidate->stream = params.stream;
  candidate->pool = &pool;
  candidate->mapped = false;
  candidate->expandable = segment.get();
  expandable_segments_.push_back(std::move(segment));
  insert_into_blocks(candidate);
  return candidate;
}

bool CachingAllocator::map_block(Block* to_map, std::size_t size, const AllocParams* params) {
  ExpandableSegment& segment = *to_map->expandable;
  const std::size_t first_page = (to_map->address - segment.address) / segment.page_bytes;
  const std::size_t end_page =
      (to_map->address + size - segment.address + segment.page_bytes - 1) / segment.page_bytes;
  for (std::size_t page = first_page; page < end_page; ++page) {
    if (!backing_->map_pages(segment.address + page * segment.page_bytes, segment.page_bytes)) {
      for (std::size_t undo = first_page; undo < page; ++undo) {
        backing_->unmap_pages(segment.address + undo * segment.page_bytes, segment.page_bytes);
      }
      return false;
    }
  }
  const std::size_t mapped_bytes = (end_page - first_page) * segment.page_bytes;
  BlockPool& pool = *to_map->pool;
  pool_erase(pool.unmapped, to_map);
  to_map->mapped = true;
  if (mapped_bytes < to_map->size) {
    // to_map -> remaining(unmapped) -> to_map->next
    Block* remaining = new_block();
    remaining->address = to_map->address + mapped_bytes;
    remaining->size = to_map->size - mapped_bytes;
    remaining->stream = to_map->stream;
    remaining->pool = &pool;
    remaining->mapped = false;
    remaining->expandable = to_map->expandable;
    remaining->prev = to_map;
    remaining->next = to_map->next;
    if (remaining->next != nullptr) remaining->next->prev = remaining;
    to_map->next = remaining;
    insert_into_blocks(remaining);
    to_map->size = mapped_bytes;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  insert_into_blocks(to_map);
  total_allocated_memory_ += mapped_bytes;
  const std::size_t type = stat_type_of(pool);
  increase_pool_stat(stats_.reserved_bytes, type, static_cast<std::int64_t>(mapped_bytes));
  ++stats_.num_device_alloc;
  const std::uint64_t mapped_address = segment.address + first_page * segment.page_bytes;
  if (params != nullptr) {
    record_trace(TraceAction::segment_map, mapped_address, mapped_bytes, to_map->stream, *params);
  } else {
    record_trace(TraceAction::segment_map, mapped_address, mapped_bytes, to_map->stream,
                 NoLabels{});
  }
  return true;
}

void CachingAllocator::unmap_block(Block* block) {
  ExpandableSegment& segment = *block->expandable;
  const std::uint64_t offset = block->address - segment.address;
  // Only whole pages inside the block can be unmapped.
  const std::size_t first_page = (offset + segment.page_bytes - 1) / segment.page_bytes;
  const std::size_t end_page = (offset + block->size) / segment.page_bytes;
  if (first_page >= end_page) return;
  const std::uint64_t unmapped_address = segment.address + first_page * segment.page_bytes;
  const std::size_t unmapped_bytes = (end_page - first_page) * segment.page_bytes;
  for (std::size_t page = first_page; page < end_page; ++page) {
    backing_->unmap_pages(segment.address + page * segment.page_bytes, segment.page_bytes);
  }
  BlockPool& pool = *block->pool;
  pool_erase(pool.blocks, block);
  const std::size_t before_bytes = unmapped_address - block->address;
  if (before_bytes > 0) {
    // prev -> before_free -> block
    Block* before = new_block();
    before->address = block->address;
    before->size = before_bytes;
    before->stream = block->stream;
    before->pool = &pool;
    before->expandable = block->expandable;
    before->prev = block->prev;
    if (before->prev != nullptr) before->prev->next = before;
    before->next = block;
    block->prev = before;
    insert_into_blocks(before);
  }
  const std::size_t after_bytes = block->size - before_bytes - unmapped_bytes;
  if (after_bytes > 0) {
    // block -> after_free -> next
    Block* after = new_block();
    after->address = unmapped_address + unmapped_bytes;
    after->size = after_bytes;
    after->stream = block->stream;
    after->pool = &pool;
    after->expandable = block->expandable;
    after->next = block->next;
    if (after->next != nullptr) after->next->prev = after;
    after->prev = block;
    block->next = after;
    insert_into_blocks(after);
  }
  block->address = unmapped_address;
  block->size = unmapped_bytes;
  block->mapped = false;
  try_merge_blocks(block, block->prev, pool);
  try_merge_blocks(block, block->next, pool);
  insert_into_blocks(block);
  total_allocated_memory_ -= unmapped_bytes;
  const std::size_t type = stat_type_of(pool);
  decrease_pool_stat(stats_.reserved_bytes, type, static_cast<std::int64_t>(unmapped_bytes));
  ++stats_.num_device_free;
  record_trace(TraceAction::segment_unmap, unmapped_address, unmapped_bytes, block->stream,
               NoLabels{});
}

void CachingAllocator::release_expandable_segment(Block* block) {
  ExpandableSegment* segment = block->expandable;
  pool_erase(block->pool->unmapped, block);
  backing_->release_address_range(segment->address, segment->size);
  delete_block(block);
  auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                         [segment](const auto& s) { return s.get() == segment; });
  expandable_segments_.erase(it);
}

// ---- history ----

void CachingAllocator::store_trace_entry(TraceAction action, std::uint64_t address,
                                         std::size_t size, StreamId stream, MemoryCategory category,
                                         std::uint32_t module_id, TrainingPhase phase,
                                         StackId stack_id, std::string_view name) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  TraceEntry entry{.action = action,
                   .address = address,
                   .size = size,
                   .stream = stream,
                   .time_us = event_counter_,
                   .time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                   .category = category,
                   .name = std::string(name),
                   .module = module_path(module_id),
                   .phase = phase,
                   .stack = stack_id};
  if (trace_.size() < max_trace_entries_) {
    trace_.push_back(std::move(entry));
  } else {
    trace_[trace_next_] = std::move(entry);
    trace_next_ = (trace_next_ + 1) % max_trace_entries_;
  }
}

void CachingAllocator::record_history(RecordMode mode, std::size_t max_entries, bool cpp_stacks) {
  AllocatorLock lock(mutex_);
  record_mode_ = mode;
  record_stacks_.store(cpp_stacks && mode != RecordMode::off, std::memory_order_relaxed);
  history_settings_ = HistorySettings{mode, max_entries, cpp_stacks};
  max_trace_entries_ = mode == RecordMode::all ? max_entries : 0;
  trace_.clear();
  trace_next_ = 0;
}

CachingAllocator::HistorySettings CachingAllocator::history_settings() const {
  AllocatorLock lock(mutex_);
  return history_settings_;
}

std::vector<TraceEntry> CachingAllocator::trace() const {
  AllocatorLock lock(mutex_);
  std::vector<TraceEntry> ordered;
  ordered.reserve(trace_.size());
  for (std::size_t i = 0; i < trace_.size(); ++i) {
    ordered.push_back(trace_[(trace_next_ + i) % trace_.size()]);
  }
  return ordered;
}

// ---- inspection ----

DeviceStats CachingAllocator::stats() const {
  AllocatorLock lock(mutex_);
  return with_aggregate_sums(stats_);
}

std::vector<std::pair<std::string, std::int64_t>> CachingAllocator::memory_stats() const {
  return stats().to_key_values();
}

CategoryStats CachingAllocator::category_stats() const {
  AllocatorLock lock(mutex_);
  return category_stats_;
}

void CachingAllocator::reset_peak_stats() {
  AllocatorLock lock(mutex_);
  reset_pool_stats_peak(stats_);
  for (Stat& stat : category_stats_.allocated_bytes) stat.peak = stat.current;
  for (Stat& stat : category_stats_.requested_bytes) stat.peak = stat.current;
}

void CachingAllocator::reset_accumulated_stats() {
  AllocatorLock lock(mutex_);
  stats_.reset_accumulated();
  for (Stat& stat : category_stats_.allocated_bytes) stat.allocated = stat.freed = 0;
  for (Stat& stat : category_stats_.requested_bytes) stat.allocated = stat.freed = 0;
}

std::uint64_t CachingAllocator::capacity_bytes() const {
  AllocatorLock lock(mutex_);
  return backing_->total_bytes();
}

std::uint64_t CachingAllocator::free_bytes() const {
  AllocatorLock lock(mutex_);
  return backing_->free_bytes();
}

bool CachingAllocator::host_accessible() const {
  return backing_->host_accessible();
}

std::vector<const Block*> CachingAllocator::all_blocks_locked() const {
  std::vector<const Block*> blocks;
  for (const Block& block : block_storage_) {
    if (block.in_use) blocks.push_back(&block);
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Block* a, const Block* b) { return a->address < b->address; });
  return blocks;
}

std::vector<LiveBlockInfo> CachingAllocator::live_blocks_locked() const {
  std::vector<LiveBlockInfo> live;
  for (const Block& block : block_storage_) {
    if (!block.in_use || !block.allocated) continue;
    live.push_back(LiveBlockInfo{block.address, block.size, block.requested_size, block.category,
                                 block.name, module_path(block.module_id), block.phase,
                                 block.stack_id});
  }
  std::sort(live.begin(), live.end(), [](const LiveBlockInfo& a, const LiveBlockInfo& b) {
    return a.size_bytes != b.size_bytes ? a.size_bytes > b.size_bytes : a.address < b.address;
  });
  return live;
}

std::vector<LiveBlockInfo> CachingAllocator::live_blocks() const {
  AllocatorLock lock(mutex_);
  return live_blocks_locked();
}

void CachingAllocator::check_invariants() const {
  AllocatorLock lock(mutex_);
  auto fail = [](const std::string& what) {
    throw std::logic_error("allocator invariant: " + what);
  };
  DeviceStats expected;
  std::array<std::int64_t, kMemoryCategoryCount> category_bytes{};
  std::array<std::int64_t, kMemoryCategoryCount> category_requested{};
  std::size_t free_mapped = 0;
  std::size_t free_unmapped = 0;
  std::uint64_t previous_end = 0;
  std::uint64_t reserved_total = 0;
  bool pending_free = false;
  for (const Block* block : all_blocks_locked()) {
    const std::size_t t = stat_type_of(*block->pool);
    if (block->address < previous_end) fail("blocks overlap at " + std::to_string(block->address));
    previous_end = block->address + block->size;
    if (block->size == 0) fail("empty block");
    if (block->prev != nullptr && (block->prev->next != block ||
                                   block->prev->address + block->prev->size != block->address)) {
      fail("broken prev link at " + std::to_string(block->address));
    }
    if (block->next != nullptr &&
        (block->next->prev != block || block->address + block->size != block->next->address)) {
      fail("broken next link at " + std::to_string(block->address));
    }
    const bool is_free = !block->allocated && block->event_count == 0;
    if (block->next != nullptr && is_free && !block->next->allocated &&
        block->next->event_count == 0 && block->mapped == block->next->mapped) {
      fail("free neighbours not merged at " + std::to_string(block->address));
    }
    const BlockPool::Set& set = block->mapped ? block->pool->blocks : block->pool->unmapped;
    const auto entry = set.find(const_cast<Block*>(block));
    if (is_free != (entry != set.end())) {
      fail("pool membership wrong at " + std::to_string(block->address));
    }
    if (is_free && block->pool_entry != entry) {
      fail("pool entry of the free block at " + std::to_string(block->address) + " is stale");
    }
    if (is_free) (block->mapped ? free_mapped : free_unmapped) += 1;
    if (block->expandable == nullptr && block->prev == nullptr) {
      std::size_t segment_bytes = 0;
      for (const Block* b = block; b != nullptr; b = b->next) segment_bytes += b->size;
      for (std::size_t s : {static_cast<std::size_t>(kAggregate), t}) {
        expected.segment[s].current += 1;
        expected.reserved_bytes[s].current += static_cast<std::int64_t>(segment_bytes);
      }
      reserved_total += segment_bytes;
    }
    if (block->expandable != nullptr && block->mapped) {
      for (std::size_t s : {static_cast<std::size_t>(kAggregate), t}) {
        expected.reserved_bytes[s].current += static_cast<std::int64_t>(block->size);
      }
      reserved_total += block->size;
    }
    const auto bytes = static_cast<std::int64_t>(block->size);
    for (std::size_t s : {static_cast<std::size_t>(kAggregate), t}) {
      if (block->allocated) {
        expected.allocation[s].current += 1;
        expected.allocated_bytes[s].current += bytes;
      }
      if (block->allocated || block->event_count > 0) {
        expected.active[s].current += 1;
        expected.active_bytes[s].current += bytes;
        expected.requested_bytes[s].current += static_cast<std::int64_t>(block->requested_size);
      }
      if (is_free && block->is_split() && block->expandable == nullptr) {
        expected.inactive_split[s].current += 1;
        expected.inactive_split_bytes[s].current += bytes;
      }
    }
    if (block->allocated) {
      category_bytes[static_cast<std::size_t>(block->category)] += bytes;
      category_requested[static_cast<std::size_t>(block->category)] +=
          static_cast<std::int64_t>(block->requested_size);
    }
    if (!block->allocated && block->event_count > 0) pending_free = true;
  }
  if (free_mapped != small_blocks_.blocks.size() + large_blocks_.blocks.size() ||
      free_unmapped != small_blocks_.unmapped.size() + large_blocks_.unmapped.size()) {
    fail("pools hold blocks that are not free");
  }
  const DeviceStats actual = with_aggregate_sums(stats_);
  const std::pair<const char*, std::pair<const StatArray*, const StatArray*>> arrays[] = {
      {"allocation", {&expected.allocation, &actual.allocation}},
      {"segment", {&expected.segment, &actual.segment}},
      {"active", {&expected.active, &actual.active}},
      {"inactive_split", {&expected.inactive_split, &actual.inactive_split}},
      {"allocated_bytes", {&expected.allocated_bytes, &actual.allocated_bytes}},
      {"reserved_bytes", {&expected.reserved_bytes, &actual.reserved_bytes}},
      {"active_bytes", {&expected.active_bytes, &actual.active_bytes}},
      {"inactive_split_bytes", {&expected.inactive_split_bytes, &actual.inactive_split_bytes}},
      {"requested_bytes", {&expected.requested_bytes, &actual.requested_bytes}},
  };
  for (const auto& [name, pair] : arrays) {
    for (std::size_t s = 0; s < 3; ++s) {
      const Stat& stat = (*pair.second)[s];
      if ((*pair.first)[s].current != stat.current) {
        fail(std::string(name) + "[" + std::to_string(s) + "] is " + std::to_string(stat.current) +
             ", blocks sum to " + std::to_string((*pair.first)[s].current));
      }
      if (stat.peak < stat.current) {
        fail(std::string(name) + "[" + std::to_string(s) + "]: peak " + std::to_string(stat.peak) +
             " below current " + std::to_string(stat.current));
      }
    }
  }
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    if (category_bytes[c] != category_stats_.allocated_bytes[c].current) {
      fail("category " + std::string(category_name(kAllMemoryCategories[c])) + " bytes");
    }
    if (category_requested[c] != category_stats_.requested_bytes[c].current) {
      fail("category " + std::string(category_name(kAllMemoryCategories[c])) + " requested bytes");
    }
  }
  if (reserved_total != total_allocated_memory_) fail("total reserved memory");
  const std::int64_t reserved = actual.reserved_bytes[kAggregate].current;
  const std::int64_t active = actual.active_bytes[kAggregate].current;
  const std::int64_t allocated = actual.allocated_bytes[kAggregate].current;
  const std::int64_t requested = actual.requested_bytes[kAggregate].current;
  if (!(reserved >= active && active >= allocated && active >= requested)) {
    fail("reserved >= active >= allocated, active >= requested");
  }
  if (!pending_free && allocated < requested) fail("allocated >= requested");
}

}  // namespace vramlab::memory

// ---- Notes on the speed of the cached pair ----
//
// Note [Measuring the cached pair]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Wall-clock timings on a shared machine drift by more than most tricks gain, so each trick is
// measured in instructions, which callgrind counts exactly. A driver builds one allocator on the
// host backing (as bench_caching_allocator does), warms it with one 512 B pair, then runs N cached
// malloc+free pairs of 512 B; under `valgrind --tool=callgrind` the difference between N = 300000
// and N = 100000, divided by 200000, is the cost of one pair without start-up. The driver is built
// with the ci preset's flags (-O3, g++ 12). This code costs 559 instructions per pair; each Note's
// gain is the same code with only that trick undone. A trick stays only if it saves more than ~3%
// (17 instructions). Undone for that reason: lazy peaks for the pool statistics (raising a peak on
// every increase costs 8 instructions fewer), malloc's cache-miss path out of line (no difference),
// testing events_ before calling process_events (no difference), and always-inline attributes on
// free_block, delete_block and the pool-stat helpers (5 instructions together).
//
// Note [Lock skipped while single-threaded]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every public member takes the allocator's lock through AllocatorLock (allocator_lock.h), which
// takes the std::mutex only when the process may have several threads (glibc's
// `__libc_single_threaded` is false). glibc's pthread_mutex_lock/unlock make the same test and then
// take no atomic, but they are calls that also dispatch on the mutex type. Skipping them is safe:
// while the flag is true no other thread exists and only this thread could create one; it is inside
// an allocator call, which never starts a thread that calls the allocator (a backing may start
// helper threads, e.g. the CUDA runtime's, but they never call it). The decision is taken once per
// guard and kept, so a guard that took no lock never unlocks, even when the process gains a thread
// during the call; once the process has had a second thread glibc keeps the flag false for good.
// Without glibc's flag every call locks. Cost in readability: a guard class instead of
// std::lock_guard. Gain: 123 instructions per pair (682 -> 559).
// tests/memory/test_allocator_threads.cpp checks the kept decision and runs 4 threads on one
// allocator.
//
// Note [Pool entries reused in place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch erases the block it finds from its pool (get_free_block), inserts a split's remainder
// (alloc_found_block), and on free erases each merged neighbour and inserts the merged block
// (try_merge_blocks, free_block): four tree operations per cached pair, each a search, a node
// allocation or deallocation and a rebalance. Here:
// - a free block knows its entry in its pool's set (Block::pool_entry), so merging a neighbour
//   needs no search for it;
// - get_free_block leaves the found block in its pool (AllocParams::block_in_pool), and a split's
//   remainder takes over its entry; on free, the merged block takes over the entry of the first
//   neighbour it absorbs (try_merge_blocks' dst_entry) and the second neighbour's entry is removed.
//   insert_into_blocks_at stores the new block pointer in the entry when the set's order allows
//   (the entry's neighbours still order around the block), else moves the node to its sorted place.
//   Only one side needs checking: a remainder shrank and a merged block grew, on the same stream.
//   Rewriting the pointer in a std::set node keeps the tree valid because no entry changes place;
// - nodes taken out of a set are kept (spare_nodes_) and reused by the next insertion.
// Cost in readability: get_free_block and try_merge_blocks leave work to their callers, and a
// const_cast rewrites a set element. Gain: 232 instructions per pair (791 -> 559 with every entry
// erased and inserted again); of these, finding a merged neighbour by Block::pool_entry instead of
// set::find is 56 (615 -> 559). check_invariants verifies every free block's pool_entry;
// tests/memory/test_caching_allocator.cpp has remainders and merged blocks that must move.
//
// Note [Pool-kept statistics]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch updates every statistic for "all" and for the block's pool. Here stats_ keeps the pools'
// entries and, of each "all" entry, only its peak (the peak of the sum is not the sum of the peaks,
// so increase_pool_stat raises it from the pools' current sum); "all"'s current, allocated and
// freed are the pools' sums, filled in by with_aggregate_sums when statistics are read
// (memory_stats.h). Cost in readability: stats_ is incomplete as stored, so every reader goes
// through with_aggregate_sums, and reset_peak_stats through reset_pool_stats_peak. Gain: 45
// instructions per pair (604 -> 559). The randomized test checks every statistic against torch's
// rules applied directly, with resets among its operations.
//
// Note [Search key]
// ~~~~~~~~~~~~~~~~~
// PyTorch searches a pool with a stack Block holding the request's (stream, size); here a Block
// has a std::string and a std::vector, built and destroyed per lookup. The pool sets' comparator
// is transparent and takes a BlockKey (block.h) instead. Cost in readability: a key type and two
// comparator overloads. Gain: 22 instructions per pair (581 -> 559). A test checks that a key
// orders exactly like a Block with the same fields.
//
// Note [Inlined cached path]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// GCC keeps get_free_block, alloc_found_block, try_merge_blocks and insert_into_blocks_at as
// calls, whose prologues and epilogues (saving and restoring registers) cost instructions on every
// pair, so they carry [[gnu::always_inline]]. Cost in readability: an attribute on four
// definitions. Gain: 142 instructions per pair (701 -> 559) for the four; each alone: 30, 17, 46
// and 55. The 1 EiB check's error path is a cold out-of-line function (throw_more_than_exabyte).
//
// Note [Empty names are not copied]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A block keeps the tensor name it was allocated for. std::string::assign of an empty name to an
// empty string still runs, so alloc_found_block assigns only when either is non-empty. Cost in
// readability: one condition. Gain: 17 instructions per pair (576 -> 559), the ~3% limit.
//
// Note [Stacks captured outside the lock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With record_history(..., cpp_stacks = true), malloc captures the caller's C++ call stack
// (call_stack.h) before it takes the allocator's lock: walking the stack is the slowest part of a
// recorded malloc, and other threads' allocations need not wait for it. The flag is an atomic read
// with relaxed order: a malloc racing with record_history may record a stack or not, as it may
// equally have run just before or after the call. Without stacks the cost is that one load and a
// branch.
//
// Note [Spare blocks]
// ~~~~~~~~~~~~~~~~~~~
// Block objects live in a std::deque (block_storage_, so their addresses stay valid); delete_block
// puts an unused one on a list linked through its `next` (spare_blocks_), and new_block takes it
// back, so a split and a merge touch neither the heap nor a vector. Cost in readability: `next`
// has a second meaning while a Block is unused. Gain: 25 instructions per pair (584 with a
// std::vector<Block*> of spares -> 559).
//
// Note [Injected out-of-memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// inject_out_of_memory(k) makes the k-th malloc fail as on a full device, so a test can fail every
// allocation of a training step in turn. A countdown tested on every malloc would cost the cached
// pair a load, a decrement and a branch even when no test uses it. Instead malloc's one cold test,
// `bytes >= cold_request_bytes_`, which is the 1 EiB check while nothing is armed, covers it:
// arming lowers the threshold to 1 so that every request takes the cold, out-of-line
// check_cold_request, which counts down; firing or disarming raises it back. Disarmed, the pair
// compares with a member instead of a constant, which is even shorter than loading the 2^60
// immediate: 573 instructions per pair against 575 before (measured as Note [Measuring the cached
// pair] says). The failing malloc then takes the path a real full device takes
// (fail_as_full_device): alloc_block's segment requests are refused (refuse_device_memory_, tested
// off the cached path), the cached blocks are released and the request retried, and
// throw_out_of_memory raises the error. The backing is not asked for a refusal cause
// (raise_refusal_cause): the device was full, by construction.
