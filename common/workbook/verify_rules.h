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

/// A known-wrong variant must complete and fail at least one test (a crash or timeout is a
/// problem: it would hide whether the tests catch the mistake).
std::vector<std::string> wrong_variant_problems(const TestRun& run, const std::string& variant);

/// Static checks: the stub, reference, API header, tests and wrong variants exist; exactly three
/// non-empty hints; at least one test source; at least one snippet, each with its two
/// `//! [name]` markers in its file.
std::vector<std::string> exercise_file_problems(const Exercise& exercise,
                                                const std::filesystem::path& repo_root);

/// \return how many `//! [name]` marker lines \p file has (2 for a well-formed snippet).
size_t snippet_marker_count(const std::filesystem::path& file, const std::string& name);

}  // namespace vramlab::workbook
