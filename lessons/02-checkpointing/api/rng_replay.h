/// \file
/// \brief Exercise 02.4: a checkpointed block whose recompute replays the random numbers of its
/// forward pass, as torch.utils.checkpoint does with preserve_rng_state=True.
///
/// The one API shared by the stub (exercises/02-checkpointing/rng_replay.cpp) and the reference
/// (solutions/02-checkpointing/rng_replay.cpp). A block with dropout draws its masks from a
/// stateful generator: PyTorch's CUDA generator is Philox with a seed and an offset that every
/// dropout advances by the numbers it used. When backward re-runs a checkpointed block, the
/// generator has moved on (later layers drew their masks), so a plain re-run draws different masks
/// and the recomputed activations are not the ones the loss saw: the gradients are silently wrong.
/// torch/utils/checkpoint.py therefore stashes the generator's state before the forward and, in
/// backward, runs the recompute under torch.random.fork_rng with that state set: the masks repeat,
/// and the generator comes out of the recompute exactly as it went in. (The runtime's own model
/// avoids the problem differently: its masks are a pure function of a per-layer offset, see
/// common/dtype/dropout_mask.h.)
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace vramlab::lesson02 {

/// A counter-based random stream with PyTorch's CUDA-generator interface: draw(n) hands out the
/// counters [offset, offset + n) of the stream `seed` and advances the offset by n.
class DropoutGenerator {
 public:
  /// What get_state()/set_state() save and restore (torch.cuda.get_rng_state's role).
  struct State {
    uint64_t seed = 0;    ///< the stream.
    uint64_t offset = 0;  ///< the next counter to hand out.
    /// \param other the state to compare with. \return true when both fields are equal.
    bool operator==(const State& other) const = default;
  };
  /// \param seed the stream. \param offset the first counter (64-bit: long runs pass 2^32).
  explicit DropoutGenerator(uint64_t seed, uint64_t offset = 0) : state_{seed, offset} {}
  /// \return the current state.
  [[nodiscard]] State get_state() const { return state_; }
  /// \param state a state get_state() returned; the next draw continues from it.
  void set_state(const State& state) { state_ = state; }
  /// Reserves \p n counters. \param n how many. \return the first of them.
  uint64_t draw(uint64_t n) {
    const uint64_t first = state_.offset;
    state_.offset += n;
    return first;
  }

 private:
  State state_;
};

/// What a block computes: reads x, writes y (same length), drawing its dropout masks from the
/// generator (each call of DropoutGenerator::draw, in order). Pure apart from the generator.
using BlockFunction =
    std::function<void(std::span<const float> x, std::span<float> y, DropoutGenerator& generator)>;

/// Exercise 02.4: one checkpointed block. forward() runs the block as training does and keeps
/// nothing but what recompute() needs to re-run it; recompute(), called in backward after other
/// blocks have used the generator, produces bitwise the y of forward() and leaves the generator in
/// the state it had when recompute() was called.
class CheckpointedBlock {
 public:
  /// \param block the block's computation (must not be empty).
  /// \throws vramlab::UsageError for an empty function.
  explicit CheckpointedBlock(BlockFunction block);
  /// The training forward: runs the block on \p x into \p y with \p generator, which it advances
  /// as the block does.
  /// \param x the input. \param y out: the output (x's length). \param generator the stream.
  /// \throws vramlab::UsageError naming both lengths when they differ.
  void forward(std::span<const float> x, std::span<float> y, DropoutGenerator& generator);
  /// Backward's re-run: the forward's y again, bit for bit, from the same \p x, whatever
  /// \p generator drew in between; \p generator ends as it was on entry.
  /// \param x the forward's input. \param y out: the recomputed output. \param generator the
  /// stream, shared with the rest of the model.
  /// \throws vramlab::UsageError before any forward(), or naming both lengths when they differ.
  void recompute(std::span<const float> x, std::span<float> y, DropoutGenerator& generator);

 private:
  BlockFunction block_;
  DropoutGenerator::State stash_{};  // the generator's state when forward() began
  bool has_stash_ = false;
};

}  // namespace vramlab::lesson02
