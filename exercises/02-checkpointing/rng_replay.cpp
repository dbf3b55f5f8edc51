// Exercise 02.4 — YOUR CODE: a checkpointed block whose recompute replays the random numbers of
// its forward pass.
//
// The API and its contract: lessons/02-checkpointing/api/rng_replay.h
// Check:  build/bin/vramlab check 02.4        Stuck:  build/bin/vramlab hint 02.4
#include <utility>

#include "common/workbook/not_implemented.h"
#include "lessons/02-checkpointing/api/rng_replay.h"

namespace vramlab::lesson02 {

//! [stub]
CheckpointedBlock::CheckpointedBlock(BlockFunction block) : block_(std::move(block)) {
  // FILL ME IN (2 lines): reject an empty function with vramlab::UsageError
  // (common/platform/errors.h).
  VRAMLAB_NOT_IMPLEMENTED("02.4");
}

void CheckpointedBlock::forward([[maybe_unused]] std::span<const float> x,
                                [[maybe_unused]] std::span<float> y,
                                [[maybe_unused]] DropoutGenerator& generator) {
  // FILL ME IN (roughly 5 lines): run the block, and remember what recompute() will need.
  VRAMLAB_NOT_IMPLEMENTED("02.4");
}

void CheckpointedBlock::recompute([[maybe_unused]] std::span<const float> x,
                                  [[maybe_unused]] std::span<float> y,
                                  [[maybe_unused]] DropoutGenerator& generator) {
  // FILL ME IN (roughly 10 lines): run the block again with the forward's random numbers, and
  // leave the generator as you found it.
  VRAMLAB_NOT_IMPLEMENTED("02.4");
}
//! [stub]

}  // namespace vramlab::lesson02
