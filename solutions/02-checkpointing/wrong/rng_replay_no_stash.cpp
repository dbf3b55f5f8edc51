// Known-wrong variant of exercise 02.4 (kept for `vramlab verify`, never linked into a lesson):
// re-runs the block on the generator as it is in backward: later layers have moved it, so the
// masks differ from the forward's (what checkpointing without preserve_rng_state does).
// The exercise's tests must fail for it.
#include <string>
#include <utility>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/rng_replay.h"

namespace vramlab::lesson02 {

namespace {

void require_same_length(std::span<const float> x, std::span<float> y) {
  if (x.size() != y.size())
    throw UsageError("a block's output must have its input's length: x has " +
                     std::to_string(x.size()) + " elements, y " + std::to_string(y.size()));
}

// Puts the generator back when it goes out of scope, also when the block throws (the `finally`
// of torch.random.fork_rng).
class RestoreOnExit {
 public:
  RestoreOnExit(DropoutGenerator& generator, DropoutGenerator::State state)
      : generator_(generator), state_(state) {}
  RestoreOnExit(const RestoreOnExit&) = delete;
  RestoreOnExit& operator=(const RestoreOnExit&) = delete;
  ~RestoreOnExit() { generator_.set_state(state_); }

 private:
  DropoutGenerator& generator_;
  DropoutGenerator::State state_;
};

}  // namespace

CheckpointedBlock::CheckpointedBlock(BlockFunction block) : block_(std::move(block)) {
  if (!block_) throw UsageError("a checkpointed block needs a function to run, got an empty one");
}

void CheckpointedBlock::forward(std::span<const float> x, std::span<float> y,
                                DropoutGenerator& generator) {
  require_same_length(x, y);
  // Before the block draws: the recompute must start where the forward started.
  stash_ = generator.get_state();
  has_stash_ = true;
  block_(x, y, generator);
}

void CheckpointedBlock::recompute(std::span<const float> x, std::span<float> y,
                                  DropoutGenerator& generator) {
  if (!has_stash_)
    throw UsageError("recompute() before forward(): there is no generator state to replay");
  require_same_length(x, y);
  // The mistake: the generator is used as it is now.
  block_(x, y, generator);
}

}  // namespace vramlab::lesson02
