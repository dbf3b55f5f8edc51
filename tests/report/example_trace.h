// Test support: Chrome trace-event JSON in the two dialects the trace page must draw — vramlab's
// (profile::chrome_trace: X spans phase > module > kernel with depth, C counters of allocated bytes
// per category and reserved bytes, M names) and torch.profiler's export_chrome_trace (X ops, B/E
// user annotations, thread and global instants, flow events, a GPU stream lane with a string tid,
// epoch timestamps) — and what a reader of the format must make of them, worked out here by
// brute force (depth = how many spans of the thread contain a span), independently of the page.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

namespace vramlab::report::testing {

/// A vramlab-style trace (JSON Object Format): `steps` steps of forward, backward and optimizer
/// phases over `layers` modules with 1 to 4 kernels each, on 2 threads, with random durations.
nlohmann::json make_vramlab_style_trace(uint64_t seed, size_t steps, size_t layers);

/// A torch.profiler-style trace (JSON Object Format, with schemaVersion and deviceProperties):
/// `ops` top-level aten ops with random children, some inside B/E annotations, kernels on a GPU
/// stream, "[memory]" thread instants, one global instant, flow events ("s"/"f", not drawn).
nlohmann::json make_pytorch_style_trace(uint64_t seed, size_t ops);

/// What the page must lay out for \p trace (object or array format):
/// {span_count, lane_count, counter_count, sample_count, instant_count, not_drawn,
///  lanes: {"[pid,tid]": [[name, start_us, dur_us, depth]...] sorted by start, longer first},
///  counters: {"[pid,name,id]": [total after each sample, in time order]}}
/// with times relative to the earliest event.
nlohmann::json expected_trace_layout(const nlohmann::json& trace);

}  // namespace vramlab::report::testing
