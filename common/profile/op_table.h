/// \file
/// \brief The per-op memory table: torch.profiler's
/// key_averages().table(sort_by="self_cuda_memory_usage") for a vramlab recording.
///
/// Attribution: each allocation belongs to the innermost module or kernel span open on its thread
/// when it was made ("self"); a span's "total" adds everything its nested spans allocated. Bytes
/// are summed over calls, so an op that runs again (a recomputed forward) allocates twice.
/// torch.profiler differs in one way: it records a free as negative bytes on the op it happens in,
/// so its Self CUDA Mem nets out temporaries freed inside the op. Here bytes are allocations only,
/// never reduced by frees: what an op asked for. "peak" is what the row's allocations hold at the
/// moment of peak allocated memory: the number that says who owns the peak.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/profile/recording.h"

namespace vramlab::profile {

/// How spans are grouped into rows.
enum class OpGrouping {
  /// torch's key_averages(): a kernel by its op name; a module by its path with layer indices
  /// replaced by '*' and its phase ("blocks.*.attn (forward)").
  op,
  /// One row per module path and phase ("blocks.3.attn (backward)"); kernels are not rows.
  module,
};

/// One row of the table.
struct OpRow {
  std::string name;                  ///< see OpGrouping
  SpanKind kind = SpanKind::kernel;  ///< module or kernel
  std::int64_t calls = 0;            ///< spans in the group
  double self_ms = 0.0;   ///< time in the group's spans minus time in the spans nested in them
  double total_ms = 0.0;  ///< time in the group's spans (nested spans of the same group once)
  std::int64_t self_bytes = 0;   ///< bytes allocated while a span of the group was innermost
  std::int64_t total_bytes = 0;  ///< … while a span of the group was open
  std::int64_t peak_bytes = 0;   ///< of self_bytes' allocations, bytes live at the peak
  /// A kernel row's matmul FLOPs over its calls (nn::KernelWork), as torch.profiler's with_flops
  /// reports them per op; 0 for a module row.
  double flops = 0.0;
};

/// What the table is sorted by (descending).
enum class OpSort { self_bytes, total_bytes, peak_bytes, self_time, total_time, calls };

/// Parses "self_bytes", "total_bytes", "peak_bytes", "self_time", "total_time" or "calls".
/// \throws vramlab::UsageError naming \p text otherwise.
OpSort parse_op_sort(std::string_view text);

/// Builds the table from a recording (its spans and its snapshot's trace, matched on time_ns).
/// \return rows sorted by self_bytes, then name.
std::vector<OpRow> op_table(const Recording& recording, OpGrouping grouping);

/// \param rows from op_table(). \param sort_by the column. \param limit rows shown (0 = all).
/// \return an aligned text table with a header, bytes in KiB/MiB/GiB.
std::string format_op_table(std::vector<OpRow> rows, OpSort sort_by, std::size_t limit);

/// \return [{name, kind, calls, self_ms, total_ms, self_bytes, total_bytes, peak_bytes}, ...],
/// kernel rows with their "flops" too.
nlohmann::json op_table_json(const std::vector<OpRow>& rows);

}  // namespace vramlab::profile
