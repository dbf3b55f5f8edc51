// A hand-built Recording whose per-op table is worked out by hand in test_op_table.cpp: nested
// module and kernel spans in forward, a recomputed block inside backward, a 5 GiB gradient, a
// recursive op, and allocations timed inside, between and outside the spans.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/profile/recording.h"
#include "tests/profile/snapshot_builder.h"

namespace vramlab::profile::testing {

inline constexpr std::int64_t kOriginNs = 1'000'000;
inline constexpr std::uint64_t kFiveGiB = 5ULL << 30;

inline Span make_span(SpanKind kind, std::string name, std::string module,
                      memory::TrainingPhase phase, std::int64_t start_ns, std::int64_t end_ns,
                      std::int32_t depth, std::int32_t thread = 0) {
  Span span;
  span.kind = kind;
  span.name = std::move(name);
  span.module = std::move(module);
  span.phase = phase;
  span.start_ns = start_ns;
  span.end_ns = end_ns;
  span.depth = depth;
  span.thread = thread;
  return span;
}

/// Spans (ns since the origin, depth) and allocations (at ns):
///   forward phase [0, 1000] 0
///     blocks.0.attn [100, 500] 1    alloc 1000 B at 120
///       matmul [150, 250] 2         alloc 64 B at 200
///       softmax [300, 400] 2        alloc 4096 B at 350, freed at 360
///     blocks.1.attn [500, 900] 1
///       matmul [550, 650] 2         alloc 64 B at 600
///                                   alloc 7 B at 950 (in no module or kernel)
///   backward phase [1000, 2000] 0
///     recompute phase [1100, 1500] 1
///       blocks.1.attn [1100, 1400] 2 (recompute)   alloc 2 MiB at 1350, freed at 1450
///         matmul [1200, 1300] 3     alloc 64 B at 1250
///     blocks.1.attn [1500, 1900] 1 (backward)
///       matmul_backward [1600, 1800] 2             alloc 5 GiB at 1700
///   scan [3000, 3200] 0, inside it scan [3000, 3100] 1 (a recursive op)  alloc 10 B at 3050
/// The peak is the last alloc: everything not freed is live there.
inline Recording hand_built_recording() {
  using memory::TrainingPhase;
  Recording recording;
  recording.origin_ns = kOriginNs;
  recording.seconds = 3.2e-6;
  recording.device = "sim:test";
  const auto phase = [](TrainingPhase which, std::int64_t start, std::int64_t end,
                        std::int32_t depth) {
    return make_span(SpanKind::phase, std::string(memory::training_phase_name(which)), "", which,
                     start, end, depth);
  };
  recording.spans = {
      phase(TrainingPhase::forward, 0, 1000, 0),
      make_span(SpanKind::module, "blocks.0.attn", "blocks.0.attn", TrainingPhase::forward, 100,
                500, 1),
      make_span(SpanKind::kernel, "matmul", "blocks.0.attn", TrainingPhase::forward, 150, 250, 2),
      make_span(SpanKind::kernel, "softmax", "blocks.0.attn", TrainingPhase::forward, 300, 400, 2),
      make_span(SpanKind::module, "blocks.1.attn", "blocks.1.attn", TrainingPhase::forward, 500,
                900, 1),
      make_span(SpanKind::kernel, "matmul", "blocks.1.attn", TrainingPhase::forward, 550, 650, 2),
      phase(TrainingPhase::backward, 1000, 2000, 0),
      phase(TrainingPhase::recompute, 1100, 1500, 1),
      make_span(SpanKind::module, "blocks.1.attn", "blocks.1.attn", TrainingPhase::recompute, 1100,
                1400, 2),
      make_span(SpanKind::kernel, "matmul", "blocks.1.attn", TrainingPhase::recompute, 1200, 1300,
                3),
      make_span(SpanKind::module, "blocks.1.attn", "blocks.1.attn", TrainingPhase::backward, 1500,
                1900, 1),
      make_span(SpanKind::kernel, "matmul_backward", "blocks.1.attn", TrainingPhase::backward, 1600,
                1800, 2),
      make_span(SpanKind::kernel, "scan", "", TrainingPhase::none, 3000, 3200, 0),
      make_span(SpanKind::kernel, "scan", "", TrainingPhase::none, 3000, 3100, 1),
  };

  SnapshotBuilder builder;
  builder.start_recording();
  const auto at = [](std::int64_t ns) { return kOriginNs + ns; };
  const Owner owner{"blocks.0.attn", "forward", "t", "activation", {}};
  const Owner temporary{"blocks.0.attn", "forward", "s", "temporary", {}};
  const Owner gradient{"blocks.1.attn", "backward", "dW", "gradient", {}};
  builder.alloc(0x1000, 1000, owner, at(120));
  builder.alloc(0x2000, 64, owner, at(200));
  builder.alloc(0x3000, 4096, temporary, at(350));
  builder.free(0x3000, at(360));
  builder.alloc(0x4000, 64, owner, at(600));
  builder.alloc(0x5000, 7, owner, at(950));
  builder.alloc(0x6000, 64, owner, at(1250));
  builder.alloc(0x100000, 2 << 20, owner, at(1350));
  builder.free(0x100000, at(1450));
  builder.alloc(0x10000000, kFiveGiB, gradient, at(1700));
  builder.alloc(0x7000, 10, owner, at(3050));
  recording.snapshot = builder.snapshot();
  return recording;
}

}  // namespace vramlab::profile::testing
