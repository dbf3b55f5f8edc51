/// \file
/// \brief torch.cuda.memory_summary(): the 75-column table of the allocator's statistics.
#pragma once

#include <cstdint>
#include <string>

#include "common/memory/memory_stats.h"

namespace vramlab::memory {

/// Renders PyTorch's memory_summary table from \p stats, with PyTorch's layout and unit rules: a
/// size column switches to the next binary prefix while its "all" row is ≥ 768 KiB (so 2 MiB prints
/// "2048 KiB"), a count column while it is ≥ 750,000.
/// \param stats from CachingAllocator::stats() (complete "all" rows).
/// \param device_index the "device ID" in the title.
/// \param abbreviated keep only the "all" rows.
/// \return the table, one line per row, ending with a newline.
std::string render_memory_summary(const DeviceStats& stats, std::int64_t device_index,
                                  bool abbreviated);

}  // namespace vramlab::memory
