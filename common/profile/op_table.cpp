// The per-op memory table: spans grouped into rows, their time from the span tree, their bytes from
// the snapshot's alloc entries matched to the innermost span open at each entry's time_ns, and the
// peak column from analyse_peak's live set.
#include "common/profile/op_table.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "common/platform/errors.h"
#include "common/profile/detail/recording_trace.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/snapshot/snapshot_replay.h"

namespace vramlab::profile {

using snapshot::Allocation;
using snapshot::analyse_peak;
using snapshot::PeakReport;
namespace {

using nlohmann::json;

// "blocks.3.attn" → "blocks.*.attn": torch's key_averages() groups the same op of every layer.
std::string wildcard_layer_indices(std::string_view path) {
  std::string out;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t end = std::min(path.find('.', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    if (begin > 0) out += '.';
    const bool index = !part.empty() && std::all_of(part.begin(), part.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
    out += index ? std::string_view("*") : part;
    begin = end + 1;
  }
  return out;
}

// The row a span belongs to; nullopt for spans that are not rows (phases; kernels when grouping by
// module, where a kernel's time and bytes belong to the module it ran in).
std::optional<std::string> row_name(const Span& span, OpGrouping grouping) {
  switch (span.kind) {
    case SpanKind::phase:
      return std::nullopt;
    case SpanKind::kernel:
      if (grouping == OpGrouping::module) return std::nullopt;
      return span.name;
    case SpanKind::module: {
      std::string name = grouping == OpGrouping::op ? wildcard_layer_indices(span.name) : span.name;
      name += " (";
      name += memory::training_phase_name(span.phase);
      name += ')';
      return name;
    }
  }
  return std::nullopt;
}

std::int64_t add_bytes(std::int64_t total, std::int64_t bytes) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(total, bytes, &sum))
    throw UsageError("recording's allocated bytes overflow a signed 64-bit count");
  return sum;
}

struct RowSpan {
  const Span* span;
  std::size_t row;
};

// Pops the spans that cannot enclose one starting at \p start at \p depth: they ended before it,
// or they are at its depth or deeper (siblings and their children, which have ended).
void pop_finished(std::vector<RowSpan>& stack, std::int64_t start, std::int32_t depth) {
  while (!stack.empty() &&
         (stack.back().span->end_ns < start || stack.back().span->depth >= depth)) {
    stack.pop_back();
  }
}

double sort_value(const OpRow& row, OpSort sort_by) {
  switch (sort_by) {
    case OpSort::self_bytes:
      return static_cast<double>(row.self_bytes);
    case OpSort::total_bytes:
      return static_cast<double>(row.total_bytes);
    case OpSort::peak_bytes:
      return static_cast<double>(row.peak_bytes);
    case OpSort::self_time:
      return row.self_ms;
    case OpSort::total_time:
      return row.total_ms;
    case OpSort::calls:
      return static_cast<double>(row.calls);
  }
  return 0.0;
}

// As torch's table prints times: three decimals in the unit that fits ("35.000us", "1.234ms"),
// so kernels shorter than a microsecond do not all read 0.
std::string time_cell(double ms) {
  if (ms >= 1000.0) return report::format_fixed(ms / 1000.0, 3) + " s";
  if (ms >= 1.0) return report::format_fixed(ms, 3) + " ms";
  return report::format_fixed(ms * 1000.0, 3) + " us";
}

std::string bytes_cell(std::int64_t bytes) {
  return report::format_bytes_or_zero(bytes);
}

}  // namespace

OpSort parse_op_sort(std::string_view text) {
  static constexpr std::pair<std::string_view, OpSort> kNames[] = {
      {"self_bytes", OpSort::self_bytes}, {"total_bytes", OpSort::total_bytes},
      {"peak_bytes", OpSort::peak_bytes}, {"self_time", OpSort::self_time},
      {"total_time", OpSort::total_time}, {"calls", OpSort::calls}};
  for (const auto& [name, sort] : kNames) {
    if (name == text) return sort;
  }
  throw UsageError("unknown sort column '" + std::string(text) +
                   "' (expected self_bytes, total_bytes, peak_bytes, self_time, total_time or "
                   "calls)");
}

std::vector<OpRow> op_table(const Recording& recording, OpGrouping grouping) {
  std::vector<OpRow> rows;
  std::map<std::string, std::size_t> row_of_name;
  std::vector<RowSpan> row_spans;  // every span that is a row, in (thread, start, depth) order
  for (const Span& span : recording.spans) {
    std::optional<std::string> name = row_name(span, grouping);
    if (!name) continue;
    auto [it, inserted] = row_of_name.try_emplace(*name, rows.size());
    if (inserted) {
      OpRow row;
      row.name = std::move(*name);
      row.kind = span.kind;
      rows.push_back(std::move(row));
    }
    if (span.kind == SpanKind::kernel) rows[it->second].flops += span.flops;
    row_spans.push_back({&span, it->second});
  }
  std::stable_sort(row_spans.begin(), row_spans.end(), [](const RowSpan& a, const RowSpan& b) {
    return std::tie(a.span->thread, a.span->start_ns, a.span->depth) <
           std::tie(b.span->thread, b.span->start_ns, b.span->depth);
  });

  // Time: a span's self time is its duration minus its direct children's (row spans only); its
  // total counts once per outermost span of its row.
  {
    std::vector<std::int64_t> self_ns(rows.size(), 0);
    std::vector<std::int64_t> total_ns(rows.size(), 0);
    std::vector<RowSpan> stack;
    std::vector<std::int64_t> children_ns;  // parallel to stack
    std::int32_t thread = row_spans.empty() ? 0 : row_spans.front().span->thread;
    const auto close = [&](std::size_t keep) {
      while (stack.size() > keep) {
        const RowSpan& done = stack.back();
        const std::int64_t duration = done.span->end_ns - done.span->start_ns;
        self_ns[done.row] += std::max<std::int64_t>(0, duration - children_ns.back());
        stack.pop_back();
        children_ns.pop_back();
      }
    };
    for (const RowSpan& current : row_spans) {
      if (current.span->thread != thread) {
        close(0);
        thread = current.span->thread;
      }
      std::size_t keep = stack.size();
      while (keep > 0 && (stack[keep - 1].span->end_ns < current.span->start_ns ||
                          stack[keep - 1].span->depth >= current.span->depth)) {
        --keep;
      }
      close(keep);
      const std::int64_t duration =
          std::max<std::int64_t>(0, current.span->end_ns - current.span->start_ns);
      if (!stack.empty()) children_ns.back() += duration;
      const bool nested_in_own_row = std::any_of(
          stack.begin(), stack.end(), [&](const RowSpan& open) { return open.row == current.row; });
      if (!nested_in_own_row) total_ns[current.row] += duration;
      ++rows[current.row].calls;
      stack.push_back(current);
      children_ns.push_back(0);
    }
    close(0);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      rows[r].self_ms = static_cast<double>(self_ns[r]) / 1e6;
      rows[r].total_ms = static_cast<double>(total_ns[r]) / 1e6;
    }
  }

  // Bytes: each alloc entry goes to the innermost row span of thread 0 open at its time.
  const std::size_t device = detail::recording_trace_device(recording.snapshot);
  const snapshot::SnapshotTrace trace(
      recording.snapshot, snapshot::SnapshotTraceOptions{
                              .device = device, .segments_of_device_only = true, .strict = false});
  struct AllocAt {
    std::int64_t time_ns;
    std::size_t event;
  };
  std::vector<AllocAt> allocs;
  for (std::size_t i = 0; i < trace.events().size(); ++i) {
    const snapshot::SnapshotEvent& event = trace.events()[i];
    if (event.action != snapshot::SnapshotAction::alloc) continue;
    const auto time = event.entry->find("time_ns");
    if (time == event.entry->end() || !time->is_number_integer()) {
      throw UsageError("recording's snapshot field 'device_traces[" + std::to_string(device) +
                       "][" + std::to_string(i) +
                       "].time_ns' must be an integer (the profiler writes it on every entry)");
    }
    allocs.push_back({time->get<std::int64_t>() - recording.origin_ns, i});
  }
  std::stable_sort(allocs.begin(), allocs.end(),
                   [](const AllocAt& a, const AllocAt& b) { return a.time_ns < b.time_ns; });
  std::vector<std::optional<std::size_t>> row_of_event(trace.events().size());
  std::vector<RowSpan> stack;
  std::size_t next = 0;
  std::vector<char> counted(rows.size(), 0);
  for (const AllocAt& alloc : allocs) {
    while (next < row_spans.size() && row_spans[next].span->thread == 0 &&
           row_spans[next].span->start_ns <= alloc.time_ns) {
      pop_finished(stack, row_spans[next].span->start_ns, row_spans[next].span->depth);
      stack.push_back(row_spans[next]);
      ++next;
    }
    while (!stack.empty() && stack.back().span->end_ns < alloc.time_ns) stack.pop_back();
    if (stack.empty()) continue;  // outside every row span: no row owns it
    const auto bytes = static_cast<std::int64_t>(
        std::min<std::uint64_t>(trace.events()[alloc.event].size_bytes, INT64_MAX));
    OpRow& self = rows[stack.back().row];
    self.self_bytes = add_bytes(self.self_bytes, bytes);
    row_of_event[alloc.event] = stack.back().row;
    for (const RowSpan& open : stack) {
      if (counted[open.row]) continue;
      counted[open.row] = 1;
      rows[open.row].total_bytes = add_bytes(rows[open.row].total_bytes, bytes);
    }
    for (const RowSpan& open : stack) counted[open.row] = 0;
  }

  // Peak: what each row's own allocations hold at the moment of peak allocated memory.
  if (!trace.events().empty()) {
    const PeakReport peak = analyse_peak(recording.snapshot, device);
    for (const Allocation& allocation : peak.live_at_peak) {
      if (allocation.alloc_event < 0) continue;
      const std::optional<std::size_t>& row =
          row_of_event[static_cast<std::size_t>(allocation.alloc_event)];
      if (row) rows[*row].peak_bytes += allocation.bytes;
    }
  }

  std::stable_sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
    if (a.self_bytes != b.self_bytes) return a.self_bytes > b.self_bytes;
    return a.name < b.name;
  });
  return rows;
}

std::string format_op_table(std::vector<OpRow> rows, OpSort sort_by, std::size_t limit) {
  std::stable_sort(rows.begin(), rows.end(), [&](const OpRow& a, const OpRow& b) {
    const double value_a = sort_value(a, sort_by);
    const double value_b = sort_value(b, sort_by);
    if (value_a != value_b) return value_a > value_b;
    return a.name < b.name;
  });
  const double self_ms_total =
      std::accumulate(rows.begin(), rows.end(), 0.0,
                      [](double sum, const OpRow& row) { return sum + row.self_ms; });
  const std::size_t shown = limit == 0 ? rows.size() : std::min(limit, rows.size());
  report::Table table({{"Name"},
                       {"Kind"},
                       {"# of Calls", report::Align::kRight},
                       {"Self time", report::Align::kRight},
                       {"Total time", report::Align::kRight},
                       {"Self Mem", report::Align::kRight},
                       {"Total Mem", report::Align::kRight},
                       {"Peak Mem", report::Align::kRight}});
  for (std::size_t i = 0; i < shown; ++i) {
    const OpRow& row = rows[i];
    table.add_row({row.name, std::string(span_kind_name(row.kind)), report::format_count(row.calls),
                   time_cell(row.self_ms), time_cell(row.total_ms), bytes_cell(row.self_bytes),
                   bytes_cell(row.total_bytes), bytes_cell(row.peak_bytes)});
  }
  table.add_rule();
  // torch's table is framed by rules above and below the header and below the rows.
  const std::string body = table.render();
  std::string out(report::display_width(body.substr(0, body.find('\n'))), '-');
  out += '\n';
  out += body;
  if (shown < rows.size()) {
    out += '(';
    out += std::to_string(rows.size() - shown);
    out += " more rows)\n";
  }
  out += "Self time total: ";
  out += time_cell(self_ms_total);
  out += '\n';
  return out;
}

json op_table_json(const std::vector<OpRow>& rows) {
  json out = json::array();
  for (const OpRow& row : rows) {
    out.push_back({{"name", row.name},
                   {"kind", span_kind_name(row.kind)},
                   {"calls", row.calls},
                   {"self_ms", row.self_ms},
                   {"total_ms", row.total_ms},
                   {"self_bytes", row.self_bytes},
                   {"total_bytes", row.total_bytes},
                   {"peak_bytes", row.peak_bytes}});
    if (row.kind == SpanKind::kernel) out.back()["flops"] = row.flops;
  }
  return out;
}

}  // namespace vramlab::profile
