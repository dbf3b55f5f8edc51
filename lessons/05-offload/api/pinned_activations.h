/// \file
/// \brief Exercise 05.3: the host memory activation offload pins (`--offload-activations on`),
/// predicted from what one block saves and the recompute schedule; the runtime's pinned host
/// allocator (memory::CachingHostAllocator) measures the same bytes.
///
/// The one API shared by the stub (exercises/05-offload/pinned_activations.cpp) and the reference
/// (solutions/05-offload/pinned_activations.cpp).
///
/// The runtime, for one micro-batch:
///   - Every block saves the same tensors for its backward (`layer`). Once a block's forward is
///     done, what it keeps goes to the host, one tensor at a time, except its per-row f32
///     statistics (the norms' mean and rstd, flash attention's log-sum-exp: `statistics`), which
///     stay on the device. Nothing outside the blocks goes to the host.
///   - What a block keeps depends on its schedule entry: `none` keeps every tensor it saved;
///     `selective` keeps all but the attention probabilities (the tensor named "att", if it
///     saved one); `full` keeps only its output (the tensor named "residual3"), and only when it is
///     the last block of its span. A span is a `full` block with span_start followed by the
///     `full` blocks without span_start after it; a `full` block is the last of its span when
///     the next block is not `full`, starts a span, or does not exist.
///   - Each tensor that goes to the host takes one block of pinned host memory. The pinned
///     allocator does what PyTorch's CachingHostAllocator does: a request for n bytes takes a
///     block of the smallest power of two ≥ n bytes.
///   - Every offloaded tensor is on the host when the forward ends, and nothing is freed before.
/// The answer is the pinned host memory at that moment, in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramlab::lesson05 {

/// One tensor a block saves for its backward.
struct SavedTensor {
  std::string name;         ///< e.g. "qkv", "att", "residual3", "ln1_mean".
  int64_t bytes = 0;        ///< its own bytes (≥ 1).
  bool statistics = false;  ///< a per-row f32 statistic: stays on the device.
};

/// How one block treats its activations (the runtime's recompute::LayerPlan).
enum class BlockRecompute { none, selective, full };

/// One block's entry of the schedule.
struct BlockSchedule {
  BlockRecompute recompute = BlockRecompute::none;  ///< what it recomputes in its backward.
  bool span_start = false;                          ///< with full: it starts a span.
};

/// One micro-batch's forward under activation offload.
struct OffloadedActivations {
  std::vector<SavedTensor> layer;       ///< what every block saves, in the order it saves them.
  std::vector<BlockSchedule> schedule;  ///< one entry per block, block 0 first.
};

/// Exercise 05.3 (see the file comment).
/// \param forward the blocks and their schedule. \return the pinned host bytes when the forward
/// ends. \throws vramlab::UsageError naming the value when a tensor's bytes are < 1, or a `full`
/// block without span_start does not follow a `full` block.
int64_t pinned_activation_bytes(const OffloadedActivations& forward);

}  // namespace vramlab::lesson05
