// libFuzzer target: an allocation trace (`vramlab alloc FILE`, common/memory/trace_replay.h)
// replayed on a small simulated device. Contract: the replay ends (an out-of-memory stop included)
// or refuses the trace with a UsageError "fuzz.trace:LINE: ..." whose text has no raw control
// character, and a line holding a NUL is shown with it escaped (a NUL once cut the message short);
// the allocator's invariants hold after the replay and tearing it down leaks nothing. The snapshot
// `vramlab alloc --export-snapshot` writes of the replay exports as a pickle, re-imports, and
// `vramlab profile` analyses it without a complaint: vramlab reads back everything it writes.
//   build-fuzz/bin/fuzz_trace tests/fuzz/corpus/trace -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/memory/device.h"
#include "common/memory/trace_replay.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tests/fuzz/fuzz_contract.h"

namespace {

bool has_control_character(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// The text of line \p number (1-based) of \p input, as std::getline splits it.
std::string line_of(const std::string& input, std::size_t number) {
  std::istringstream stream(input);
  std::string line;
  for (std::size_t i = 0; i < number && std::getline(stream, line); ++i) {
  }
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  const std::string input(reinterpret_cast<const char*>(data), size);
  // 64 MiB: big enough for both pools and expandable segments, small enough to reach OOMs.
  static const memory::Device device = memory::parse_device("sim:64MiB");
  try {
    auto allocator = memory::make_replay_allocator(device, memory::AllocatorConfig{});
    allocator->record_history(memory::RecordMode::all);
    memory::TraceReplayer replayer(*allocator);
    std::istringstream stream(input);
    const memory::ReplayOutcome outcome = replayer.replay(stream, "fuzz.trace");
    if (outcome.out_of_memory && outcome.message.empty())
      fuzz::contract_broken("replay", "out-of-memory stop without a message");
    allocator->check_invariants();
    const nlohmann::json snapshot = allocator->snapshot();
    try {
      const nlohmann::json imported = snapshot::decode_pickle(snapshot::encode_pickle(snapshot));
      (void)snapshot::analyse_peak(imported);
      if (!snapshot::compare_snapshots(imported, imported).empty())
        fuzz::contract_broken("compare_snapshots", "vramlab's snapshot grew against itself");
    } catch (const UsageError& error) {
      fuzz::contract_broken("vramlab cannot read back its own snapshot", error.what());
    }
  } catch (const UsageError& error) {
    fuzz::check_usage_error(error);
    const std::string message = error.what();
    if (has_control_character(message)) fuzz::contract_broken("UsageError raw control", message);
    const std::string prefix = "fuzz.trace:";
    if (message.rfind(prefix, 0) != 0) fuzz::contract_broken("UsageError without line", message);
    const std::size_t line_number = std::stoul(message.substr(prefix.size()));
    if (line_of(input, line_number).find('\0') != std::string::npos &&
        message.find("\\x00") == std::string::npos)
      fuzz::contract_broken("UsageError hides the NUL of its line", message);
  } catch (const std::exception& error) {
    fuzz::contract_broken(typeid(error).name(), error.what());
  }
  return 0;
}
