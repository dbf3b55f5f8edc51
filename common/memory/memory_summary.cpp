// torch.cuda.memory_summary() rendered from the rules of torch/cuda/memory.py.
#include "common/memory/memory_summary.h"

#include <cstdio>
#include <vector>

#include "common/memory/caching_allocator.h"

namespace vramlab::memory {
namespace {

// f"{sz:6d} {prefix}": divide by 1024 while the column's reference value is >= 768 KiB.
std::string format_size_cell(std::int64_t size, std::int64_t reference) {
  static constexpr const char* kPrefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t prefix = 0;
  double reference_value = static_cast<double>(reference);
  while (prefix + 1 < std::size(kPrefixes) && reference_value >= 768.0 * 1024.0) {
    ++prefix;
    size /= 1024;
    reference_value /= 1024.0;
  }
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%6lld %s", static_cast<long long>(size), kPrefixes[prefix]);
  return cell;
}

// f"{cnt:7d} {prefix} ": divide by 1000 while the reference value is >= 750,000.
std::string format_count_cell(std::int64_t count, std::int64_t reference) {
  static constexpr const char* kPrefixes[] = {" ", "K", "M"};
  std::size_t prefix = 0;
  double reference_value = static_cast<double>(reference);
  while (prefix + 1 < std::size(kPrefixes) && reference_value >= 750.0 * 1000.0) {
    ++prefix;
    count /= 1000;
    reference_value /= 1000.0;
  }
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%7lld %s ", static_cast<long long>(count), kPrefixes[prefix]);
  return cell;
}

using CellFormatter = std::string (*)(std::int64_t, std::int64_t);

std::string row(const std::string& name, const Stat& stat, const Stat& reference,
                CellFormatter formatter) {
  char label[64];
  std::snprintf(label, sizeof(label), " %-21s | ", name.c_str());
  return std::string(label) + formatter(stat.current, reference.current) + " | " +
         formatter(stat.peak, reference.peak) + " | " +
         formatter(stat.allocated, reference.allocated) + " | " +
         formatter(stat.freed, reference.freed) + " ";
}

}  // namespace

std::string render_memory_summary(const DeviceStats& stats, std::int64_t device_index,
                                  bool abbreviated) {
  std::vector<std::string> lines;
  const std::string double_rule(75, '=');
  const std::string single_rule(75, '-');
  char text[160];
  lines.push_back(double_rule);
  std::snprintf(text, sizeof(text), " %16s PyTorch CUDA memory summary, device ID %-17lld ", "",
                static_cast<long long>(device_index));
  lines.emplace_back(text);
  lines.push_back(single_rule);
  std::snprintf(text, sizeof(text), "  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  ",
                "", static_cast<long long>(stats.num_ooms), "",
                static_cast<long long>(stats.num_alloc_retries));
  lines.emplace_back(text);
  lines.push_back(double_rule);
  lines.emplace_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  struct Metric {
    const StatArray* stat;
    const char* name;
    CellFormatter formatter;
  };
  const Metric metrics[] = {
      {&stats.allocated_bytes, "Allocated memory", format_size_cell},
      {&stats.active_bytes, "Active memory", format_size_cell},
      {&stats.requested_bytes, "Requested memory", format_size_cell},
      {&stats.reserved_bytes, "GPU reserved memory", format_size_cell},
      {&stats.inactive_split_bytes, "Non-releasable memory", format_size_cell},
      {&stats.allocation, "Allocations", format_count_cell},
      {&stats.active, "Active allocs", format_count_cell},
      {&stats.segment, "GPU reserved segments", format_count_cell},
      {&stats.inactive_split, "Non-releasable allocs", format_count_cell},
  };
  for (const Metric& metric : metrics) {
    lines.push_back(single_rule);
    const Stat& all = (*metric.stat)[kAggregate];
    lines.push_back(row(metric.name, all, all, metric.formatter));
    if (!abbreviated) {
      lines.push_back(
          row("      from large pool", (*metric.stat)[kLargePool], all, metric.formatter));
      lines.push_back(
          row("      from small pool", (*metric.stat)[kSmallPool], all, metric.formatter));
    }
  }
  const std::pair<const Stat*, const char*> oversize[] = {
      {&stats.oversize_allocations, "Oversize allocations"},
      {&stats.oversize_segments, "Oversize GPU segments"},
  };
  for (const auto& [stat, name] : oversize) {
    lines.push_back(single_rule);
    lines.push_back(row(name, *stat, *stat, format_count_cell));
  }
  lines.push_back(double_rule);
  std::string summary;
  for (const std::string& line : lines) summary += "|" + line + "|\n";
  return summary;
}

std::string CachingAllocator::memory_summary(bool abbreviated) const {
  return render_memory_summary(stats(), device_index_, abbreviated);
}

}  // namespace vramlab::memory
