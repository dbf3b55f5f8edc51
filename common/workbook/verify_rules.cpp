// The rules of `vramlab verify` (see verify_rules.h).
#include "common/workbook/verify_rules.h"

#include <fstream>

#include "common/workbook/not_implemented.h"
#include "common/workbook/process.h"

namespace vramlab::workbook {

namespace fs = std::filesystem;

namespace {

// Problems common to every run: it must complete and run at least one test.
bool run_usable(const TestRun& run, const std::string& what, std::vector<std::string>& problems) {
  if (run.status != RunStatus::kCompleted) {
    problems.push_back(what + " " + std::string(run_status_name(run.status)) + ": " + run.detail);
    return false;
  }
  if (run.tests.empty()) {
    problems.push_back(what + " ran no tests (check the test filter)");
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> reference_problems(const TestRun& run) {
  std::vector<std::string> problems;
  if (!run_usable(run, "the reference's tests", problems)) return problems;
  for (const auto& test : run.tests) {
    if (test.outcome == TestOutcome::kFailed)
      problems.push_back("the reference fails " + test.full_name() + ": " +
                         (test.failures.empty() ? "" : test.failures.front()));
    else if (test.outcome == TestOutcome::kSkipped)
      problems.push_back("the reference skips " + test.full_name());
  }
  return problems;
}

std::vector<std::string> stub_problems(const TestRun& run, const std::string& exercise_id) {
  std::vector<std::string> problems;
  if (!run_usable(run, "the stub's tests", problems)) return problems;
  const std::string marker = std::string(kNotImplementedMarker) + exercise_id + " ";
  for (const auto& test : run.tests) {
    if (test.outcome != TestOutcome::kFailed) {
      problems.push_back("the stub " +
                         std::string(test.outcome == TestOutcome::kPassed ? "passes " : "skips ") +
                         test.full_name() + " (a stub must fail every test)");
      continue;
    }
    bool names_it = false;
    for (const auto& failure : test.failures)
      names_it = names_it || failure.find(marker) != std::string::npos;
    if (!names_it)
      problems.push_back("the stub fails " + test.full_name() +
                         " without the NOT IMPLEMENTED message for " + exercise_id + ": " +
                         test.failures.front());
  }
  return problems;
}

std::vector<std::string> wrong_variant_problems(const TestRun& run, const WrongVariant& variant) {
  std::vector<std::string> problems;
  const std::string what = "wrong variant '" + variant.name + "'";
  if (run.status != RunStatus::kCompleted) {
    problems.push_back(what + ": " + variant.caught_by + " " +
                       std::string(run_status_name(run.status)) + ": " + run.detail);
    return problems;
  }
  if (run.tests.empty()) {
    problems.push_back(what + ": its test " + variant.caught_by + " (Caught by: in " +
                       variant.file + ") is not among the exercise's tests");
    return problems;
  }
  for (const auto& test : run.tests) {
    if (test.outcome == TestOutcome::kPassed)
      problems.push_back(what + " passes " + test.full_name() +
                         ", the test meant to catch it: the mistake (" + variant.mistake +
                         ") goes uncaught there");
    else if (test.outcome == TestOutcome::kSkipped)
      problems.push_back(what + ": " + test.full_name() + " skips (a skip catches nothing)");
  }
  return problems;
}

std::vector<std::string> wrong_patch_problems(const Exercise& exercise, const WrongVariant& variant,
                                              const fs::path& repo_root, const fs::path& work_dir) {
  if (!variant.is_patch()) return {};
  fs::create_directories(work_dir);
  const fs::path log = work_dir / (exercise.target_stem() + "_" + variant.name + ".patch.log");
  const ProcessResult result =
      run_process({"patch", "--dry-run", "--silent", "--fuzz=0", "--reject-file=-", "--output",
                   (work_dir / (exercise.target_stem() + "_" + variant.name + ".cpp")).string(),
                   (repo_root / exercise.reference).string(), (repo_root / variant.file).string()},
                  log, 60.0);
  if (result.succeeded()) return {};
  if (!result.started)
    return {"GNU patch could not be run (Debian: apt-get install patch) to apply " + variant.file};
  return {variant.file + " no longer applies to " + exercise.reference +
          " (the reference moved under it: remake the variant against it):\n" +
          tail_of_file(log, 20)};
}

size_t snippet_marker_count(const fs::path& file, const std::string& name) {
  std::ifstream in(file);
  const std::string marker = "//! [" + name + "]";
  size_t count = 0;
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos && line.compare(start, std::string::npos, marker) == 0) ++count;
  }
  return count;
}

std::vector<std::string> exercise_file_problems(const Exercise& exercise,
                                                const fs::path& repo_root) {
  std::vector<std::string> problems;
  auto must_exist = [&](const std::string& path, const std::string& role) {
    if (path.empty() || !fs::is_regular_file(repo_root / path))
      problems.push_back(role + " '" + path + "' does not exist");
  };
  must_exist(exercise.stub, "the stub");
  must_exist(exercise.reference, "the reference");
  must_exist(exercise.api, "the API header");
  if (exercise.tests.empty()) problems.push_back("no test sources are listed");
  for (const auto& test : exercise.tests) must_exist(test, "the test source");
  for (const auto& wrong : exercise.wrong) {
    must_exist(wrong.file, "wrong variant '" + wrong.name + "'");
    if (!fs::is_regular_file(repo_root / wrong.file)) continue;
    if (wrong.mistake.empty())
      problems.push_back("wrong variant '" + wrong.name + "' has no \"Mistake:\" line in " +
                         wrong.file);
    if (wrong.caught_by.empty())
      problems.push_back("wrong variant '" + wrong.name + "' has no \"Caught by:\" line in " +
                         wrong.file);
  }
  must_exist(exercise.hints_file, "the hints file");
  if (exercise.hints.size() != 3)
    problems.push_back("has " + std::to_string(exercise.hints.size()) + " hints, 3 are required");
  for (size_t i = 0; i < exercise.hints.size(); ++i)
    if (exercise.hints[i].find_first_not_of(" \t\n") == std::string::npos)
      problems.push_back("hint " + std::to_string(i + 1) + " is empty");
  if (exercise.snippets.empty()) problems.push_back("no doc snippets are listed");
  for (const auto& snippet : exercise.snippets) {
    const size_t markers = snippet_marker_count(repo_root / snippet.file, snippet.name);
    if (markers != 2)
      problems.push_back("snippet '" + snippet.name + "' has " + std::to_string(markers) +
                         " '//! [" + snippet.name + "]' markers in " + snippet.file +
                         ", 2 are required");
  }
  return problems;
}

}  // namespace vramlab::workbook
