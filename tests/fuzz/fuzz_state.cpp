// libFuzzer target: the workbook state file (.vramlab/state.json, common/workbook/state.h).
// Contract: load_state() returns a state or refuses the file with a UsageError naming it; a loaded
// state saves and loads back equal.
//   build-fuzz/bin/fuzz_state tests/fuzz/corpus/state
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/workbook/state.h"
#include "tests/fuzz/fuzz_contract.h"

namespace {

// One folder per fuzzing process (libFuzzer's -jobs run several at once).
const std::filesystem::path& work_folder() {
  static const std::filesystem::path folder = [] {
    auto path = std::filesystem::temp_directory_path() /
                ("vramlab-fuzz-state-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  const auto file = work_folder() / "state.json";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  fuzz::expect_parsed_or_usage_error([&] {
    const workbook::State state = workbook::load_state(file);
    const auto copy = work_folder() / "saved" / "state.json";
    workbook::save_state(copy, state);
    const workbook::State again = workbook::load_state(copy);
    if (again.current != state.current || again.done != state.done ||
        again.hints_seen != state.hints_seen)
      fuzz::contract_broken("save_state", "the state does not load back equal");
  });
  return 0;
}
