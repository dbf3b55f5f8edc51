// Known-wrong variant of exercise 04.1 (kept for `vramlab verify`, never linked into a lesson):
// gives ranks 0..N−2 ⌊n/N⌋ elements each and the last rank the remainder, without padding, so the
// shards differ in size and one all-gather with equal chunks cannot move the unit.
// The exercise's tests must fail for it.
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

}  // namespace

dist::ShardRange shard_range(int64_t unit_numel, int64_t world_size, int64_t rank) {
  require_world(unit_numel, world_size);
  if (rank < 0 || rank >= world_size)
    throw UsageError("rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size) +
                     ")");
  const int64_t base = unit_numel / world_size;
  const int64_t first = rank * base;
  const int64_t count = rank == world_size - 1 ? unit_numel - first : base;
  return dist::ShardRange{first, count, 0};
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
  const int64_t base = std::max<int64_t>(unit_numel / world_size, 1);
  const auto owner = [&](int64_t element) { return std::min(element / base, world_size - 1); };
  for (int64_t r = owner(offset); r <= owner(offset + numel - 1); ++r) ranks.push_back(r);
  return ranks;
}

}  // namespace vramlab::lesson04
