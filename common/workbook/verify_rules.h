/// \file
/// \brief The rules `vramlab verify` applies to every exercise (CI): the reference passes, the
/// stub fails every test with the NOT IMPLEMENTED message, every known-wrong variant is caught,
/// and the exercise has three hints, tests and doc snippets. Each rule returns the problems it
/// found; an empty list means the rule holds.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/workbook/gtest_report.h"
#include "common/workbook/manifest.h"

namespace vramlab::workbook {

/// The reference must complete, run at least one test, and pass every one (a skip is not a pass).
std::vector<std::string> reference_problems(const TestRun& run);

/// The stub must complete, run at least one test, and fail every test with a failure message
/// containing "NOT IMPLEMENTED YET: exercise <id>" (a crash or timeout is a problem).
/// \p run is of the learner-stub test binary.
std::vector<std::string> stub_problems(const TestRun& run, const std::string& exercise_id);

/// A known-wrong variant must fail the test meant to catch it: \p run is of its test binary
/// filtered to \p variant.caught_by, which must complete, run that test and fail it (a crash or
/// timeout is a problem: it would hide whether the test catches the mistake; a failure of some
/// other test would be caught for the wrong reason).
std::vector<std::string> wrong_variant_problems(const TestRun& run, const WrongVariant& variant);

/// A patch variant must still apply to its reference exactly (`patch --dry-run --fuzz=0`): one
/// that no longer applies is the sign that the reference moved under it. Runs GNU patch with its
/// output in \p work_dir. \return no problems for a whole-file variant.
std::vector<std::string> wrong_patch_problems(const Exercise& exercise, const WrongVariant& variant,
                                              const std::filesystem::path& repo_root,
                                              const std::filesystem::path& work_dir);

/// Static checks: the stub, reference, API header, tests and wrong variants exist, each variant
/// with its mistake and its test in its header; exactly three non-empty hints; at least one test
/// source; at least one snippet, each with its two `//! [name]` markers in its file.
std::vector<std::string> exercise_file_problems(const Exercise& exercise,
                                                const std::filesystem::path& repo_root);

/// \return how many `//! [name]` marker lines \p file has (2 for a well-formed snippet).
size_t snippet_marker_count(const std::filesystem::path& file, const std::string& name);

}  // namespace vramlab::workbook
