// Reference solution of exercise 04.1: a unit's shards with FSDP's padding, and a tensor's
// owners (lessons/04-zero/api/shard_ranges.h).
#include <algorithm>
#include <string>

#include "common/platform/errors.h"
#include "lessons/04-zero/api/shard_ranges.h"

namespace vramlab::lesson04 {

namespace {

void require_world(int64_t unit_numel, int64_t world_size) {
  if (unit_numel < 0) throw UsageError("a unit of " + std::to_string(unit_numel) + " elements");
  if (world_size < 1)
    throw UsageError("a world needs >= 1 rank, got " + std::to_string(world_size));
}

// ⌈n/N⌉ as n/N + (n%N != 0): the textbook (n + N − 1)/N overflows for n near 2⁶³.
int64_t shard_size(int64_t unit_numel, int64_t world_size) {
  return unit_numel / world_size + (unit_numel % world_size != 0 ? 1 : 0);
}

}  // namespace

//! [reference]
dist::ShardRange shard_range(int64_t unit_numel, int64_t world_size, int64_t rank) {
  require_world(unit_numel, world_size);
  if (rank < 0 || rank >= world_size)
    throw UsageError("rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size) +
                     ")");
  const int64_t count = shard_size(unit_numel, world_size);
  const int64_t first = rank * count;  // ≤ n + N − 1: no overflow for n ≤ 2⁶²
  const int64_t end = first + count;
  // The padding is the part of [first, end) at or beyond n: all of it for a rank wholly past n.
  const int64_t padding = end <= unit_numel ? 0 : end - std::max(first, unit_numel);
  return dist::ShardRange{first, count, padding};
}

std::vector<int64_t> shard_owners(int64_t unit_numel, int64_t world_size, int64_t offset,
                                  int64_t numel) {
  require_world(unit_numel, world_size);
  if (offset < 0 || numel < 0 || offset > unit_numel - numel)
    throw UsageError("a tensor of " + std::to_string(numel) + " elements at offset " +
                     std::to_string(offset) + " does not fit in a unit of " +
                     std::to_string(unit_numel) + " elements");
  std::vector<int64_t> ranks;
  if (numel == 0) return ranks;
  const int64_t count = shard_size(unit_numel, world_size);
  // The last element is offset + numel − 1: a tensor that ends exactly at a shard boundary does
  // not reach into the next shard.
  for (int64_t r = offset / count; r <= (offset + numel - 1) / count; ++r) ranks.push_back(r);
  return ranks;
}
//! [reference]

}  // namespace vramlab::lesson04
