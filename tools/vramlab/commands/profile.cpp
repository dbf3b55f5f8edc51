// `vramlab profile`: reads a memory snapshot the way an engineer reads pytorch.org/memory_viz —
// where the peak is, who reached it (module, phase, tensor and the C++ frames that allocated it),
// what was live there grouped by module, phase, category and call stack, and the largest
// allocations at the peak; with --compare, what grew between two snapshots (how a leak is found).
//
//   vramlab train --model gpt2-tiny --steps 2 --device sim --profile prof
//   vramlab profile prof/snapshot.pickle               the peak and its owners
//   vramlab profile prof/snapshot.json --top 5 --json  the same as one JSON object
//   vramlab profile snapshot.pickle                    a snapshot PyTorch's _dump_snapshot() wrote
//   vramlab profile --compare before.pickle after.pickle   what grew; leaks first
//
// Input: a .pickle (PyTorch's or vramlab's) or the same dictionary as JSON. PyTorch's snapshots
// carry no module, phase or tensor: their owners are their frames. Exit codes: 0, 2 bad input
// (a missing file, a file that is not a snapshot, a bad --top).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/platform/printable.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tools/vramlab/commands.h"
#include "tools/vramlab/commands/function_names.h"

namespace vramlab::cli {
namespace {

using nlohmann::json;
using snapshot::Allocation;
using snapshot::ByteGroup;
using snapshot::Growth;

// More rows than any terminal shows; beyond it a number is more likely a typo.
constexpr int64_t kMaxTop = 1'000'000;
// Frames printed under the peak's owner (the JSON has them all).
constexpr size_t kOwnerFrames = 6;

struct ProfileOptions {
  std::string snapshot;
  std::vector<std::string> compare;  // A B
  int64_t top = 10;
  int64_t device = 0;
  bool json = false;
};

std::string bytes_text(int64_t bytes) {
  return report::format_bytes_or_zero(bytes);
}

std::string signed_bytes(int64_t bytes) {
  if (bytes < 0) return "-" + report::format_bytes(static_cast<uint64_t>(-(bytes + 1)) + 1);
  return "+" + report::format_bytes(static_cast<uint64_t>(bytes));
}

std::string or_none(const std::string& text) {
  return text.empty() ? "(none)" : text;
}

json frames_json(const std::vector<memory::StackFrame>& frames) {
  json out = json::array();
  for (const memory::StackFrame& frame : frames)
    out.push_back({{"name", frame.function}, {"filename", frame.file}, {"line", frame.line}});
  return out;
}

// What a reader calls an allocation: its tensor name, or for a PyTorch snapshot (no names) the
// function that allocated it.
std::string allocation_name(const Allocation& allocation) {
  if (!allocation.tensor.empty()) return allocation.tensor;
  if (!allocation.frames.empty() && !allocation.frames.front().function.empty())
    return without_parameters(allocation.frames.front().function);
  return "(unnamed)";
}

json allocation_json(const Allocation& allocation) {
  return {{"name", allocation_name(allocation)},
          {"tensor", allocation.tensor},
          {"bytes", allocation.bytes},
          {"module", allocation.module},
          {"phase", allocation.phase},
          {"category", allocation.category},
          {"address", allocation.address},
          {"alloc_event", allocation.alloc_event},
          {"frames", frames_json(allocation.frames)}};
}

json groups_json(const std::vector<ByteGroup>& groups) {
  json out = json::array();
  for (const ByteGroup& group : groups)
    out.push_back({{"key", group.key}, {"bytes", group.bytes}, {"count", group.count}});
  return out;
}

std::string frame_text(const memory::StackFrame& frame) {
  std::string text = frame.function.empty() ? "?" : without_parameters(frame.function);
  if (!frame.file.empty())
    text += "  (" + frame.file + (frame.line > 0 ? ":" + std::to_string(frame.line) : "") + ")";
  return platform::printable(text);
}

// Long stack keys and function signatures would push the numbers off the screen.
std::string clipped(const std::string& text, size_t width) {
  const std::string shown = platform::printable(text);
  if (report::display_width(shown) <= width) return shown;
  std::string out;
  for (size_t i = 0; i < shown.size() && report::display_width(out) + 1 < width; ++i) {
    out += shown[i];
    // Keep multi-byte UTF-8 sequences whole.
    while (i + 1 < shown.size() && (static_cast<unsigned char>(shown[i + 1]) & 0xC0u) == 0x80u)
      out += shown[++i];
  }
  return out + "…";
}

// A stack group's key with each function's parameters dropped, so its frames fit a column.
std::string short_stack(const std::string& key) {
  constexpr std::string_view kArrow = " ← ";
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t end = key.find(kArrow, start);
    out += without_parameters(std::string_view(key).substr(start, end - start));
    if (end == std::string::npos) return out;
    out += kArrow;
    start = end + kArrow.size();
  }
}

void print_groups(const char* title, const std::vector<ByteGroup>& groups, int64_t live_bytes,
                  size_t limit, bool colour, bool stacks = false) {
  report::Table table({{title},
                       {"bytes", report::Align::kRight},
                       {"share", report::Align::kRight},
                       {"allocations", report::Align::kRight}});
  for (size_t i = 0; i < std::min(limit, groups.size()); ++i) {
    const ByteGroup& group = groups[i];
    table.add_row({clipped(stacks ? short_stack(group.key) : group.key, 100),
                   bytes_text(group.bytes),
                   report::format_percent(live_bytes > 0 ? static_cast<double>(group.bytes) /
                                                               static_cast<double>(live_bytes)
                                                         : 0.0),
                   report::format_count(group.count)});
  }
  if (groups.size() > limit)
    table.add_row(
        {"(" + std::to_string(groups.size() - limit) + " more; --top N shows more)", "", "", ""},
        report::RowStyle::kDim);
  std::printf("\n%s", table.render(colour, 2).c_str());
}

// The analysis names the field that is wrong; the user also needs to know in which file.
template <typename Analysis>
auto in_file(const std::string& path, Analysis analysis) {
  try {
    return analysis();
  } catch (const UsageError& e) {
    throw UsageError("'" + platform::printable(path) + "' is not a usable snapshot: " + e.what());
  }
}

void run_summary(const ProfileOptions& o) {
  const json snapshot = snapshot::read_snapshot_file(o.snapshot);
  const snapshot::PeakReport peak = in_file(
      o.snapshot, [&] { return snapshot::analyse_peak(snapshot, static_cast<size_t>(o.device)); });
  int64_t live_bytes = 0;
  for (const Allocation& allocation : peak.live_at_peak) live_bytes += allocation.bytes;
  const size_t top = static_cast<size_t>(o.top);
  const bool has_owner = peak.peak_event >= 0 && peak.peak_owner.bytes > 0;

  if (o.json) {
    json per_module = json::object();
    for (const ByteGroup& group : peak.by_module) per_module[group.key] = group.bytes;
    json top_at_peak = json::array();
    for (size_t i = 0; i < std::min(top, peak.live_at_peak.size()); ++i)
      top_at_peak.push_back(allocation_json(peak.live_at_peak[i]));
    json owner = has_owner ? allocation_json(peak.peak_owner) : json(nullptr);
    const json out{{"snapshot", o.snapshot},
                   {"device", o.device},
                   {"peak_bytes", peak.peak_bytes},
                   {"peak_event", peak.peak_event},
                   {"peak_owner", owner},
                   {"live_at_peak", {{"count", peak.live_at_peak.size()}, {"bytes", live_bytes}}},
                   {"per_module_bytes", per_module},
                   {"by_module", groups_json(peak.by_module)},
                   {"by_phase", groups_json(peak.by_phase)},
                   {"by_category", groups_json(peak.by_category)},
                   {"by_stack", groups_json(peak.by_stack)},
                   {"top_at_peak", top_at_peak}};
    std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    return;
  }

  const bool colour = report::use_colour(stdout);
  using namespace report::style;
  std::printf("%s %s\n", bold("vramlab profile", colour).c_str(),
              platform::printable(o.snapshot).c_str());
  std::printf(
      "peak allocated %s (requested bytes, as memory_viz's Active Memory Timeline draws "
      "them), %s\n",
      bold(bytes_text(peak.peak_bytes), colour).c_str(),
      peak.peak_event < 0 ? "before the trace's first event"
                          : ("at event " + std::to_string(peak.peak_event)).c_str());
  if (has_owner) {
    const Allocation& owner = peak.peak_owner;
    std::printf("  reached by %s: %s, module %s, phase %s, %s\n",
                platform::printable(allocation_name(owner)).c_str(),
                bytes_text(owner.bytes).c_str(), platform::printable(or_none(owner.module)).c_str(),
                platform::printable(or_none(owner.phase)).c_str(),
                platform::printable(or_none(owner.category)).c_str());
    if (owner.frames.empty()) std::printf("    (no call stack recorded)\n");
    for (size_t i = 0; i < std::min(kOwnerFrames, owner.frames.size()); ++i)
      std::printf("    %s %s\n", i == 0 ? "at" : "  ", frame_text(owner.frames[i]).c_str());
    if (owner.frames.size() > kOwnerFrames)
      std::printf("       (%zu more frames: --json lists them all)\n",
                  owner.frames.size() - kOwnerFrames);
  }
  std::printf("live at the peak: %s in %s allocations\n", bytes_text(live_bytes).c_str(),
              report::format_count(static_cast<int64_t>(peak.live_at_peak.size())).c_str());
  print_groups("module", peak.by_module, live_bytes, top, colour);
  print_groups("phase", peak.by_phase, live_bytes, top, colour);
  print_groups("category", peak.by_category, live_bytes, top, colour);
  print_groups("call stack (innermost first)", peak.by_stack, live_bytes, top, colour, true);

  report::Table largest({{"#", report::Align::kRight},
                         {"bytes", report::Align::kRight},
                         {"tensor"},
                         {"module"},
                         {"phase"},
                         {"category"},
                         {"allocated in"}});
  for (size_t i = 0; i < std::min(top, peak.live_at_peak.size()); ++i) {
    const Allocation& a = peak.live_at_peak[i];
    largest.add_row({std::to_string(i + 1), bytes_text(a.bytes), clipped(or_none(a.tensor), 24),
                     clipped(or_none(a.module), 32), clipped(or_none(a.phase), 12),
                     clipped(or_none(a.category), 16),
                     a.frames.empty()
                         ? "(no stack)"
                         : clipped(without_parameters(a.frames.front().function), 60)});
  }
  std::printf("\nthe %zu largest allocations at the peak:\n%s",
              std::min(top, peak.live_at_peak.size()), largest.render(colour, 2).c_str());
}

// Owners whose number of live allocations grew hold on to something each step: the leak
// suspects, shown first; then owners that changed only in size, largest growth first.
std::vector<Growth> leaks_first(std::vector<Growth> changed) {
  std::stable_partition(changed.begin(), changed.end(),
                        [](const Growth& g) { return g.count_after > g.count_before; });
  return changed;
}

void run_compare(const ProfileOptions& o) {
  const json before = snapshot::read_snapshot_file(o.compare[0]);
  const json after = snapshot::read_snapshot_file(o.compare[1]);
  const auto live_bytes = [](const std::string& path, const json& snapshot) {
    int64_t bytes = 0;
    for (const Allocation& a : in_file(path, [&] { return snapshot::live_allocations(snapshot); }))
      bytes += a.bytes;
    return bytes;
  };
  const int64_t bytes_before = live_bytes(o.compare[0], before);
  const int64_t bytes_after = live_bytes(o.compare[1], after);
  const std::vector<Growth> changed = leaks_first(snapshot::compare_snapshots(before, after));
  int64_t leak_count = 0;
  for (const Growth& g : changed) leak_count += g.count_after > g.count_before ? 1 : 0;

  if (o.json) {
    json owners = json::array();
    for (const Growth& g : changed)
      owners.push_back({{"module", g.module},
                        {"tensor", g.tensor},
                        {"category", g.category},
                        {"stack", g.stack},
                        {"count_before", g.count_before},
                        {"count_after", g.count_after},
                        {"bytes_before", g.bytes_before},
                        {"bytes_after", g.bytes_after},
                        {"growth_bytes", g.bytes_after - g.bytes_before},
                        {"leak_suspect", g.count_after > g.count_before}});
    const json out{{"before", o.compare[0]},
                   {"after", o.compare[1]},
                   {"live_bytes_before", bytes_before},
                   {"live_bytes_after", bytes_after},
                   {"growth_bytes", bytes_after - bytes_before},
                   {"leak_suspects", leak_count},
                   {"changed", owners}};
    std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    return;
  }
  const bool colour = report::use_colour(stdout);
  using namespace report::style;
  std::printf("%s --compare %s %s\n", bold("vramlab profile", colour).c_str(),
              platform::printable(o.compare[0]).c_str(), platform::printable(o.compare[1]).c_str());
  std::printf("live at the end: %s before, %s after (%s)\n", bytes_text(bytes_before).c_str(),
              bytes_text(bytes_after).c_str(),
              bold(signed_bytes(bytes_after - bytes_before), colour).c_str());
  if (changed.empty()) {
    std::printf("no owner changed: the same allocations are live in both\n");
    return;
  }
  std::printf(
      "%lld owner%s hold more allocations after than before (leak suspects, listed first); "
      "%lld changed in size only or shrank\n",
      static_cast<long long>(leak_count), leak_count == 1 ? "" : "s",
      static_cast<long long>(changed.size()) - static_cast<long long>(leak_count));
  report::Table table({{"module"},
                       {"tensor"},
                       {"category"},
                       {"count", report::Align::kRight},
                       {"before", report::Align::kRight},
                       {"after", report::Align::kRight},
                       {"growth", report::Align::kRight},
                       {"allocated in"}});
  const size_t top = static_cast<size_t>(o.top);
  for (size_t i = 0; i < std::min(top, changed.size()); ++i) {
    const Growth& g = changed[i];
    const bool leak = g.count_after > g.count_before;
    table.add_row({clipped(or_none(g.module), 32), clipped(or_none(g.tensor), 24),
                   clipped(or_none(g.category), 16),
                   std::to_string(g.count_before) + " → " + std::to_string(g.count_after),
                   bytes_text(g.bytes_before), bytes_text(g.bytes_after),
                   signed_bytes(g.bytes_after - g.bytes_before), clipped(short_stack(g.stack), 70)},
                  leak ? report::RowStyle::kBold : report::RowStyle::kNormal);
  }
  if (changed.size() > top)
    table.add_row({"(" + std::to_string(changed.size() - top) + " more; --top N shows more)", "",
                   "", "", "", "", "", ""},
                  report::RowStyle::kDim);
  std::printf("\n%s", table.render(colour, 2).c_str());
}

void run_profile(const ProfileOptions& o) {
  if (o.top < 1 || o.top > kMaxTop)
    throw UsageError("--top " + std::to_string(o.top) + " outside [1, " + std::to_string(kMaxTop) +
                     "]");
  if (o.device < 0) throw UsageError("--device-index " + std::to_string(o.device) + " is negative");
  if (!o.compare.empty() && !o.snapshot.empty())
    throw UsageError("give either SNAPSHOT ('" + platform::printable(o.snapshot) +
                     "') or --compare A B, not both");
  if (!o.compare.empty()) return run_compare(o);
  if (o.snapshot.empty())
    throw UsageError("vramlab profile needs a SNAPSHOT (.pickle or .json) or --compare A B");
  run_summary(o);
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand(
      "profile",
      "Summarise a memory snapshot (vramlab train --profile's, or PyTorch's _dump_snapshot()): "
      "the peak and who reached it, what was live there by module, phase, category and call "
      "stack, the largest allocations; --compare A B: what grew between two snapshots");
  cmd->add_option("snapshot", opts->snapshot,
                  "A snapshot: .pickle (PyTorch's or vramlab's) or .json");
  cmd->add_option("--compare", opts->compare,
                  "Two snapshots A B: the owners whose live allocations changed from A to B, "
                  "those holding more allocations (leak suspects) first")
      ->expected(2);
  cmd->add_option("--top", opts->top,
                  "Rows per table: groups, largest allocations, changed owners (default 10)");
  cmd->add_option("--device-index", opts->device,
                  "Which device's trace to read in a multi-GPU PyTorch snapshot (default 0)");
  cmd->add_flag(
      "--json", opts->json,
      "One JSON object: peak_bytes, peak_owner, top_at_peak, per_module_bytes, by_module, "
      "by_phase, by_category, by_stack (--compare: changed owners with their growth)");
  cmd->callback([opts, &exit_code] {
    run_profile(*opts);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
