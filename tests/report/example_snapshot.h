// Test support: a realistic memory snapshot in PyTorch's schema (torch.cuda.memory._snapshot()),
// produced by replaying a synthetic training loop through a tiny first-fit caching allocator, so
// segments, blocks and trace events are mutually consistent (the final "segments" equal the
// replay of the trace on top of the blocks that were live when recording began).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

namespace vramlab::report::testing {

/// Size of the synthetic workload.
struct ExampleWorkload {
  size_t layer_count = 4;           ///< transformer-like blocks.
  size_t step_count = 2;            ///< training steps recorded.
  uint64_t hidden_bytes = 1 << 20;  ///< typical activation size; weights are a few times this.
  uint64_t seed = 1;                ///< randomizes sizes.
  bool empty_cache_after_first_step = true;  ///< emits segment_free events.
  bool end_with_oom = false;                 ///< append an "oom" trace entry.
};

/// Builds the snapshot: parameters allocated before recording (visible only in "segments"),
/// then `step_count` steps of input, forward activations and temporaries, backward gradients,
/// optimizer state. Every trace entry and block carries "category", "frames" (one label frame:
/// the module path and the tensor name) and the extension keys of common/profile/recording.h
/// ("module" such as "blocks.2.attn", "phase", "tensor"; "time_ns" on trace entries).
nlohmann::json make_example_snapshot(const ExampleWorkload& workload);

}  // namespace vramlab::report::testing
