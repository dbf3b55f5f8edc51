// vramlab diagnose: an out-of-memory error explained. Reads the message (vramlab's, or PyTorch's
// own text, from a log file, stdin or --message) and, optionally, the snapshot taken at the
// failure (vramlab train --snapshot-on-oom, or PyTorch's OOM-observer recipe); names the phase,
// the category and the tensor of the request that failed, says whether fragmentation is the cause,
// and lists the fixes cheapest first, each with the flag that applies it.
//
//   vramlab diagnose train.log --snapshot oom.pickle
//   vramlab diagnose --message "CUDA out of memory. Tried to allocate ..." --json
//
// Exit codes: 0 diagnosed, 2 bad input (no out-of-memory message found, an unreadable file).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "common/memory/oom_error.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"
#include "common/snapshot/oom_diagnosis.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {
namespace {

using nlohmann::json;

struct DiagnoseOptions {
  std::string log;      // a file holding the message, "-" for stdin
  std::string message;  // or the message itself
  std::string snapshot;
  bool json = false;
};

std::string read_text(const std::string& path) {
  if (path == "-") return {std::istreambuf_iterator<char>(std::cin), {}};
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UsageError("cannot read " + platform::printable(path));
  return {std::istreambuf_iterator<char>(file), {}};
}

std::string size(int64_t bytes) {
  return memory::format_size(static_cast<uint64_t>(bytes));
}

void run_diagnose(const DiagnoseOptions& o) {
  if (o.log.empty() && o.message.empty())
    throw UsageError("give the message in a file (or - for stdin) or with --message");
  if (!o.log.empty() && !o.message.empty())
    throw UsageError("give the message in a file or with --message, not both: got the file " +
                     platform::printable(o.log) + " and a --message");
  const std::string text = o.message.empty() ? read_text(o.log) : o.message;
  const std::optional<snapshot::OomMessage> message = snapshot::parse_oom_message(text);
  if (!message) {
    // The message's start, as the error's one line can hold it.
    const std::string shown =
        platform::printable(text.substr(0, 80)) + (text.size() > 80 ? "..." : "");
    throw UsageError(
        "no out-of-memory message (\"... out of memory. Tried to allocate ...\") in " +
        (o.message.empty() ? platform::printable(o.log) : "--message '" + shown + "'"));
  }
  std::optional<json> snap;
  if (!o.snapshot.empty()) snap = snapshot::read_snapshot_file(o.snapshot);
  const snapshot::OomDiagnosis d = snapshot::diagnose_oom(*message, snap ? &*snap : nullptr);
  const snapshot::OomMessage& m = d.message;
  if (o.json) {
    json fixes = json::array();
    for (const snapshot::OomFix& fix : d.fixes)
      fixes.push_back({{"change", fix.change}, {"effect", fix.effect}, {"cost", fix.cost}});
    json live = json::object();
    for (const auto& [category, bytes] : d.live_by_category) live[category] = bytes;
    std::printf("%s\n", json{{"device", m.device},
                             {"requested_bytes", m.requested_bytes},
                             {"capacity_bytes", m.capacity_bytes},
                             {"free_bytes", m.free_bytes},
                             {"allocated_bytes", m.allocated_bytes},
                             {"reserved_unallocated_bytes", m.reserved_unallocated_bytes},
                             {"process_bytes", m.process_bytes ? json(*m.process_bytes) : json()},
                             {"fragmentation", d.fragmentation},
                             {"phase", snap ? json(d.phase) : json()},
                             {"category", snap ? json(d.category) : json()},
                             {"module", snap ? json(d.module) : json()},
                             {"tensor", snap ? json(d.tensor) : json()},
                             {"live_by_category", snap ? live : json()},
                             {"kept_from_earlier_steps_bytes",
                              snap ? json(d.kept_from_earlier_steps_bytes) : json()},
                             {"fixes", fixes}}
                            .dump()
                            .c_str());
    return;
  }
  std::printf(
      "%s ran out of memory asking for %s: %s of %s allocated to tensors, %s cached but "
      "unused, %s free on the device\n",
      m.device.empty() ? "the device" : platform::printable(m.device).c_str(),
      size(m.requested_bytes).c_str(), size(m.allocated_bytes).c_str(),
      size(m.capacity_bytes).c_str(), size(m.reserved_unallocated_bytes).c_str(),
      size(m.free_bytes).c_str());
  if (d.fragmentation)
    std::printf(
        "cause: fragmentation. The cache held %s unused, more than the %s asked for, but "
        "in pieces none of which fits\n",
        size(m.reserved_unallocated_bytes).c_str(), size(m.requested_bytes).c_str());
  else
    std::printf(
        "cause: capacity. The live tensors fill the device; the cache's %s unused bytes "
        "would not hold the request even in one piece\n",
        size(m.reserved_unallocated_bytes).c_str());
  if (snap) {
    std::printf("the request: %s (%s) of %s, in the %s\n", platform::printable(d.tensor).c_str(),
                d.category.c_str(), platform::printable(d.module).c_str(), d.phase.c_str());
    if (d.phase == "first optimizer step")
      std::printf(
          "  the optimizer's states did not exist before this step: they are made at the "
          "first step(), so a run that survives forward and backward can die here "
          "(probe with at least two steps: vramlab maxbatch)\n");
    if (d.kept_from_earlier_steps_bytes > 0)
      std::printf(
          "  %s of activations and temporaries made in earlier steps are still alive: something "
          "keeps a step's tensors after it (a leak), whatever the numbers above say\n",
          size(d.kept_from_earlier_steps_bytes).c_str());
    std::printf("live at the failure:");
    for (const auto& [category, bytes] : d.live_by_category)
      std::printf("  %s %s", category.c_str(), size(bytes).c_str());
    std::printf("\n");
  } else {
    std::printf("(give --snapshot FILE, taken at the failure, for the phase and the tensor)\n");
  }
  std::printf("fixes, cheapest first:\n");
  for (const snapshot::OomFix& fix : d.fixes)
    std::printf("  %-48s %s; costs %s\n", fix.change.c_str(), fix.effect.c_str(), fix.cost.c_str());
}

}  // namespace

void add_diagnose_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<DiagnoseOptions>();
  auto* cmd = app.add_subcommand(
      "diagnose",
      "Explain an out-of-memory error (vramlab's or PyTorch's message, and the snapshot taken at "
      "the failure): the phase, the tensor, fragmentation or capacity, and the fixes cheapest "
      "first with their flags");
  cmd->add_option("log", opts->log,
                  "A file holding the message (a whole log is fine), - for stdin");
  cmd->add_option("--message", opts->message, "The message itself instead of a file");
  cmd->add_option("--snapshot", opts->snapshot,
                  "The snapshot taken at the failure (vramlab train --snapshot-on-oom, or "
                  "PyTorch's _dump_snapshot() in an out-of-memory observer)");
  cmd->add_flag("--json", opts->json, "One JSON object");
  cmd->callback([opts, &exit_code] {
    run_diagnose(*opts);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
