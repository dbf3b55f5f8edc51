// Test support: a realistic memory snapshot in PyTorch's schema (torch.cuda.memory._snapshot()),
// produced by replaying a synthetic training loop through a tiny first-fit caching allocator, so
// segments, blocks and trace events are mutually consistent (the final "segments" equal the
// replay of the trace on top of the blocks that were live when recording began).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

namespace vramlab::report::testing {

/// How allocations name their owner in the snapshot.
enum class OwnerStyle {
  /// vramlab with the keys of common/profile/recording.h: "category", "module", "phase",
  /// "tensor", frames = one label frame {filename: module, name: tensor}, "time_ns" on trace
  /// entries (2500 ns apart).
  owner_keys,
  /// The same with C++ frames after the label frame (innermost first, 6 to 9 of them), as the
  /// runtime records with call stacks on.
  owner_keys_with_stacks,
  /// Older vramlab: "category" and frames = [{filename: "phase/module", line: 0, name: tensor}],
  /// no owner keys, no time_ns.
  label_frame,
  /// PyTorch: no extension keys; frames are the C++ frames alone.
  pytorch,
};

/// Size of the synthetic workload.
struct ExampleWorkload {
  size_t layer_count = 4;           ///< transformer-like blocks.
  size_t step_count = 2;            ///< training steps recorded.
  uint64_t hidden_bytes = 1 << 20;  ///< typical activation size; weights are a few times this.
  uint64_t seed = 1;                ///< randomizes sizes.
  bool empty_cache_after_first_step = true;         ///< emits segment_free events.
  bool end_with_oom = false;                        ///< append an "oom" trace entry.
  OwnerStyle owner_style = OwnerStyle::owner_keys;  ///< see OwnerStyle.
};

/// Builds the snapshot: parameters allocated before recording (visible only in "segments"),
/// then `step_count` steps of input, forward activations and temporaries, backward gradients,
/// optimizer state. By default every trace entry and block carries "category", "frames" (one
/// label frame: the module path and the tensor name) and the extension keys of
/// common/profile/recording.h ("module" such as "blocks.2.attn", "phase", "tensor"; "time_ns" on
/// trace entries); ExampleWorkload::owner_style picks another dialect.
nlohmann::json make_example_snapshot(const ExampleWorkload& workload);

}  // namespace vramlab::report::testing
