// `vramlab alloc`: the allocator playground. Replays an allocation trace on a simulated device's
// caching allocator (PyTorch CUDACachingAllocator semantics) and prints what a learner reads first:
// memory_summary()'s table and the bytes per category; --stats adds memory_stats()'s raw keys.
//
//   vramlab alloc tools/alloc-traces/fragmentation.trace
//   vramlab alloc TRACE --device sim:a100-40g --conf max_split_size_mb:64 --summary
//   vramlab alloc TRACE --stats                       + every memory_stats() key
//   vramlab alloc TRACE --json                        {"memory_stats": {...}, ...}
//   vramlab alloc TRACE --export-snapshot run.pickle  (.pickle for pytorch.org/memory_viz, .json,
//   .html)
//
// Exit codes: 0 replayed, 1 out of memory during the replay (message and line on stderr),
// 2 bad input (a malformed line is reported as FILE:LINE: message). Text from the trace or the
// command line is printed with its control characters escaped (platform::printable).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/memory/alloc_config.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/trace_replay.h"
#include "common/platform/errors.h"
#include "common/report/memory_timeline_html.h"
#include "common/report/terminal.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {
namespace {

using nlohmann::json;

struct AllocOptions {
  std::string trace_path;
  std::string device = "sim:24GiB";
  std::string conf;
  bool json_output = false;
  bool summary = false;
  bool stats = false;
  std::string export_path;
};

void export_snapshot(const json& snapshot, const std::string& path, const std::string& title) {
  auto ends_with = [&](const char* suffix) { return path.ends_with(suffix); };
  if (ends_with(".pickle") || ends_with(".pkl")) {
    snapshot::write_snapshot_pickle(snapshot, path);
    return;
  }
  std::string text;
  if (ends_with(".json")) {
    text = snapshot.dump(1);
  } else if (ends_with(".html")) {
    text = report::render_memory_timeline_html(snapshot, title);
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

void print_stats_text(const memory::CachingAllocator& allocator) {
  std::size_t width = 0;
  const auto stats = allocator.memory_stats();
  for (const auto& [key, value] : stats) width = std::max(width, key.size());
  std::printf("\nmemory_stats()\n");
  for (const auto& [key, value] : stats) {
    std::printf("%-*s  %lld\n", static_cast<int>(width), key.c_str(),
                static_cast<long long>(value));
  }
}

void print_categories_text(const memory::CachingAllocator& allocator) {
  std::printf("\nbytes per category  %12s  %12s\n", "current", "peak");
  const memory::CategoryStats categories = allocator.category_stats();
  for (memory::MemoryCategory category : memory::kAllMemoryCategories) {
    const memory::Stat& stat = categories.of(category);
    std::printf("  %-16s  %12s  %12s\n", std::string(memory::category_name(category)).c_str(),
                report::format_bytes(static_cast<uint64_t>(stat.current)).c_str(),
                report::format_bytes(static_cast<uint64_t>(stat.peak)).c_str());
  }
}

// Each line of a message with its control characters escaped; the lines themselves are kept.
std::string printable_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    out += platform::printable(std::string_view(text).substr(start, end - start));
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

int run_alloc(const AllocOptions& options) {
  if (!options.export_path.empty() && !options.export_path.ends_with(".pickle") &&
      !options.export_path.ends_with(".pkl") && !options.export_path.ends_with(".json") &&
      !options.export_path.ends_with(".html")) {
    throw UsageError("--export-snapshot '" + options.export_path +
                     "': expected a .pickle, .json or .html file");
  }
  const memory::Device device = memory::parse_device(options.device);
  const memory::AllocatorConfig config =
      memory::parse_alloc_conf(options.conf, memory::alloc_conf_from_environment());
  std::ifstream input(options.trace_path);
  const std::string shown_path = platform::printable(options.trace_path);
  if (!input) throw UsageError("cannot read trace '" + shown_path + "'");

  auto allocator = memory::make_replay_allocator(device, config);
  allocator->record_history(memory::RecordMode::all);
  memory::TraceReplayer replayer(*allocator);
  const memory::ReplayOutcome outcome = replayer.replay(input, options.trace_path);

  if (outcome.out_of_memory) {
    std::fprintf(stderr, "%s:%zu: out of memory at '%s'\n%s\n", shown_path.c_str(),
                 outcome.line_number, platform::printable(outcome.line_text).c_str(),
                 printable_lines(outcome.message).c_str());
  }
  if (!options.export_path.empty()) {
    export_snapshot(allocator->snapshot(), options.export_path,
                    "vramlab alloc " + shown_path + " on " + device.name());
  }
  if (options.json_output) {
    json stats = json::object();
    for (const auto& [key, value] : allocator->memory_stats()) stats[key] = value;
    json categories = json::object();
    const memory::CategoryStats category_stats = allocator->category_stats();
    for (memory::MemoryCategory category : memory::kAllMemoryCategories) {
      const memory::Stat& stat = category_stats.of(category);
      categories[std::string(memory::category_name(category))] = {{"current", stat.current},
                                                                  {"peak", stat.peak}};
    }
    json result = {{"trace", shown_path},
                   {"device", device.name()},
                   {"capacity_bytes", allocator->capacity_bytes()},
                   {"operations", outcome.operations},
                   {"memory_stats", std::move(stats)},
                   {"category_bytes", std::move(categories)},
                   {"out_of_memory", nullptr}};
    if (outcome.out_of_memory) {
      result["out_of_memory"] = {{"line", outcome.line_number},
                                 {"operation", platform::printable(outcome.line_text)},
                                 {"message", printable_lines(outcome.message)}};
    }
    if (options.summary) result["summary"] = allocator->memory_summary();
    std::printf("%s\n", result.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else if (options.summary && !options.stats) {
    std::fputs(allocator->memory_summary().c_str(), stdout);
  } else {
    std::printf("# %s on %s: %zu operations replayed\n", shown_path.c_str(), device.name().c_str(),
                outcome.operations);
    std::fputs(allocator->memory_summary().c_str(), stdout);
    print_categories_text(*allocator);
    if (options.stats) {
      print_stats_text(*allocator);
    } else {
      std::printf("\n(--stats adds memory_stats()'s %zu raw keys; --json has them too)\n",
                  allocator->memory_stats().size());
    }
  }
  return outcome.out_of_memory ? kExitFailure : 0;
}

}  // namespace

void add_alloc_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AllocOptions>();
  CLI::App* cmd = app.add_subcommand(
      "alloc",
      "Allocator playground: replay an allocation trace on a simulated GPU's caching allocator "
      "(PyTorch semantics) and print memory_summary() and the bytes per category (--stats: "
      "memory_stats()).");
  cmd->add_option("trace", options->trace_path,
                  "Trace file, one operation per line: alloc NAME BYTES [stream=S] "
                  "[category=C] | free NAME | empty_cache | record_stream NAME S | sync [S] | "
                  "set_conf KEY:VAL,... | reset_peak | # comment")
      ->required();
  cmd->add_option("--device", options->device,
                  "Device: sim[:PRESET|:SIZE] (" + memory::device_preset_names() +
                      ", 2GiB, ...), meta[:SIZE] or cuda[:N]")
      ->capture_default_str();
  cmd->add_option("--conf", options->conf,
                  "Allocator settings with PYTORCH_CUDA_ALLOC_CONF's keys, e.g. "
                  "max_split_size_mb:64,expandable_segments:True");
  cmd->add_flag(
      "--json", options->json_output,
      "Print one JSON object; its memory_stats member holds torch.cuda.memory_stats()'s keys");
  cmd->add_flag(
      "--summary", options->summary,
      "Print only torch.cuda.memory_summary()'s table (in --json: add it as \"summary\")");
  cmd->add_flag("--stats", options->stats,
                "Also print torch.cuda.memory_stats()'s raw keys (always in --json)");
  cmd->add_option("--export-snapshot", options->export_path,
                  "Write the allocator snapshot: .pickle (PyTorch's _dump_snapshot format for "
                  "pytorch.org/memory_viz), .json, or .html (self-contained timeline)");
  cmd->callback([options, &exit_code] { exit_code = run_alloc(*options); });
}

}  // namespace vramlab::cli
