/// \file
/// \brief The caching allocator's building blocks: Block (a piece of a segment) and BlockPool (the
/// free blocks of one pool ordered for best fit), as in PyTorch's CUDACachingAllocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/memory/history.h"
#include "common/memory/memory_category.h"

namespace vramlab::memory {

struct Block;
struct BlockPool;
struct ExpandableSegment;

/// A pool search key: the (stream, size, address) a best-fit lookup starts from, without building a
/// whole Block (see Note [Search key] in caching_allocator.cpp).
struct BlockKey {
  StreamId stream = 0;        ///< the requesting stream
  std::size_t size = 0;       ///< the rounded request
  std::uint64_t address = 0;  ///< the lowest address to consider (0: any)
};

/// Orders free blocks by (stream, size, address): lower_bound gives the best fit on a stream.
/// Transparent, so the pool sets can be searched with a BlockKey.
struct BlockComparator {
  /// Lets std::set look up a BlockKey without converting it to a Block*.
  using is_transparent = void;
  /// \return true when (\p a_stream, \p a_size, \p a_address) orders before the \p b triple.
  static bool less(StreamId a_stream, std::size_t a_size, std::uint64_t a_address,
                   StreamId b_stream, std::size_t b_size, std::uint64_t b_address) {
    if (a_stream != b_stream) return a_stream < b_stream;
    if (a_size != b_size) return a_size < b_size;
    return a_address < b_address;
  }
  /// Block against block: the std::set order.
  bool operator()(const Block* a, const Block* b) const;
  /// Block against key: lower_bound's probe. Inline below, on the malloc path.
  bool operator()(const Block* a, const BlockKey& b) const;
  /// Key against block: the mirror overload std::set requires of a transparent comparator.
  bool operator()(const BlockKey& a, const Block* b) const;
};

/// A pool's set of free blocks in best-fit order.
using BlockSet = std::set<Block*, BlockComparator>;

/// A contiguous piece of a segment. The blocks of one segment form a doubly linked list in address
/// order (prev/next); a block with neither is a whole segment.
struct Block {
  std::uint64_t address = 0;       ///< device address of the first byte
  std::size_t size = 0;            ///< bytes (a multiple of 512)
  std::size_t requested_size = 0;  ///< bytes the caller asked for (0 when free)
  StreamId stream = 0;             ///< the stream the block belongs to
  BlockPool* pool = nullptr;       ///< small or large pool
  /// The block's entry in its pool's set, valid while the block is free (in the set); see Note
  /// [Pool entries reused in place] in caching_allocator.cpp.
  BlockSet::iterator pool_entry{};
  Block* prev = nullptr;              ///< lower-address neighbour in the segment
  Block* next = nullptr;              ///< higher-address neighbour in the segment
  bool allocated = false;             ///< handed out to a caller
  bool mapped = true;                 ///< false for unmapped parts of an expandable segment
  bool in_use = false;                ///< this Block object currently describes memory
  int event_count = 0;                ///< stream events that must complete before reuse
  std::vector<StreamId> stream_uses;  ///< other streams that used the block (record_stream)
  std::uint64_t gc_count_base = 0;    ///< pool's get_free_block count when the block was cached
  ExpandableSegment* expandable = nullptr;          ///< the expandable segment holding it, if any
  MemoryCategory category = MemoryCategory::other;  ///< what the allocation is for
  std::uint32_t module_id = 0;                ///< module path at allocation (see module_path())
  TrainingPhase phase = TrainingPhase::none;  ///< training phase at allocation
  StackId stack_id = 0;  ///< C++ call stack of the allocation (0 unless recording stacks)
  std::string name;      ///< tensor name at allocation

  /// \return true when the block is part of a segment split into several blocks.
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

inline bool BlockComparator::operator()(const Block* a, const Block* b) const {
  return less(a->stream, a->size, a->address, b->stream, b->size, b->address);
}
inline bool BlockComparator::operator()(const Block* a, const BlockKey& b) const {
  return less(a->stream, a->size, a->address, b.stream, b.size, b.address);
}
inline bool BlockComparator::operator()(const BlockKey& a, const Block* b) const {
  return less(a.stream, a.size, a.address, b->stream, b->size, b->address);
}

/// The free blocks of one pool (small or large).
struct BlockPool {
  /// The set type of both lists.
  using Set = BlockSet;
  Set blocks;                                    ///< free mapped blocks
  Set unmapped;                                  ///< unmapped ranges of expandable segments
  bool is_small = false;                         ///< the small pool (≤ 1 MiB requests)
  std::uint64_t get_free_blocks_call_count = 0;  ///< ages blocks for garbage collection
};

/// One expandable segment: a reserved address range of 1.125 × device memory whose pages (2 MiB in
/// the small pool, 20 MiB in the large pool) are mapped on demand.
struct ExpandableSegment {
  std::uint64_t address = 0;   ///< start of the reserved range
  std::size_t size = 0;        ///< bytes of address space
  std::size_t page_bytes = 0;  ///< mapping granularity
  StreamId stream = 0;         ///< owning stream
  BlockPool* pool = nullptr;   ///< owning pool
};

}  // namespace vramlab::memory
