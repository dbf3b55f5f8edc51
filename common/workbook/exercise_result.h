/// \file
/// \brief What a lesson binary prints about its exercises beside its run: for each exercise,
/// whether the learner's function (or, by default, the reference) ran and agrees with what the
/// runtime computed or measured on the same inputs. Every lesson with exercises reports them the
/// same way, in text and in its `--json`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vramlab::workbook {

/// One exercise's line of a lesson's report.
struct ExerciseResult {
  std::string id;       ///< e.g. "04.1".
  bool ran = false;     ///< false when the function threw (e.g. not written yet).
  bool agrees = false;  ///< the result matches what the runtime computed or measured.
  std::string text;     ///< what it returned beside the runtime's number, or the error.
};

/// \param results one per exercise. \param heading the first line, without its newline (which
/// lesson, where its EXERCISES.md is). \return the heading and one indented line per exercise:
/// "  ID agrees: TEXT", "  ID DIFFERS from the runtime: TEXT" or "  ID not run: TEXT".
std::string render_exercise_results(const std::vector<ExerciseResult>& results,
                                    std::string_view heading);

/// \param results one per exercise. \return [{id, ran, agrees, text}].
nlohmann::json exercise_results_json(const std::vector<ExerciseResult>& results);

}  // namespace vramlab::workbook
