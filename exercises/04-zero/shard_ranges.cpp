// Exercise 04.1 — YOUR CODE: a unit's shard per rank with FSDP's padding, and the ranks that own
// a tensor of the unit.
//
// The API and its contract: lessons/04-zero/api/shard_ranges.h
// Check:  build/bin/vramlab check 04.1        Stuck:  build/bin/vramlab hint 04.1
#include "lessons/04-zero/api/shard_ranges.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson04 {

//! [stub]
dist::ShardRange shard_range([[maybe_unused]] int64_t unit_numel,
                             [[maybe_unused]] int64_t world_size, [[maybe_unused]] int64_t rank) {
  // FILL ME IN (roughly 10 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h): the shard size, where rank r's shard starts, and how much of it
  // lies beyond the unit.
  VRAMLAB_NOT_IMPLEMENTED("04.1");
}

std::vector<int64_t> shard_owners([[maybe_unused]] int64_t unit_numel,
                                  [[maybe_unused]] int64_t world_size,
                                  [[maybe_unused]] int64_t offset, [[maybe_unused]] int64_t numel) {
  // FILL ME IN (roughly 10 lines): the shard of the tensor's first element, and of its last.
  VRAMLAB_NOT_IMPLEMENTED("04.1");
}
//! [stub]

}  // namespace vramlab::lesson04
