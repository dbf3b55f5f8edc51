// The learner's progress file (see state.h).
#include "common/workbook/state.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

#include "common/platform/errors.h"

namespace vramlab::workbook {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// Exercises have three hint levels; the bound leaves room for more without any overflow.
constexpr std::int64_t kMaxHintLevel = 1000;
}  // namespace

fs::path state_path(const fs::path& repo_root) {
  return repo_root / ".vramlab" / "state.json";
}

fs::path state_file(const fs::path& repo_root) {
  const char* env = std::getenv("VRAMLAB_STATE_FILE");
  return env != nullptr && *env != '\0' ? fs::path(env) : state_path(repo_root);
}

State load_state(const fs::path& path) {
  State state;
  std::ifstream in(path);
  if (!in) return state;
  const json data = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const std::string invalid = "the workbook state file " + path.string() +
                              " is not valid; delete it to start over (your code is not affected)";
  if (data.is_discarded() || !data.is_object()) throw UsageError(invalid);
  try {
    state.current = data.value("current", "");
    for (const auto& id : data.value("done", json::array()))
      state.done.insert(id.get<std::string>());
    const json hints_seen = data.value("hints_seen", json::object());
    for (const auto& [id, level] : hints_seen.items()) {
      // get<int>() of 1e30 or 2^40 would be undefined or wrap (found by tests/fuzz/fuzz_state),
      // and the hint commands add 1 to the level: it is a small non-negative integer.
      if (!level.is_number_integer() || level.get<std::int64_t>() < 0 ||
          level.get<std::int64_t>() > kMaxHintLevel)
        throw UsageError(invalid + ": hint level " + level.dump() + " for '" + id + "'");
      state.hints_seen[id] = level.get<int>();
    }
  } catch (const json::exception&) {
    throw UsageError(invalid);
  }
  return state;
}

void save_state(const fs::path& path, const State& state) {
  json data;
  data["current"] = state.current;
  data["done"] = state.done;
  data["hints_seen"] = state.hints_seen;
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << data.dump(2) << "\n";
    if (!out)
      throw std::runtime_error("cannot write the workbook state file " + temporary.string());
  }
  fs::rename(temporary, path, error);
  if (error)
    throw std::runtime_error("cannot write the workbook state file " + path.string() + ": " +
                             error.message());
}

}  // namespace vramlab::workbook
