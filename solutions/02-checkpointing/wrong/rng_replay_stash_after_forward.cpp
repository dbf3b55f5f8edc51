// Known-wrong variant of exercise 02.4 (kept for `vramlab verify`, never linked into a lesson):
// takes the generator's state after the block ran instead of before, so the recompute draws the
// numbers that came after the forward's.
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
  block_(x, y, generator);
  // The mistake: the state is taken after the block drew.
  stash_ = generator.get_state();
  has_stash_ = true;
}

void CheckpointedBlock::recompute(std::span<const float> x, std::span<float> y,
                                  DropoutGenerator& generator) {
  if (!has_stash_)
    throw UsageError("recompute() before forward(): there is no generator state to replay");
  require_same_length(x, y);
  // The caller's stream continues from where it is now, as if the recompute never drew.
  const RestoreOnExit restore(generator, generator.get_state());
  generator.set_state(stash_);
  block_(x, y, generator);
}

}  // namespace vramlab::lesson02
