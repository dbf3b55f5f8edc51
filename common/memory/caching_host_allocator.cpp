// PyTorch's pinned-memory caching allocator (aten/src/ATen/core/CachingHostAllocator.h,
// CachingHostAllocatorImpl) over this machine's RAM, and plain pageable host memory. Names follow
// PyTorch's: allocate, free, record_event (here record_stream), process_events, empty_cache
// (empty_host_cache), size_index.
//
// Note [Pinned host memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Why: a GPU's DMA engine copies only from page-locked ("pinned") host memory, so a copy that is
// to overlap compute (non_blocking=True: activation and optimizer offload, a data loader's
// pin_memory) needs its host buffer pinned; a copy from pageable memory is staged by the driver
// and the host waits for it. Pinning costs a system call that locks every page (cudaHostAlloc
// takes milliseconds for large sizes), so PyTorch caches the blocks it pinned.
//
// Approach: every request rounds up to a power of two, and the free blocks wait in one LIFO list
// per power of two (size_index = log2); a request takes the last block freed of its rounded size
// or pins a new one. No splitting, no merging, so a block is only ever reused whole: simple and
// fast, at the price of up to half of each block (a 4.9 GiB request pins 8 GiB, 3.1 GiB never
// used) and of blocks of one size that no request of another size can use. A block used by a
// stream (record_event) must not be reused while that stream's copy may still read it: free()
// records an event on each such stream and puts (event, block) at the front of the event queue;
// process_events, at the start of every allocate, queries events from the back (oldest first)
// and returns a block to its free list when its last event has completed, stopping at the first
// event still pending, so a long copy holds back blocks freed after it.
//
// Here: there is no GPU and no page locking; a block is an anonymous mapping from the host
// backing the sim device uses (make_host_backing: mapped lazily, committed only when touched),
// so a test may pin 16 GiB on a 24 GiB machine. Every block's bytes (the rounded size) are taken
// from the process's host-RAM budget and given back when the block returns to the system, so a
// run whose pinned buffers outgrow this machine fails with a HostMemoryError naming the bytes.
// Events are stream::Event on the device's clock: complete once the host's time has reached
// the point recorded (after synchronize, or host work past it).
//
// Stats: PyTorch's HostStats keys and rules, with two differences. PyTorch keeps active_requests
// and active_bytes per size and reports the sum of the per-size peaks (an upper bound of the true
// peak, as its comment says); here one stat keeps the true peak. And PyTorch's process_events
// lowers active_bytes by its `size` argument, -1 when it processes all events; here by the block's
// size, so active_bytes returns to 0 when every block is free.
#include "common/memory/caching_host_allocator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <new>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/memory/host_memory.h"
#include "common/memory/oom_error.h"
#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

// No power of two above this fits in 64 bits.
constexpr std::size_t kLargestPowerOfTwo = std::size_t{1} << 63;

nlohmann::json stat_json(const Stat& stat) {
  return {{"current", stat.current},
          {"peak", stat.peak},
          {"allocated", stat.allocated},
          {"freed", stat.freed}};
}

nlohmann::json duration_json(const DurationStat& stat) {
  return {{"total", stat.total},
          {"max", stat.max},
          {"min", stat.min},
          {"count", stat.count},
          {"avg", stat.average()}};
}

std::int64_t microseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// PyTorch's size_index: log2 of a power-of-two block size, the free list it belongs to.
std::size_t size_index(std::size_t block_bytes) {
  return static_cast<std::size_t>(std::countr_zero(block_bytes));
}

void reset_peak(Stat& stat) {
  stat.peak = stat.current;
}
void reset_accumulated(Stat& stat) {
  stat.allocated = stat.freed = 0;
}

}  // namespace

void DurationStat::increase(std::int64_t microseconds) {
  total += microseconds;
  count += 1;
  max = std::max(max, microseconds);
  min = min == 0 ? microseconds : std::min(min, microseconds);
}

nlohmann::json HostStats::to_json() const {
  return {{"active_requests", stat_json(active_requests)},
          {"active_bytes", stat_json(active_bytes)},
          {"allocations", stat_json(allocations)},
          {"allocated_bytes", stat_json(allocated_bytes)},
          {"num_host_alloc", num_host_alloc},
          {"num_host_free", num_host_free},
          {"host_alloc_time", duration_json(host_alloc_time)},
          {"host_free_time", duration_json(host_free_time)}};
}

CachingHostAllocator::CachingHostAllocator(stream::Clock& clock, HostMemoryKind kind,
                                           HostMemoryBacking backing)
    : clock_(clock),
      kind_(kind),
      // No capacity of its own: only the process's host budget limits host memory.
      backing_(backing == HostMemoryBacking::meta
                   ? make_meta_backing(std::numeric_limits<std::uint64_t>::max())
                   : make_host_backing(std::numeric_limits<std::uint64_t>::max())) {}

CachingHostAllocator::~CachingHostAllocator() {
  for (const auto& [key, block] : blocks_) backing_->free_segment(block->address, block->size);
}

HostBlock* CachingHostAllocator::allocate(std::size_t bytes, MemoryCategory category,
                                          std::string_view name) {
  if (bytes == 0) return nullptr;
  if (refuse_countdown_ > 0 && --refuse_countdown_ == 0) {
    const HostMemoryRefusal refusal{
        bytes, host_memory_held_bytes(),
        HostMemoryLimit{host_memory_held_bytes(), "an injected refusal"}};
    throw host_memory_error(kind_ == HostMemoryKind::pinned ? "the pinned host allocator"
                                                            : "the pageable host allocator",
                            refusal, format_size(bytes) + " requested");
  }
  // Everything that can throw happens before a block is taken off its free list, so an
  // exception leaves every list and statistic as it was.
  std::string owned_name(name);
  HostBlock* block = nullptr;
  if (kind_ == HostMemoryKind::pageable) {
    block = allocate_from_system(bytes);
  } else {
    process_events();
    if (bytes > kLargestPowerOfTwo) {
      throw UsageError("pinned host memory: a request of " + std::to_string(bytes) +
                       " bytes has no power of two to round up to (at most 2^63 bytes)");
    }
    const std::size_t block_bytes = std::bit_ceil(bytes);
    std::vector<HostBlock*>& free_list = free_lists_[size_index(block_bytes)];
    if (free_list.empty()) {
      block = allocate_from_system(block_bytes);
    } else {
      block = free_list.back();
      free_list.pop_back();
    }
  }
  block->allocated = true;
  block->requested_size = bytes;
  block->category = category;
  block->name = std::move(owned_name);
  const auto block_bytes = static_cast<std::int64_t>(block->size);
  stats_.active_requests.increase(1);
  stats_.active_bytes.increase(block_bytes);
  category_stats_.allocated_bytes[static_cast<std::size_t>(category)].increase(block_bytes);
  category_stats_.requested_bytes[static_cast<std::size_t>(category)].increase(
      static_cast<std::int64_t>(bytes));
  return block;
}

HostBlock* CachingHostAllocator::allocate_from_system(std::size_t block_bytes) {
  auto block = std::make_unique<HostBlock>();
  const auto start = std::chrono::steady_clock::now();
  block->address = backing_->allocate_segment(block_bytes);
  if (block->address == 0) {
    backing_->raise_refusal_cause(kind_ == HostMemoryKind::pinned ? "the pinned host allocator"
                                                                  : "the pageable host allocator");
    throw std::bad_alloc();  // the budget agreed but mmap refused: the address space is full
  }
  const std::int64_t elapsed = microseconds_since(start);
  block->size = block_bytes;
  HostBlock* raw = block.get();
  try {
    blocks_.emplace(raw, std::move(block));
  } catch (...) {
    backing_->free_segment(raw->address, block_bytes);
    throw;
  }
  stats_.allocations.increase(1);
  stats_.allocated_bytes.increase(static_cast<std::int64_t>(block_bytes));
  stats_.host_alloc_time.increase(elapsed);
  stats_.num_host_alloc += 1;
  return raw;
}

HostBlock& CachingHostAllocator::checked_allocated(HostBlock* block, const char* caller) {
  const auto found = blocks_.find(block);
  if (found == blocks_.end() || !block->allocated) {
    throw std::logic_error(std::string("CachingHostAllocator::") + caller +
                           ": the block is not allocated by this allocator (double free?)");
  }
  return *block;
}

void CachingHostAllocator::free(HostBlock* block) {
  if (block == nullptr) return;
  HostBlock& freed = checked_allocated(block, "free");
  // The events go in first: recording one may throw (bad_alloc), and then the block is still
  // allocated and nothing else changed.
  if (kind_ == HostMemoryKind::pinned && !freed.streams.empty()) {
    std::list<std::pair<stream::Event, HostBlock*>> recorded;
    for (const stream::StreamId stream : freed.streams) {
      stream::Event event;
      event.record(clock_, stream);
      recorded.emplace_front(event, block);
    }
    events_.splice(events_.begin(), recorded);
  }
  freed.allocated = false;
  const auto category = static_cast<std::size_t>(freed.category);
  category_stats_.allocated_bytes[category].decrease(static_cast<std::int64_t>(freed.size));
  category_stats_.requested_bytes[category].decrease(
      static_cast<std::int64_t>(freed.requested_size));
  if (kind_ == HostMemoryKind::pageable) {
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(static_cast<std::int64_t>(freed.size));
    release_to_system(block);
    return;
  }
  if (freed.streams.empty()) {
    return_to_free_list(block);
    return;
  }
  freed.event_count += freed.streams.size();
  freed.streams.clear();
}

void CachingHostAllocator::record_stream(HostBlock* block, stream::StreamId stream) {
  HostBlock& used = checked_allocated(block, "record_stream");
  (void)clock_.stream_name(stream);  // an unknown stream is refused here, not at free()
  if (std::find(used.streams.begin(), used.streams.end(), stream) == used.streams.end()) {
    used.streams.push_back(stream);
  }
}

void CachingHostAllocator::process_events() {
  while (!events_.empty()) {
    const auto& [event, block] = events_.back();
    if (!event.query()) return;
    HostBlock* completed = block;
    events_.pop_back();
    if (--completed->event_count == 0) return_to_free_list(completed);
  }
}

void CachingHostAllocator::return_to_free_list(HostBlock* block) {
  stats_.active_requests.decrease(1);
  stats_.active_bytes.decrease(static_cast<std::int64_t>(block->size));
  free_lists_[size_index(block->size)].push_back(block);
}

void CachingHostAllocator::empty_host_cache() {
  process_events();
  for (std::vector<HostBlock*>& free_list : free_lists_) {
    for (HostBlock* block : free_list) release_to_system(block);
    free_list.clear();
  }
}

void CachingHostAllocator::release_to_system(HostBlock* block) {
  const std::size_t block_bytes = block->size;
  const auto start = std::chrono::steady_clock::now();
  backing_->free_segment(block->address, block_bytes);
  stats_.host_free_time.increase(microseconds_since(start));
  stats_.allocations.decrease(1);
  stats_.allocated_bytes.decrease(static_cast<std::int64_t>(block_bytes));
  stats_.num_host_free += 1;
  blocks_.erase(block);
}

void CachingHostAllocator::reset_peak_host_memory_stats() {
  for (Stat* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                     &stats_.allocated_bytes}) {
    reset_peak(*stat);
  }
  for (DurationStat* stat : {&stats_.host_alloc_time, &stats_.host_free_time}) {
    stat->max = stat->min = 0;
  }
  for (Stat& stat : category_stats_.allocated_bytes) reset_peak(stat);
  for (Stat& stat : category_stats_.requested_bytes) reset_peak(stat);
}

void CachingHostAllocator::reset_accumulated_host_memory_stats() {
  for (Stat* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                     &stats_.allocated_bytes}) {
    reset_accumulated(*stat);
  }
  for (DurationStat* stat : {&stats_.host_alloc_time, &stats_.host_free_time}) {
    stat->total = stat->count = 0;
  }
  stats_.num_host_alloc = stats_.num_host_free = 0;
  for (Stat& stat : category_stats_.allocated_bytes) reset_accumulated(stat);
  for (Stat& stat : category_stats_.requested_bytes) reset_accumulated(stat);
}

}  // namespace vramlab::memory
