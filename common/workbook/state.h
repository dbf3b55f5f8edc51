/// \file
/// \brief The learner's progress, kept in a small plain file in the checkout:
/// `.vramlab/state.json` (gitignored) — the current exercise, the exercises done and the hint
/// levels seen.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace vramlab::workbook {

/// The learner's progress.
struct State {
  std::string current;                    ///< the exercise `watch` checks ("" = the first pending).
  std::set<std::string> done;             ///< exercises whose own code passed `vramlab check`.
  std::map<std::string, int> hints_seen;  ///< highest hint level shown, per exercise.
  /// \p exercise_id e.g. "01.1".
  [[nodiscard]] bool is_done(const std::string& exercise_id) const {
    return done.count(exercise_id) != 0;
  }
};

/// \return repo_root/.vramlab/state.json (the folder may not exist yet).
std::filesystem::path state_path(const std::filesystem::path& repo_root);

/// The state file every workbook reader uses: `VRAMLAB_STATE_FILE` when set and not empty (tests,
/// or a learner keeping progress outside the checkout), state_path(repo_root) otherwise.
std::filesystem::path state_file(const std::filesystem::path& repo_root);

/// Reads the state; a missing file is an empty state.
/// \throws vramlab::UsageError naming \p path when it exists but is not a valid state file.
State load_state(const std::filesystem::path& path);

/// Writes the state (creating the folder), atomically through a temporary file.
/// \throws std::runtime_error naming \p path when it cannot be written.
void save_state(const std::filesystem::path& path, const State& state);

}  // namespace vramlab::workbook
