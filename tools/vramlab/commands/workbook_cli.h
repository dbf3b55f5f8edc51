// What the workbook commands (workbook*.cpp) share: where the checkout and the build are, the
// manifests, the learner's state, building targets and checking one exercise.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/workbook/gtest_report.h"
#include "common/workbook/manifest.h"
#include "common/workbook/state.h"

namespace vramlab::cli::workbook_cli {

namespace fs = std::filesystem;

/// Options every workbook command takes.
struct CommonOptions {
  std::string build_dir;  // --build-dir (else VRAMLAB_BUILD_DIR, else the build this binary came
                          // from, else <repo>/build)
  bool json = false;      // --json
};

/// Adds --build-dir and --json to a subcommand.
void add_common_options(CLI::App* cmd, CommonOptions& options);

/// The checkout, its build, its manifests and the learner's state.
struct Context {
  fs::path repo_root;
  fs::path build_dir;
  workbook::Workbook book;
  fs::path state_file;
  workbook::State state;
  bool colour = false;
  bool json = false;
};

/// Loads the context. \throws UsageError for a broken manifest or state file.
Context load_context(const CommonOptions& options);

/// \throws vramlab::UsageError when ctx.build_dir holds no configured build (no
/// CMakeCache.txt): said before any progress line, so the error is the only line.
void require_configured_build(const Context& ctx);

/// Builds \p targets in the context's build dir (output to build/workbook/<log_name>.log).
/// Returns true on success; on failure fills \p error_tail with the end of the log.
bool build_targets(const Context& ctx, const std::vector<std::string>& targets,
                   const std::string& log_name, std::string& error_tail);

/// The test binary of a target: <build>/tests/bin/<target>.
fs::path test_binary(const Context& ctx, const std::string& target);

/// The outcome of checking one exercise.
struct CheckResult {
  const workbook::Exercise* exercise = nullptr;
  bool reference = false;  // ran the reference instead of the learner's code
  bool built = false;
  std::string build_errors;  // end of the build log when the build failed
  workbook::TestRun run;
  bool passed = false;
  bool not_implemented = false;  // the first failure is the stub's NOT IMPLEMENTED
};

/// Builds and runs one exercise's tests (the learner's code, or the reference).
CheckResult check_exercise(const Context& ctx, const workbook::Exercise& exercise, bool reference);

/// Prints a check result for humans (header, one line per test, first failure, next step).
void print_check(const Context& ctx, const CheckResult& result);

/// The check result as JSON.
nlohmann::json check_json(const CheckResult& result);

/// "lesson 01 [=====>    ] 33% 1/3 done" for the lesson of \p exercise.
std::string progress_line(const Context& ctx, const workbook::Lesson& lesson);

/// The lesson an exercise belongs to.
const workbook::Lesson& lesson_of(const Context& ctx, const workbook::Exercise& exercise);

/// The first exercise of the workbook that is not done ("" when all are).
std::string first_pending(const Context& ctx);

/// Records the result of checking the learner's code in the state (done or not).
void record_check(Context& ctx, const CheckResult& result);

/// Prints JSON to stdout.
void print_json(const nlohmann::json& value);

/// Adds `vramlab watch` (workbook_watch.cpp).
void add_watch_command(CLI::App& app, int& exit_code);
/// Adds `vramlab verify` (workbook_verify.cpp).
void add_verify_command(CLI::App& app, int& exit_code);

}  // namespace vramlab::cli::workbook_cli
