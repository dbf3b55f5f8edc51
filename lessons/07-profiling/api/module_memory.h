/// \file
/// \brief Exercise 07.2: memory per module from a recording's event history, charged to the
/// module that ALLOCATED it, beside the naive number that charges each free to the module that
/// happened to be running when it was freed.
///
/// The one API shared by the stub (exercises/07-profiling/module_memory.cpp) and the reference
/// (solutions/07-profiling/module_memory.cpp). The runtime's answers are snapshot::analyse_peak's
/// by_module and profile::op_table (common/snapshot/snapshot_analysis.h, op_table.h).
///
/// memory_viz charges a block to the stack that allocated it, whoever frees it: an activation
/// made by blocks.3.attn in the forward pass and freed by the loss's backward is blocks.3.attn's.
/// torch.profiler's "Self CUDA Mem" column is the naive number instead: every op adds what it
/// allocates and subtracts what it frees, so an op that frees other ops' tensors shows negative
/// memory. This exercise computes both, from vramlab's profile::Recording:
///
/// - Its snapshot's device_traces[0] is replayed as in exercise 07.1 (top_at_peak.h beside this
///   header): live from "alloc" to "free_completed", allocations live before the trace
///   from the segments and from frees without an alloc, and the same peak (the first largest).
///   Every entry carries the allocating module in its "module" key ("" outside every module); a
///   free entry repeats its allocation's.
/// - The module running at an entry is the innermost (deepest) profile::Span of kind module
///   whose [start_ns, end_ns) holds the entry's time, where an entry's time is its "time_ns"
///   minus the recording's origin_ns; "" when no module span holds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/profile/recording.h"

namespace vramlab::lesson07 {

/// One module's memory.
struct ModuleMemory {
  std::string module;  ///< dotted path, "" for memory allocated outside every module
  /// Alloc entries of the trace whose "module" is this one.
  std::int64_t allocations = 0;
  /// Their requested bytes, summed and never reduced by frees (torch.profiler's allocated
  /// total): an op that runs twice allocates twice.
  std::int64_t allocated_bytes = 0;
  /// Bytes of this module's allocations live at the peak (those live before the trace included).
  std::int64_t live_at_peak_bytes = 0;
  /// Of this module's allocations, the bytes whose "free_requested" entry came while another
  /// module (or none) was running: memory this module made and another released.
  std::int64_t freed_by_others_bytes = 0;
  /// The naive number: bytes of the alloc entries made while this module was running minus the
  /// bytes of the free_requested entries made while it was running, whoever allocated them.
  std::int64_t scope_net_bytes = 0;
};

/// Exercise 07.2: one row per module that allocated in the trace, held bytes at the peak, or was
/// running at an alloc or free_requested entry (see the file comment).
/// \param recording the snapshot (with "time_ns" and "module" on its entries) and the spans.
/// \return the rows, by live_at_peak_bytes (largest first), then allocated_bytes (largest
///         first), then module path (ascending).
/// \throws vramlab::UsageError as exercise 07.1 for a snapshot out of the schema, and naming the
///         key when an alloc or free_requested entry has no numeric "time_ns".
std::vector<ModuleMemory> memory_per_module(const profile::Recording& recording);

}  // namespace vramlab::lesson07
