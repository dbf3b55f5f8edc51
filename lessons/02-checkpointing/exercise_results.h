/// \file
/// \brief Lesson 02's exercises beside the runtime: the learner's √N segmentation and its peak
/// (02.1) against the measured `sqrt` row, and the learner's plan under the lesson's budget (02.2)
/// against the runtime's own model of that plan. Compiled into the lesson binary only, which links
/// the references or, as `vramlab run 02 --mine`, the learner's code.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lessons/02-checkpointing/checkpoint_report.h"

namespace vramlab::lesson02 {

/// One exercise's line of the report.
struct ExerciseResult {
  std::string id;       ///< e.g. "02.1".
  bool ran = false;     ///< false when the function threw (e.g. not written yet).
  bool agrees = false;  ///< the result matches what the runtime measured or models.
  std::string text;     ///< what it returned beside the runtime's number, or the error.
};

/// Calls the exercise functions on the lesson's model and budget.
/// \param lesson the runs (its `sqrt` row and budget). \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

/// \param results from exercise_results(). \return the report's lines.
std::string render_exercises(const std::vector<ExerciseResult>& results);

/// \param results from exercise_results(). \return [{id, ran, agrees, text}].
nlohmann::json exercises_json(const std::vector<ExerciseResult>& results);

}  // namespace vramlab::lesson02
