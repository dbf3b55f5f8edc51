/// \file
/// \brief Running an exercise's GoogleTest binary and reading its results
/// (`--gtest_output=json:FILE`): one entry per test with its failure messages, and whether the
/// binary completed, crashed or timed out.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::workbook {

/// The outcome of one test.
enum class TestOutcome {
  kPassed,   ///< ran and passed.
  kFailed,   ///< ran and at least one assertion failed.
  kSkipped,  ///< GTEST_SKIP (never counts as a pass).
};

/// One test's result.
struct TestCaseResult {
  std::string suite;                           ///< the test suite, e.g. "BytesPerParam".
  std::string name;                            ///< the test, e.g. "MixedAdamWIsSixteenBytes".
  TestOutcome outcome = TestOutcome::kPassed;  ///< a skip never counts as a pass.
  std::vector<std::string> failures;           ///< the failure messages, in order.
  /// \return "suite.name".
  [[nodiscard]] std::string full_name() const { return suite + "." + name; }
};

/// How a test binary's run ended.
enum class RunStatus {
  kCompleted,  ///< it ran to the end and wrote its JSON results.
  kCrashed,    ///< it died (signal, abort, unexpected exit code) without results.
  kTimedOut,   ///< killed after the timeout.
  kNotBuilt,   ///< the binary does not exist or could not be started.
};

/// The results of one run of a test binary.
struct TestRun {
  RunStatus status = RunStatus::kNotBuilt;  ///< tests is empty unless kCompleted.
  std::string detail;                       ///< e.g. "killed by signal 11 (Segmentation fault)".
  std::vector<TestCaseResult> tests;        ///< per test, in the order run.
  std::string output_tail;                  ///< the end of its output (for crashes).
  double seconds = 0.0;                     ///< wall-clock time.
  /// Counts over tests, which holds only the tests that ran (filtered-out ones are left out).
  [[nodiscard]] size_t passed() const;
  /// Counts over tests, as passed().
  [[nodiscard]] size_t failed() const;
  /// Counts over tests, as passed(); a skip is neither a pass nor a failure.
  [[nodiscard]] size_t skipped() const;
  /// \return true when the run completed, ran at least one test, and every test passed.
  [[nodiscard]] bool all_passed() const;
  /// \return the first failed test, or nullptr.
  [[nodiscard]] const TestCaseResult* first_failure() const;
};

/// \return "completed", "crashed", "timed out" or "not built".
std::string_view run_status_name(RunStatus status);

/// Decodes GoogleTest's JSON report. Tests that did not run (filtered out, disabled) are left out.
/// \throws vramlab::UsageError when the text is not a GoogleTest JSON report.
std::vector<TestCaseResult> parse_gtest_json(std::string_view json_text);

/// Runs a test binary with `--gtest_filter=FILTER --gtest_output=json:WORK/NAME.json`, its output
/// in WORK/NAME.log, killed after \p timeout_seconds.
/// \p filter "*" runs all; \p work_dir is created. A missing binary gives kNotBuilt.
/// Two runs may go on at once in different threads if their binaries' names differ.
TestRun run_test_binary(const std::filesystem::path& binary, const std::string& filter,
                        const std::filesystem::path& work_dir, double timeout_seconds);

}  // namespace vramlab::workbook
