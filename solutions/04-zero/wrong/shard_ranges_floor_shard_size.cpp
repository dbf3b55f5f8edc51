// Known-wrong variant of exercise 04.1 (kept for `vramlab verify`, never linked into a lesson):
// takes the shard size as ⌊n/N⌋ instead of ⌈n/N⌉, so the last n mod N elements of a unit belong
// to no rank.
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
  const int64_t count = unit_numel / world_size;
  const int64_t first = rank * count;
  const int64_t end = first + count;
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
  const int64_t count = std::max<int64_t>(unit_numel / world_size, 1);
  for (int64_t r = offset / count; r <= (offset + numel - 1) / count; ++r) ranks.push_back(r);
  return ranks;
}

}  // namespace vramlab::lesson04
